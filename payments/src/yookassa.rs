//! YooKassa (API v3): payments captured at once and paid on YooKassa's page
//! (`confirmation.type = redirect`), refunds, and notifications. YooKassa does not sign its
//! notifications, so each one only names a payment or refund that is then read back
//! (`GET /payments/{id}`, `GET /refunds/{id}`) with the shop's own credentials: a forged
//! notification learns what YooKassa says, never more.

use crate::provider::{
    Created, NotificationError, Notified, PaymentRequest, PaymentState, Provider, ProviderError,
    RefundAnswer, RefundRequest, classify, unavailable,
};
use async_trait::async_trait;
use domain::config::{PaymentsConfig, Secret};
use domain::events::checkout::{ProviderKind, decimal_amount, parse_decimal_amount};
use serde::Deserialize;
use serde_json::{Value, json};

/// A YooKassa shop.
pub struct YooKassa {
    client: reqwest::Client,
    api: String,
    shop_id: String,
    secret_key: Secret,
    vat_code: u8,
}

impl YooKassa {
    /// The shop `shop_id` at the API and with the receipts' VAT code of `settings`.
    pub fn new(
        client: reqwest::Client,
        settings: &PaymentsConfig,
        shop_id: &str,
        secret_key: Secret,
    ) -> YooKassa {
        YooKassa {
            client,
            api: settings.yookassa_api_url.trim_end_matches('/').to_string(),
            shop_id: shop_id.trim().to_string(),
            secret_key,
            vat_code: settings.yookassa_vat_code,
        }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.api))
            .basic_auth(&self.shop_id, Some(self.secret_key.expose()))
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<Value, ProviderError> {
        let response = request.send().await.map_err(unavailable)?;
        let status = response.status();
        let text = response.text().await.map_err(unavailable)?;
        if !status.is_success() {
            return Err(classify(status, &text));
        }
        serde_json::from_str(&text)
            .map_err(|e| ProviderError::Unavailable(format!("unreadable answer: {e}")))
    }

    async fn payment(&self, id: &str) -> Result<Payment, ProviderError> {
        let value = self
            .send(self.request(
                reqwest::Method::GET,
                &format!("/payments/{}", path_part(id)),
            ))
            .await?;
        serde_json::from_value(value)
            .map_err(|e| ProviderError::Unavailable(format!("unreadable payment: {e}")))
    }
}

/// An id as one path segment: YooKassa's ids are UUIDs; anything else is refused before it
/// reaches a URL.
fn path_part(id: &str) -> String {
    id.chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect()
}

#[derive(Deserialize)]
struct Amount {
    value: String,
    currency: String,
}

#[derive(Deserialize)]
struct Confirmation {
    #[serde(default)]
    confirmation_url: Option<String>,
}

#[derive(Deserialize)]
struct Payment {
    id: String,
    status: String,
    amount: Amount,
    #[serde(default)]
    confirmation: Option<Confirmation>,
}

impl Payment {
    fn state(&self) -> Result<PaymentState, ProviderError> {
        Ok(match self.status.as_str() {
            "succeeded" => PaymentState::Succeeded {
                amount_cents: parse_decimal_amount(&self.amount.value).ok_or_else(|| {
                    ProviderError::Unavailable(format!("amount `{}`", self.amount.value))
                })?,
                currency: self.amount.currency.to_ascii_uppercase(),
                charge_id: None,
            },
            "canceled" => PaymentState::Canceled,
            _ => PaymentState::Pending,
        })
    }
}

#[derive(Deserialize)]
struct Refund {
    id: String,
    status: String,
    #[serde(default)]
    cancellation_details: Option<Value>,
}

#[derive(Deserialize)]
struct Notification {
    #[serde(rename = "type")]
    kind: String,
    event: String,
    object: NotificationObject,
}

#[derive(Deserialize)]
struct NotificationObject {
    id: String,
}

#[async_trait]
impl Provider for YooKassa {
    fn kind(&self) -> ProviderKind {
        ProviderKind::YooKassa
    }

