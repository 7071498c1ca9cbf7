//! A provider's notification: authenticated by the provider (its signature, or by reading the
//! payment back), matched to the checkout bilet opened, and applied through
//! `storage::events::checkout::settle`, so a payment that succeeds reaches its registration by
//! the same rules as every other payment. A notification for a payment bilet did not open is
//! acknowledged and changes nothing (a provider account may serve more than bilet).

use crate::Payments;
use crate::provider::{NotificationError, Notified, PaymentState};
use chrono::{DateTime, Utc};
use domain::events::checkout::ProviderKind;
use domain::ids::TenantId;
use storage::events::checkout::{self, Settled, Settlement};
use storage::events::refunds::{self, Answer};

/// What a notification did.
#[derive(Debug)]
pub enum Applied {
    /// A payment settled its checkout (paid or declined), or changed nothing the second time.
    Payment(Settled),
    /// A refund's success was recorded.
    Refund,
    /// Nothing to do, and why.
    Ignored(String),
}

/// Why a notification was not taken.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The installation has no such provider.
    #[error("no provider `{0}` is configured")]
    UnknownProvider(String),
    /// Not authenticated, malformed, or unconfirmed.
    #[error(transparent)]
    Notification(#[from] NotificationError),
    /// Storing its effect failed.
    #[error(transparent)]
    Storage(#[from] storage::Error),
}

impl Payments {
    /// Takes a notification of `provider` (as named in its path) to the platform's account
    /// (`account` None) or an organization's own.
    pub async fn notify(
        &self,
        provider: &str,
        account: Option<TenantId>,
        signature: Option<&str>,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<Applied, NotifyError> {
        let kind = ProviderKind::parse(provider)
            .ok_or_else(|| NotifyError::UnknownProvider(provider.to_string()))?;
        let source = self
            .provider_for(kind, account)
            .await?
            .ok_or_else(|| NotifyError::UnknownProvider(provider.to_string()))?;
        // The signature's time is the provider's clock: compared with the wall clock.
        let notified = source
            .notification(signature, body, Utc::now().timestamp())
            .await?;
        match notified {
            Notified::Payment { payment_id, state } => {
                let found = checkout::by_payment(&self.db, kind, &payment_id)
                    .await?
                    // A payment of another account (told through this one's address) is not
                    // this account's to settle.
                    .filter(|c| c.account == account);
                let Some(found) = found else {
                    tracing::warn!(provider, payment = %payment_id, "notification for a payment bilet did not open at this account; ignored");
                    return Ok(Applied::Ignored("unknown payment".into()));
                };
                let settlement = match state {
                    PaymentState::Succeeded {
                        amount_cents,
                        currency,
                        charge_id,
                    } => Settlement::Paid {
                        amount_cents,
                        currency,
                        charge_id,
                    },
                    PaymentState::Canceled => Settlement::Declined,
                    PaymentState::Pending => return Ok(Applied::Ignored("payment pending".into())),
                };
                let settled = checkout::settle(&self.db, &found, &settlement, now).await?;
                tracing::info!(provider, payment = %payment_id, registration = %found.registration_id,
                    settled = ?settled, "payment notification applied");
                Ok(Applied::Payment(settled))
            }
            Notified::Refund {
                refund_id,
                succeeded,
            } => {
                let refund = refunds::by_provider_id(&self.db, kind, &refund_id)
                    .await?
                    .filter(|r| r.account == account);
                let Some(refund) = refund else {
                    return Ok(Applied::Ignored("unknown refund".into()));
                };
                if !succeeded {
                    return Ok(Applied::Ignored("refund not succeeded".into()));
                }
                refunds::answer(&self.db, refund.id, &Answer::Succeeded(refund_id), now).await?;
                Ok(Applied::Refund)
            }
            Notified::Ignored(why) => Ok(Applied::Ignored(why)),
        }
    }
}
