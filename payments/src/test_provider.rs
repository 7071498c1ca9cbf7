//! The `test` provider, for development and `make run`: bilet's own page shows the amount and
//! offers Pay or Decline, then delivers a notification signed the way a provider signs
//! (`X-Bilet-Signature: t=…,v1=…`, with a key derived from the service secret every process of
//! the installation shares) to the same notification path the real providers use. Refunds
//! succeed at once. Never built in production.

use crate::provider::{
    Created, NotificationError, Notified, PaymentRequest, PaymentState, Provider, ProviderError,
    RefundAnswer, RefundRequest,
};
use async_trait::async_trait;
use domain::events::checkout::ProviderKind;
use domain::events::payments::{signature_header, verify_signature};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// Where the test provider's payment pages live (under the events service's prefix).
pub const PAGE_PATH: &str = "/api/v1/payments/test";

/// Prefix of the test provider's payment ids.
pub const ID_PREFIX: &str = "test_";

/// The test provider of one installation.
pub struct TestProvider {
    key: Vec<u8>,
    public_url: String,
}

/// What the test provider tells of a payment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestNotification {
    /// The payment.
    pub payment_id: String,
    /// `succeeded` or `canceled`.
    pub status: String,
    /// What was paid, in the smallest unit.
    pub amount_cents: i64,
    /// In what.
    pub currency: String,
}

impl TestProvider {
    /// The test provider keyed from `service_secret`, its pages at `public_url`.
    pub fn new(service_secret: &[u8], public_url: &str) -> TestProvider {
        let key = Hmac::<Sha256>::new_from_slice(service_secret)
            .map(|mut mac| {
                mac.update(b"bilet test payments");
                mac.finalize().into_bytes().to_vec()
            })
            .unwrap_or_default();
        TestProvider {
            key,
            public_url: public_url.trim_end_matches('/').to_string(),
        }
    }

    /// The signature header a delivery of `body` at unix time `t` carries.
    pub fn sign(&self, t: i64, body: &[u8]) -> String {
        signature_header(&self.key, t, body)
    }
}

#[async_trait]
impl Provider for TestProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Test
    }

    async fn create(&self, request: &PaymentRequest) -> Result<Created, ProviderError> {
        let payment_id = format!("{ID_PREFIX}{}", request.idempotency_key);
        Ok(Created {
            url: format!("{}{PAGE_PATH}/{payment_id}", self.public_url),
            payment_id,
            charge_id: None,
        })
    }

    async fn cancel(&self, _payment_id: &str) -> Result<(), ProviderError> {
        Ok(())
    }

    async fn refund(&self, request: &RefundRequest) -> Result<RefundAnswer, ProviderError> {
        Ok(RefundAnswer::Succeeded(format!(
            "{ID_PREFIX}refund_{}",
            request.idempotency_key
        )))
    }

    async fn notification(
        &self,
        signature: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<Notified, NotificationError> {
        verify_signature(&self.key, signature, body, now)
            .map_err(|e| NotificationError::Signature(e.to_string()))?;
        let n: TestNotification = serde_json::from_slice(body)
            .map_err(|e| NotificationError::Malformed(e.to_string()))?;
        let state = match n.status.as_str() {
            "succeeded" => PaymentState::Succeeded {
                amount_cents: n.amount_cents,
                currency: n.currency,
                charge_id: None,
            },
            "canceled" => PaymentState::Canceled,
            other => return Err(NotificationError::Malformed(format!("status `{other}`"))),
        };
        Ok(Notified::Payment {
            payment_id: n.payment_id,
            state,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn only_its_own_signature_is_taken() {
        let provider = TestProvider::new(b"secret of this installation", "http://x");
        let body = serde_json::to_vec(&TestNotification {
            payment_id: "test_1".into(),
            status: "succeeded".into(),
            amount_cents: 100,
            currency: "RUB".into(),
        })
        .unwrap();
        let now = 1_800_000_000;
        let good = provider.sign(now, &body);
        assert!(matches!(
            provider.notification(Some(&good), &body, now).await,
            Ok(Notified::Payment { .. })
        ));
        let other = TestProvider::new(b"another installation", "http://x").sign(now, &body);
        assert!(matches!(
            provider.notification(Some(&other), &body, now).await,
            Err(NotificationError::Signature(_))
        ));
        assert!(matches!(
            provider.notification(Some(&good), &body, now + 600).await,
            Err(NotificationError::Signature(_)),
        ));
        assert!(matches!(
            provider.notification(None, &body, now).await,
            Err(NotificationError::Signature(_))
        ));
    }
}
