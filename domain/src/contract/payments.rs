//! payment.completed, payment.failed and payment.refunded. A payment provider publishes them
//! with little more than the registration; the event service publishes them again with what
//! the payment did (`outcome`), whichever way it arrived.

use crate::events::payments::{Channel, PaymentOutcome};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A payment and, once the event service applied it, its outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Payment {
    /// The provider's id; the event's own id stands in when absent.
    #[serde(default)]
    pub payment_id: Option<String>,
    /// The registration paid for.
    pub registration_id: Uuid,
    /// Its event.
    #[serde(default)]
    pub event_id: Option<Uuid>,
    /// How much.
    #[serde(default)]
    pub amount_cents: Option<i64>,
    /// In what.
    #[serde(default)]
    pub currency: Option<String>,
    /// How it reached bilet.
    #[serde(default)]
    pub channel: Option<Channel>,
    /// What it did, as the event service decided.
    #[serde(default)]
    pub outcome: Option<PaymentOutcome>,
}
