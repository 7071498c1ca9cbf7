//! The payments worker of an events node: sends the refunds that are due and cancels the
//! provider payments of reservations that ended. A refund is marked SENT before the call and
//! carries its own id as the provider's idempotency key, so a process killed between the call
//! and the answer sends it again after `resend_after` and the provider answers with the refund
//! it already made: the money goes back once.

use crate::Payments;
use crate::provider::{ProviderError, RefundAnswer, RefundRequest};
use chrono::{DateTime, Utc};
use storage::events::checkout;
use storage::events::refunds::{self, Answer, Refund};

/// Refunds and cancellations taken per run.
const BATCH: i64 = 20;

/// What one run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    /// Refunds sent.
    pub refunds: usize,
    /// Provider payments cancelled.
    pub cancelled: usize,
}

impl Payments {
    /// Sends the refunds due at `now` and cancels what closed checkouts left open.
    pub async fn run_due(&self, now: DateTime<Utc>) -> storage::Result<Run> {
        let mut run = Run::default();
        for refund in refunds::claim_due(&self.db, now, BATCH).await? {
            let answer = self.send(&refund).await;
            let after = refunds::answer(&self.db, refund.id, &answer, now).await?;
            tracing::info!(refund = %refund.id, registration = %refund.registration_id,
                status = after.status.as_str(), sends = after.sends, "refund sent");
            run.refunds += 1;
        }
        for open in checkout::cancel_due(&self.db, BATCH).await? {
            let cancelled = match (&open.provider_payment_id, self.provider(open.provider)) {
                (Some(payment), Some(provider)) => provider.cancel(payment).await,
                // Never opened at the provider, or the provider is gone: nothing to cancel.
                _ => Ok(()),
            };
            match cancelled {
                Ok(()) => {
                    checkout::cancelled(&self.db, open.id, now).await?;
                    run.cancelled += 1;
                }
                Err(e) => {
                    tracing::warn!(checkout = %open.id, error = %e, "provider payment not cancelled yet");
                }
            }
        }
        Ok(run)
    }

    async fn send(&self, refund: &Refund) -> Answer {
        let (Some(kind), Some(payment_id)) = (refund.provider, &refund.provider_payment_id) else {
            return Answer::Refused(refunds::NOT_THROUGH_PROVIDER.into());
        };
        let provider = match self.provider_for(kind, refund.account).await {
            Ok(Some(provider)) => provider,
            Ok(None) => {
                return Answer::Unavailable(format!(
                    "the provider `{}` of this account is not configured",
                    kind.as_str()
                ));
            }
            Err(e) => return Answer::Unavailable(e.to_string()),
        };
        let request = RefundRequest {
            refund: refund.id,
            idempotency_key: refund.idempotency_key(),
            payment_id: payment_id.clone(),
            charge_id: refund.provider_charge_id.clone(),
            amount_cents: refund.amount_cents,
            currency: refund.currency.clone(),
        };
        match provider.refund(&request).await {
            Ok(RefundAnswer::Succeeded(id)) => Answer::Succeeded(id),
            Ok(RefundAnswer::Pending(id)) => Answer::Pending(id),
            Ok(RefundAnswer::Refused(why)) | Err(ProviderError::Refused(why)) => {
                Answer::Refused(why)
            }
            Err(ProviderError::Unavailable(why)) => Answer::Unavailable(why),
        }
    }
}
