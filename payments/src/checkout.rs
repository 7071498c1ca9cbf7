//! A participant pays: the open payment of their registration at its provider, created when
//! there is none. The checkout row (with its idempotency key) is written before the provider
//! is asked, so a provider that times out answers 503 and the retry asks again under the same
//! key: the provider returns the payment it made, never a second one.

use crate::Payments;
use crate::provider::{PaymentRequest, ProviderError};
use chrono::{DateTime, Utc};
use domain::error::Refusal;
use domain::events::checkout::{CheckoutStatus, choose_account};
use domain::events::refusals::EventRefusal;
use domain::ids::UserId;
use storage::events::checkout::{self, Checkout, Opened};
use uuid::Uuid;

impl Payments {
    /// The open payment of `user`'s registration `id`, created at the provider if needed.
    pub async fn check_out(
        &self,
        user: UserId,
        id: Uuid,
        now: DateTime<Utc>,
    ) -> storage::Result<Checkout> {
        let tenant = storage::events::payment_accounts::tenant_of_registration(&self.db, id)
            .await?
            .ok_or_else(Refusal::not_found)?;
        // Read once: which providers they cover, which one takes this payment, its receipts.
        let accounts = storage::events::payment_accounts::of_tenant(&self.db, tenant).await?;
        let (platform, own) = (self.configured(), Self::covered(&accounts));
        let chosen = self.settings.provider;
        let opening = checkout::open(
            &self.db,
            user,
            id,
            |currency| {
                choose_account(chosen, currency, platform, own)
                    .map(|(kind, is_own)| (kind, is_own.then_some(tenant)))
                    .map_err(Refusal::from)
            },
            now,
        )
        .await?;
        let current = opening.checkout;
        if current.status != CheckoutStatus::Creating {
            return Ok(current);
        }
        // The account that took the payment (a checkout opened earlier keeps its own).
        let own = current
            .account
            .and_then(|_| accounts.iter().find(|a| a.provider == current.provider));
        let provider = match current.account {
            Some(_) => self.own_provider(own),
            None => self.provider(current.provider),
        }
        .ok_or_else(|| Refusal::from(EventRefusal::PaymentsNotConfigured))?;
        let request = PaymentRequest {
            idempotency_key: current.idempotency_key.clone(),
            registration: current.registration_id,
            amount_cents: current.amount_cents,
            currency: current.currency.clone(),
            description: opening.order.description,
            return_url: format!("{}/me/tickets/{}", self.public_url, current.registration_id),
            email: opening.order.email,
            receipt: match current.account {
                Some(_) => own.is_some_and(|a| a.receipts),
                None => self.settings.yookassa_receipts,
            },
            expires_at: current.expires_at,
        };
        match provider.create(&request).await {
            Ok(created) => {
                let answer = Opened {
                    payment_id: created.payment_id,
                    payment_url: created.url,
                    charge_id: created.charge_id,
                };
                checkout::opened(&self.db, current.id, &answer, now).await
            }
            Err(ProviderError::Unavailable(why)) => {
                tracing::warn!(checkout = %current.id, provider = current.provider.as_str(), reason = %why,
                    "payment provider did not answer; the checkout waits for a retry");
                Err(Refusal::from(EventRefusal::PaymentProviderUnavailable).into())
            }
            Err(ProviderError::Refused(why)) => {
                tracing::warn!(checkout = %current.id, provider = current.provider.as_str(), reason = %why,
                    "payment provider refused the payment");
                checkout::declined(&self.db, current.id, now).await?;
                Err(Refusal::from(EventRefusal::PaymentProviderRefused).into())
            }
        }
    }
}