    async fn create(&self, request: &PaymentRequest) -> Result<Created, ProviderError> {
        let amount = json!({
            "value": decimal_amount(request.amount_cents),
            "currency": request.currency,
        });
        let mut body = json!({
            "amount": amount,
            "capture": true,
            "confirmation": {"type": "redirect", "return_url": request.return_url},
            "description": request.description,
            "metadata": {
                "registration_id": request.registration.to_string(),
                "checkout": request.idempotency_key,
            },
        });
        if request.receipt {
            // 54-FZ: one item, the ticket, with the customer's address for the receipt.
            let Some(email) = request.email.as_deref() else {
                return Err(ProviderError::Refused(
                    "a receipt needs the customer's email".into(),
                ));
            };
            body["receipt"] = json!({
                "customer": {"email": email},
                "items": [{
                    "description": request.description,
                    "quantity": "1.00",
                    "amount": amount,
                    "vat_code": self.vat_code,
                    "payment_mode": "full_payment",
                    "payment_subject": "service",
                }],
            });
        }
        let value = self
            .send(
                self.request(reqwest::Method::POST, "/payments")
                    .header("Idempotence-Key", &request.idempotency_key)
                    .json(&body),
            )
            .await?;
        let payment: Payment = serde_json::from_value(value)
            .map_err(|e| ProviderError::Unavailable(format!("unreadable payment: {e}")))?;
        let url = payment
            .confirmation
            .and_then(|c| c.confirmation_url)
            .ok_or_else(|| ProviderError::Refused("the payment has no confirmation_url".into()))?;
        Ok(Created {
            payment_id: payment.id,
            url,
            charge_id: None,
        })
    }

    async fn cancel(&self, _payment_id: &str) -> Result<(), ProviderError> {
        // YooKassa cancels only payments waiting for capture; bilet's are captured at once, so
        // an unpaid one simply lapses there.
        Ok(())
    }

    async fn refund(&self, request: &RefundRequest) -> Result<RefundAnswer, ProviderError> {
        let body = json!({
            "payment_id": request.payment_id,
            "amount": {"value": decimal_amount(request.amount_cents), "currency": request.currency},
        });
        let value = self
            .send(
                self.request(reqwest::Method::POST, "/refunds")
                    .header("Idempotence-Key", &request.idempotency_key)
                    .json(&body),
            )
            .await?;
        let refund: Refund = serde_json::from_value(value)
            .map_err(|e| ProviderError::Unavailable(format!("unreadable refund: {e}")))?;
        Ok(match refund.status.as_str() {
            "succeeded" => RefundAnswer::Succeeded(refund.id),
            "canceled" => RefundAnswer::Refused(
                refund
                    .cancellation_details
                    .map(|d| d.to_string())
                    .unwrap_or_else(|| "canceled".into()),
            ),
            _ => RefundAnswer::Pending(refund.id),
        })
    }

    async fn notification(
        &self,
        _signature: Option<&str>,
        body: &[u8],
        _now: i64,
    ) -> Result<Notified, NotificationError> {
        let notification: Notification = serde_json::from_slice(body)
            .map_err(|e| NotificationError::Malformed(e.to_string()))?;
        if notification.kind != "notification" {
            return Err(NotificationError::Malformed(format!(
                "type `{}`",
                notification.kind
            )));
        }
        let id = notification.object.id;
        if path_part(&id) != id || id.is_empty() {
            return Err(NotificationError::Malformed("object.id".into()));
        }
        let unconfirmed = |e: ProviderError| match e {
            // YooKassa does not know it: not one of this shop's.
            ProviderError::Refused(why) => {
                NotificationError::Malformed(format!("unknown to YooKassa: {why}"))
            }
            ProviderError::Unavailable(why) => NotificationError::Unconfirmed(why),
        };
        match notification.event.as_str() {
            "payment.succeeded" | "payment.canceled" | "payment.waiting_for_capture" => {
                let payment = self.payment(&id).await.map_err(unconfirmed)?;
                let state = payment.state().map_err(unconfirmed)?;
                Ok(Notified::Payment {
                    payment_id: payment.id,
                    state,
                })
            }
            "refund.succeeded" => {
                let value = self
                    .send(self.request(reqwest::Method::GET, &format!("/refunds/{id}")))
                    .await
                    .map_err(unconfirmed)?;
                let refund: Refund = serde_json::from_value(value)
                    .map_err(|e| NotificationError::Unconfirmed(e.to_string()))?;
                Ok(Notified::Refund {
                    succeeded: refund.status == "succeeded",
                    refund_id: refund.id,
                })
            }
            other => Ok(Notified::Ignored(format!("event `{other}`"))),
        }
    }
}
