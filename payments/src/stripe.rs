//! Stripe Checkout: a Checkout Session per payment (Stripe's hosted page), refunds of its
//! payment intent, and webhook events verified by their `Stripe-Signature` (HMAC-SHA256 of
//! `"<t>.<body>"` with the endpoint's signing secret, within five minutes).

use crate::provider::{
    Created, NotificationError, Notified, PaymentRequest, PaymentState, Provider, ProviderError,
    RefundAnswer, RefundRequest, classify, unavailable,
};
use async_trait::async_trait;
use chrono::{Duration, Utc};
use domain::config::{PaymentsConfig, Secret};
use domain::events::checkout::ProviderKind;
use domain::events::payments::verify_signature;
use serde::Deserialize;
use serde_json::Value;

/// A Stripe account.
pub struct Stripe {
    client: reqwest::Client,
    api: String,
    secret_key: Secret,
    webhook_secret: Option<Secret>,
}

/// Stripe keeps a Checkout Session open at least this long after it is created.
const SHORTEST_SESSION: Duration = Duration::minutes(31);
/// … and at most this long.
const LONGEST_SESSION: Duration = Duration::hours(23);

impl Stripe {
    /// The account of `secret_key` at the API of `settings`; its notifications are checked
    /// with `webhook_secret` (without it they are refused).
    pub fn new(
        client: reqwest::Client,
        settings: &PaymentsConfig,
        secret_key: Secret,
        webhook_secret: Option<Secret>,
    ) -> Stripe {
        Stripe {
            client,
            api: settings.stripe_api_url.trim_end_matches('/').to_string(),
            secret_key,
            webhook_secret,
        }
    }

    async fn post(
        &self,
        path: &str,
        idempotency_key: Option<&str>,
        form: &[(String, String)],
    ) -> Result<Value, ProviderError> {
        let mut request = self
            .client
            .post(format!("{}{path}", self.api))
            .bearer_auth(self.secret_key.expose())
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(
                serde_urlencoded::to_string(form)
                    .map_err(|e| ProviderError::Refused(e.to_string()))?,
            );
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let response = request.send().await.map_err(unavailable)?;
        let status = response.status();
        let text = response.text().await.map_err(unavailable)?;
        if !status.is_success() {
            return Err(classify(status, &text));
        }
        serde_json::from_str(&text)
            .map_err(|e| ProviderError::Unavailable(format!("unreadable answer: {e}")))
    }
}

fn field(name: &str, value: impl ToString) -> (String, String) {
    (name.to_string(), value.to_string())
}

#[derive(Deserialize)]
struct Session {
    id: String,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    payment_intent: Option<String>,
    #[serde(default)]
    payment_status: Option<String>,
    #[serde(default)]
    amount_total: Option<i64>,
    #[serde(default)]
    currency: Option<String>,
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    data: EventData,
}

#[derive(Deserialize)]
struct EventData {
    object: Value,
}

#[derive(Deserialize)]
struct Refund {
    id: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    failure_reason: Option<String>,
}

