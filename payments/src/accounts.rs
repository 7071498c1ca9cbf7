//! An organization's own provider accounts: its YooKassa shop or Stripe account takes the
//! money of its events instead of the platform's. Keys are sealed before they are stored and
//! opened only to talk to the provider; no answer ever carries them.

use crate::Payments;
use crate::credentials::Unreadable;
use crate::provider::Provider;
use crate::stripe::Stripe;
use crate::yookassa::YooKassa;
use chrono::{DateTime, Utc};
use domain::config::Secret;
use domain::error::Refusal;
use domain::events::checkout::{Configured, ProviderKind};
use domain::events::refusals::EventRefusal;
use domain::ids::{TenantId, UserId};
use std::sync::Arc;
use storage::events::payment_accounts::{self, StoredAccount};

/// An account as an organizer gives it.
#[derive(Clone, Debug)]
pub struct AccountInput {
    /// YooKassa or Stripe.
    pub provider: ProviderKind,
    /// YooKassa's shop id.
    pub shop_id: String,
    /// The secret API key.
    pub secret_key: String,
    /// Stripe's webhook signing secret.
    pub webhook_secret: Option<String>,
    /// Send 54-FZ receipts (YooKassa).
    pub receipts: bool,
}

/// An account as it is shown: never its keys.
#[derive(Clone, Debug)]
pub struct AccountView {
    /// YooKassa or Stripe.
    pub provider: ProviderKind,
    /// YooKassa's shop id.
    pub shop_id: String,
    /// Send 54-FZ receipts.
    pub receipts: bool,
    /// Where to point the provider's notifications.
    pub notification_url: String,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl Payments {
    fn view(&self, a: &StoredAccount) -> AccountView {
        AccountView {
            provider: a.provider,
            shop_id: a.shop_id.clone(),
            receipts: a.receipts,
            notification_url: self.notification_url(a.provider, Some(a.tenant_id)),
            updated_at: a.updated_at,
        }
    }

    /// The address a provider's notifications go to: the platform's account's, or an
    /// organization's own.
    pub fn notification_url(&self, provider: ProviderKind, account: Option<TenantId>) -> String {
        let base = format!(
            "{}/api/v1/payments/providers/{}/notifications",
            self.public_url,
            provider.as_str()
        );
        match account {
            Some(tenant) => format!("{base}/{}", tenant.as_uuid()),
            None => base,
        }
    }

    /// Stores `tenant`'s account (replacing the one at the same provider).
    pub async fn save_account(
        &self,
        tenant: TenantId,
        user: UserId,
        input: &AccountInput,
        now: DateTime<Utc>,
    ) -> storage::Result<AccountView> {
        let sealer = self
            .sealer
            .as_ref()
            .ok_or_else(|| Refusal::from(EventRefusal::CredentialsKeyMissing))?;
        let stored = StoredAccount {
            tenant_id: tenant,
            provider: input.provider,
            shop_id: input.shop_id.clone(),
            secret_sealed: sealer.seal(tenant, input.provider, &input.secret_key),
            webhook_secret_sealed: input
                .webhook_secret
                .as_deref()
                .map(|w| sealer.seal(tenant, input.provider, w)),
            receipts: input.receipts,
            updated_at: now,
        };
        let saved = payment_accounts::put(&self.db, user, &stored).await?;
        Ok(self.view(&saved))
    }

    /// `tenant`'s accounts.
    pub async fn accounts(&self, tenant: TenantId) -> storage::Result<Vec<AccountView>> {
        let stored = payment_accounts::of_tenant(&self.db, tenant).await?;
        Ok(stored.iter().map(|a| self.view(a)).collect())
    }

    /// Removes `tenant`'s account at `provider`: its events are paid through the platform's
    /// again (payments already opened in its shop are still confirmed and refunded there while
    /// its keys last, so remove an account only once nothing is pending in it).
    pub async fn delete_account(
        &self,
        tenant: TenantId,
        user: UserId,
        provider: ProviderKind,
    ) -> storage::Result<()> {
        payment_accounts::delete(&self.db, tenant, user, provider).await
    }

    /// Which providers `accounts` (an organization's own) cover.
    pub(crate) fn covered(accounts: &[StoredAccount]) -> Configured {
        Configured {
            yookassa: accounts
                .iter()
                .any(|a| a.provider == ProviderKind::YooKassa),
            stripe: accounts.iter().any(|a| a.provider == ProviderKind::Stripe),
            test: false,
        }
    }

    /// The provider of `kind` for `account` (an organization's own, or the platform's when
    /// None); None when there is no such account.
    pub async fn provider_for(
        &self,
        kind: ProviderKind,
        account: Option<TenantId>,
    ) -> storage::Result<Option<Arc<dyn Provider>>> {
        let Some(tenant) = account else {
            return Ok(self.provider(kind));
        };
        let stored = payment_accounts::of_tenant(&self.db, tenant).await?;
        Ok(self.own_provider(stored.iter().find(|a| a.provider == kind)))
    }

    /// The provider an organization's stored account speaks to, its keys opened; None when
    /// there is no account or its keys do not open.
    pub(crate) fn own_provider(&self, found: Option<&StoredAccount>) -> Option<Arc<dyn Provider>> {
        let (found, sealer) = (found?, self.sealer.as_ref()?);
        let (tenant, kind) = (found.tenant_id, found.provider);
        let open = |sealed: &[u8]| -> Result<Secret, Unreadable> {
            sealer.open(tenant, kind, sealed).map(Secret::new)
        };
        let secret = match open(&found.secret_sealed) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(tenant = %tenant.as_uuid(), provider = kind.as_str(), error = %e, "organization's provider key unreadable");
                return None;
            }
        };
        let p = &self.settings;
        match kind {
            ProviderKind::YooKassa => Some(Arc::new(YooKassa::new(
                self.client.clone(),
                p,
                &found.shop_id,
                secret,
            ))),
            ProviderKind::Stripe => {
                let webhook = found
                    .webhook_secret_sealed
                    .as_deref()
                    .and_then(|w| open(w).ok());
                Some(Arc::new(Stripe::new(
                    self.client.clone(),
                    p,
                    secret,
                    webhook,
                )))
            }
            ProviderKind::Test => None,
        }
    }
}
