//! The one trait every payment provider implements, and what passes through it. Amounts are
//! in the currency's smallest unit everywhere in bilet; each provider writes them its own way.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::events::checkout::ProviderKind;
use uuid::Uuid;

/// A payment to open at the provider.
#[derive(Clone, Debug)]
pub struct PaymentRequest {
    /// The key the provider deduplicates by: the same key returns the same payment.
    pub idempotency_key: String,
    /// The registration paid for (kept in the payment's metadata).
    pub registration: Uuid,
    /// Amount in the smallest unit.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: String,
    /// The event and ticket type, shown to the payer.
    pub description: String,
    /// Where the payer comes back to.
    pub return_url: String,
    /// The payer's email (receipts, Stripe's form).
    pub email: Option<String>,
    /// Send a 54-FZ receipt with the payment (YooKassa).
    pub receipt: bool,
    /// Until when the payment may be made (the reservation's deadline).
    pub expires_at: Option<DateTime<Utc>>,
}

/// The provider's payment, as opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// The provider's id of the payment.
    pub payment_id: String,
    /// Where the payer pays.
    pub url: String,
    /// What a refund names, when not the payment (Stripe's payment intent).
    pub charge_id: Option<String>,
}

/// A refund to make at the provider.
#[derive(Clone, Debug)]
pub struct RefundRequest {
    /// bilet's refund (kept in the provider's metadata).
    pub refund: Uuid,
    /// The provider's idempotency key: every resend of it makes no second refund.
    pub idempotency_key: String,
    /// The provider's payment refunded.
    pub payment_id: String,
    /// What the refund names when not the payment (Stripe's payment intent).
    pub charge_id: Option<String>,
    /// Amount in the smallest unit.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: String,
}

/// The provider's answer to a refund.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefundAnswer {
    /// Done, under this id.
    Succeeded(String),
    /// Accepted, to finish later, under this id.
    Pending(String),
    /// Refused for good, and why.
    Refused(String),
}

/// What a payment is, as the provider tells it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaymentState {
    /// The money arrived.
    Succeeded {
        /// Amount in the smallest unit.
        amount_cents: i64,
        /// ISO 4217 code, upper case.
        currency: String,
        /// What a refund will name, when not the payment.
        charge_id: Option<String>,
    },
    /// The payment was declined or cancelled.
    Canceled,
    /// Not decided yet.
    Pending,
}

/// An authenticated notification from a provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notified {
    /// About a payment.
    Payment {
        /// The provider's id of the payment.
        payment_id: String,
        /// What it is now (read back from the provider where notifications are not signed).
        state: PaymentState,
    },
    /// About a refund.
    Refund {
        /// The provider's id of the refund.
        refund_id: String,
        /// The money went back.
        succeeded: bool,
    },
    /// Nothing bilet acts on (another kind of event), and why.
    Ignored(String),
}

/// Why a provider call did not succeed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// No answer, or the provider's own failure: the same call may be made again.
    #[error("the provider did not answer: {0}")]
    Unavailable(String),
    /// The provider refused the call as made.
    #[error("the provider refused: {0}")]
    Refused(String),
}

/// Why a notification is not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotificationError {
    /// Its signature is missing, stale or wrong.
    #[error("signature: {0}")]
    Signature(String),
    /// It does not have the provider's shape.
    #[error("malformed: {0}")]
    Malformed(String),
    /// The provider could not be asked to confirm it: it may send it again.
    #[error("cannot confirm: {0}")]
    Unconfirmed(String),
}

/// A payment provider.
#[async_trait]
pub trait Provider: Send + Sync {
    /// Which one it is.
    fn kind(&self) -> ProviderKind;

    /// Opens a payment (or returns the one opened under the same key).
    async fn create(&self, request: &PaymentRequest) -> Result<Created, ProviderError>;

    /// Cancels an open payment whose reservation ended; providers that cannot (YooKassa's
    /// captured payments) do nothing: the payment then lapses at the provider, and a late
    /// success follows the late-payment rules.
    async fn cancel(&self, payment_id: &str) -> Result<(), ProviderError>;

    /// Returns money.
    async fn refund(&self, request: &RefundRequest) -> Result<RefundAnswer, ProviderError>;

    /// Authenticates and reads a notification: checks its signature, or reads the payment
    /// back from the provider when notifications are not signed. `now` is unix seconds.
    async fn notification(
        &self,
        signature: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<Notified, NotificationError>;
}

/// The header a provider's notifications are signed in, if they are (YooKassa's are not: they
/// are read back instead).
pub fn signature_header(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Test => Some("x-bilet-signature"),
        ProviderKind::Stripe => Some("stripe-signature"),
        ProviderKind::YooKassa => None,
    }
}

/// Reads an HTTP failure the usual way: no answer, a timeout, 429 or 5xx may be retried; any
/// other 4xx is the provider refusing.
pub(crate) fn classify(status: reqwest::StatusCode, body: &str) -> ProviderError {
    let text = format!(
        "{} {}",
        status.as_u16(),
        body.chars().take(300).collect::<String>()
    );
    if status.is_server_error() || status == reqwest::StatusCode::TOO_MANY_REQUESTS {
        ProviderError::Unavailable(text)
    } else {
        ProviderError::Refused(text)
    }
}

/// A transport failure (no connection, timeout, unreadable answer).
pub(crate) fn unavailable(error: reqwest::Error) -> ProviderError {
    ProviderError::Unavailable(error.without_url().to_string())
}
