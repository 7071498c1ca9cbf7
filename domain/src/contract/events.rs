//! Payloads of the event service's events: events, registrations, check-ins, refunds and
//! waiting-list offers. Each registration event carries a summary of its event, so the
//! notification service can write its messages without asking.

use crate::events::lifecycle::EventStatus;
use crate::events::registrations::{CheckInMethod, RegistrationStatus};
use crate::events::validation::LocationType;
use crate::ids::{TenantId, UserId};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// An event as it is now: created, published, unpublished, cancelled, completed, reminded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventState {
    /// The event.
    pub event_id: Uuid,
    /// Its organization.
    pub tenant_id: TenantId,
    /// Who created it.
    pub organizer_id: UserId,
    /// The group of a private event.
    #[serde(default)]
    pub group_id: Option<Uuid>,
    /// Title.
    pub title: String,
    /// Readable address part.
    pub slug: String,
    /// Life-cycle status.
    pub status: EventStatus,
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// End.
    #[serde(default)]
    pub ends_at: Option<DateTime<Utc>>,
    /// IANA time zone.
    pub timezone: String,
    /// Kind of place.
    #[serde(default)]
    pub location_type: Option<LocationType>,
    /// Address.
    #[serde(default)]
    pub location_address: Option<String>,
    /// URL.
    #[serde(default)]
    pub location_url: Option<String>,
    /// Cover image file.
    #[serde(default)]
    pub cover_image_id: Option<Uuid>,
}

/// When and where an event was before it moved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Place {
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// End.
    #[serde(default)]
    pub ends_at: Option<DateTime<Utc>>,
    /// Kind of place.
    #[serde(default)]
    pub location_type: Option<LocationType>,
    /// Address.
    #[serde(default)]
    pub location_address: Option<String>,
    /// URL.
    #[serde(default)]
    pub location_url: Option<String>,
}

/// event.changed: the event now, and its time and place before.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventChanged {
    /// The event now.
    #[serde(flatten)]
    pub event: EventState,
    /// Its time and place before the change.
    pub previous: Place,
}

/// event.cover.changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoverChanged {
    /// The event.
    pub event_id: Uuid,
    /// The new cover, if any.
    #[serde(default)]
    pub cover_image_id: Option<Uuid>,
    /// The cover it replaced.
    #[serde(default)]
    pub previous_cover_image_id: Option<Uuid>,
}

/// event.deleted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventDeleted {
    /// The event.
    pub event_id: Uuid,
    /// Its cover, which it lets go.
    #[serde(default)]
    pub cover_image_id: Option<Uuid>,
}

/// What a message about a registration needs to say about its event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSummary {
    /// The event.
    pub event_id: Uuid,
    /// Title.
    pub title: String,
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// End.
    #[serde(default)]
    pub ends_at: Option<DateTime<Utc>>,
    /// IANA time zone; absent in announcements older than the zone.
    #[serde(default)]
    pub timezone: Option<String>,
    /// Address.
    #[serde(default)]
    pub location_address: Option<String>,
    /// URL.
    #[serde(default)]
    pub location_url: Option<String>,
    /// Readable address part.
    #[serde(default)]
    pub slug: String,
}

/// registration.created, registration.cancelled, reservation.expired: the registration after
/// the change, with its event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    /// The registration.
    pub registration_id: Uuid,
    /// Its event.
    pub event_id: Uuid,
    /// Its ticket type.
    pub ticket_type_id: Uuid,
    /// The participant.
    pub user_id: UserId,
    /// Where the ticket goes.
    #[serde(default)]
    pub email: Option<String>,
    /// First name on the ticket.
    #[serde(default)]
    pub first_name: String,
    /// Last name on the ticket.
    #[serde(default)]
    pub last_name: String,
    /// The door code.
    pub confirmation_code: String,
    /// Status after the change.
    pub status: RegistrationStatus,
    /// Price in cents.
    pub price_cents: i64,
    /// Price currency.
    pub currency: String,
    /// When an unpaid reservation runs out.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// Why it was cancelled (`CANCELLED_BY_USER`, `EVENT_CANCELLED`, …).
    #[serde(default)]
    pub cancellation_reason: Option<String>,
    /// Where the participant came from (a slug), counted by analytics.
    #[serde(default)]
    pub source: Option<String>,
    /// Its event.
    pub event: EventSummary,
}

/// registration.confirmed: a payment confirmed the registration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationConfirmed {
    /// The registration now.
    #[serde(flatten)]
    pub registration: Registration,
    /// The provider's payment id.
    #[serde(default)]
    pub payment_id: Option<String>,
    /// What was paid.
    #[serde(default)]
    pub amount_cents: Option<i64>,
}

/// checkin.completed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckinCompleted {
    /// The registration now.
    #[serde(flatten)]
    pub registration: Registration,
    /// Scanned or typed.
    pub method: CheckInMethod,
    /// The door staff.
    pub checked_in_by: UserId,
    /// When.
    pub checked_in_at: DateTime<Utc>,
}

/// refund.requested: money the participant paid must go back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefundRequested {
    /// The registration.
    pub registration_id: Uuid,
    /// Its event.
    pub event_id: Uuid,
    /// The participant.
    pub user_id: UserId,
    /// Their address.
    #[serde(default)]
    pub email: Option<String>,
    /// The payment to refund, when known.
    #[serde(default)]
    pub payment_id: Option<String>,
    /// How much.
    pub amount_cents: i64,
    /// In what.
    pub currency: String,
    /// Why (`EVENT_CANCELLED`, `NO_SEAT`, …).
    pub reason: String,
    /// Its event.
    pub event: EventSummary,
}

/// refund.succeeded: the provider returned a participant's money.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefundSucceeded {
    /// The refund.
    pub refund_id: Uuid,
    /// The registration.
    pub registration_id: Uuid,
    /// Its event.
    pub event_id: Uuid,
    /// The participant.
    pub user_id: UserId,
    /// Their address.
    #[serde(default)]
    pub email: Option<String>,
    /// How much went back.
    pub amount_cents: i64,
    /// In what.
    pub currency: String,
    /// The provider that returned it.
    pub provider: String,
    /// The provider's id of the refund.
    pub provider_refund_id: String,
    /// Its event.
    pub event: EventSummary,
}

/// waitlist.available: a seat is held for someone on the waiting list until `expires_at`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitlistOffer {
    /// The waiting-list entry.
    pub entry_id: Uuid,
    /// The event.
    pub event_id: Uuid,
    /// The ticket type.
    pub ticket_type_id: Uuid,
    /// Who it is for.
    pub user_id: UserId,
    /// The address given for the list.
    #[serde(default)]
    pub email: Option<String>,
    /// Until when the seat is held.
    #[serde(default)]
    pub expires_at: Option<DateTime<Utc>>,
    /// The event.
    pub event: EventSummary,
}

/// queue.joined, queue.admitted, queue.left: a visitor's place in an event's waiting room, as
/// it was taken, let in or left.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuePlace {
    /// The event.
    pub event_id: Uuid,
    /// The visitor.
    pub user_id: UserId,
    /// Came before the on-sale time (the pre-queue, drawn at random).
    pub early: bool,
    /// When the place was taken.
    pub joined_at: DateTime<Utc>,
    /// How long an admission lasts once its visitor is told, in minutes (queue.admitted).
    #[serde(default)]
    pub admission_minutes: Option<i32>,
    /// The event.
    pub event: EventSummary,
}