#[async_trait]
impl Provider for Stripe {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Stripe
    }

    async fn create(&self, request: &PaymentRequest) -> Result<Created, ProviderError> {
        let now = Utc::now();
        // Stripe's window is 30 minutes to 24 hours; a shorter reservation closes the session
        // itself when it ends (`cancel`).
        let expires = request
            .expires_at
            .unwrap_or(now + LONGEST_SESSION)
            .clamp(now + SHORTEST_SESSION, now + LONGEST_SESSION);
        let mut form = vec![
            field("mode", "payment"),
            field("client_reference_id", request.registration),
            field("success_url", &request.return_url),
            field("cancel_url", &request.return_url),
            field("expires_at", expires.timestamp()),
            field("line_items[0][quantity]", 1),
            field(
                "line_items[0][price_data][currency]",
                request.currency.to_ascii_lowercase(),
            ),
            field(
                "line_items[0][price_data][unit_amount]",
                request.amount_cents,
            ),
            field(
                "line_items[0][price_data][product_data][name]",
                &request.description,
            ),
            field("metadata[registration_id]", request.registration),
            field("metadata[checkout]", &request.idempotency_key),
        ];
        if let Some(email) = &request.email {
            form.push(field("customer_email", email));
        }
        let value = self
            .post(
                "/v1/checkout/sessions",
                Some(&request.idempotency_key),
                &form,
            )
            .await?;
        let session: Session = serde_json::from_value(value)
            .map_err(|e| ProviderError::Unavailable(format!("unreadable session: {e}")))?;
        let url = session
            .url
            .ok_or_else(|| ProviderError::Refused("the session has no url".into()))?;
        Ok(Created {
            payment_id: session.id,
            url,
            charge_id: session.payment_intent,
        })
    }

    async fn cancel(&self, payment_id: &str) -> Result<(), ProviderError> {
        let id: String = payment_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        match self
            .post(&format!("/v1/checkout/sessions/{id}/expire"), None, &[])
            .await
        {
            // Already complete or expired: nothing left open.
            Ok(_) | Err(ProviderError::Refused(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn refund(&self, request: &RefundRequest) -> Result<RefundAnswer, ProviderError> {
        let Some(intent) = &request.charge_id else {
            return Ok(RefundAnswer::Refused(
                "the session has no payment intent to refund".into(),
            ));
        };
        let form = vec![
            field("payment_intent", intent),
            field("amount", request.amount_cents),
            field("metadata[refund_id]", request.refund),
        ];
        let value = self
            .post("/v1/refunds", Some(&request.idempotency_key), &form)
            .await?;
        let refund: Refund = serde_json::from_value(value)
            .map_err(|e| ProviderError::Unavailable(format!("unreadable refund: {e}")))?;
        Ok(match refund.status.as_deref() {
            Some("succeeded") => RefundAnswer::Succeeded(refund.id),
            Some("failed") | Some("canceled") => {
                RefundAnswer::Refused(refund.failure_reason.unwrap_or_else(|| "failed".into()))
            }
            _ => RefundAnswer::Pending(refund.id),
        })
    }

    async fn notification(
        &self,
        signature: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<Notified, NotificationError> {
        let Some(secret) = &self.webhook_secret else {
            return Err(NotificationError::Signature(
                "no webhook signing secret is configured".into(),
            ));
        };
        verify_signature(secret.expose().as_bytes(), signature, body, now)
            .map_err(|e| NotificationError::Signature(e.to_string()))?;
        let event: Event = serde_json::from_slice(body)
            .map_err(|e| NotificationError::Malformed(e.to_string()))?;
        let object = event.data.object;
        let session = || -> Result<Session, NotificationError> {
            serde_json::from_value(object.clone())
                .map_err(|e| NotificationError::Malformed(format!("session: {e}")))
        };
        match event.kind.as_str() {
            "checkout.session.completed" | "checkout.session.async_payment_succeeded" => {
                let session = session()?;
                let state = if session.payment_status.as_deref() == Some("paid") {
                    PaymentState::Succeeded {
                        amount_cents: session
                            .amount_total
                            .ok_or_else(|| NotificationError::Malformed("amount_total".into()))?,
                        currency: session
                            .currency
                            .ok_or_else(|| NotificationError::Malformed("currency".into()))?
                            .to_ascii_uppercase(),
                        charge_id: session.payment_intent,
                    }
                } else {
                    PaymentState::Pending
                };
                Ok(Notified::Payment {
                    payment_id: session.id,
                    state,
                })
            }
            "checkout.session.expired" | "checkout.session.async_payment_failed" => {
                Ok(Notified::Payment {
                    payment_id: session()?.id,
                    state: PaymentState::Canceled,
                })
            }
            "refund.updated" | "refund.created" => {
                let refund: Refund = serde_json::from_value(object)
                    .map_err(|e| NotificationError::Malformed(format!("refund: {e}")))?;
                Ok(Notified::Refund {
                    succeeded: refund.status.as_deref() == Some("succeeded"),
                    refund_id: refund.id,
                })
            }
            other => Ok(Notified::Ignored(format!("event `{other}`"))),
        }
    }
}
