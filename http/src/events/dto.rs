//! Request and response bodies of the event service.

use chrono::{DateTime, Utc};
use domain::events::lifecycle::{EventStatus, ParticipantsVisibility};
use domain::events::validation::LocationType;
use serde::{Deserialize, Serialize};
use storage::events::catalog::Event;
use storage::events::ticket_types::TicketType;
use utoipa::ToSchema;
use uuid::Uuid;

/// A new event.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateEventRequest {
    /// Title, up to 255 characters.
    pub title: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Slug; generated from the title (transliterated) when absent.
    pub slug: Option<String>,
    /// Group for a private event.
    pub group_id: Option<Uuid>,
    /// CLOSED (default) or OPEN.
    pub participants_visibility: Option<ParticipantsVisibility>,
    /// Start, ISO 8601.
    pub starts_at: DateTime<Utc>,
    /// End, ISO 8601.
    pub ends_at: Option<DateTime<Utc>>,
    /// IANA time zone for display (default UTC).
    pub timezone: Option<String>,
    /// OFFLINE, ONLINE or HYBRID.
    pub location_type: Option<LocationType>,
    /// Address.
    pub location_address: Option<String>,
    /// URL.
    pub location_url: Option<String>,
    /// Cover image (media file id).
    pub cover_image_id: Option<Uuid>,
    /// Settings object.
    #[schema(value_type = Option<Object>)]
    pub settings: Option<serde_json::Value>,
}

/// Changes to an event; absent fields stay, null clears an optional field.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateEventRequest {
    /// Title.
    pub title: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Group (null makes the event public).
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub group_id: Option<Option<Uuid>>,
    /// Participant visibility.
    pub participants_visibility: Option<ParticipantsVisibility>,
    /// Start.
    pub starts_at: Option<DateTime<Utc>>,
    /// End.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub ends_at: Option<Option<DateTime<Utc>>>,
    /// Time zone.
    pub timezone: Option<String>,
    /// Kind of place.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<LocationType>)]
    pub location_type: Option<Option<LocationType>>,
    /// Address.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub location_address: Option<Option<String>>,
    /// URL.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<String>)]
    pub location_url: Option<Option<String>>,
    /// Cover image.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub cover_image_id: Option<Option<Uuid>>,
    /// Settings (replaces the current object).
    #[schema(value_type = Option<Object>)]
    pub settings: Option<serde_json::Value>,
}

/// An event.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventDto {
    /// Id.
    pub id: Uuid,
    /// Organization.
    pub tenant_id: Uuid,
    /// Creator.
    pub organizer_id: Uuid,
    /// Group of a private event.
    pub group_id: Option<Uuid>,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Slug.
    pub slug: String,
    /// Status.
    pub status: EventStatus,
    /// Participant visibility.
    pub participants_visibility: ParticipantsVisibility,
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// End.
    pub ends_at: Option<DateTime<Utc>>,
    /// Time zone.
    pub timezone: String,
    /// Kind of place.
    pub location_type: Option<LocationType>,
    /// Address.
    pub location_address: Option<String>,
    /// URL.
    pub location_url: Option<String>,
    /// Cover image.
    pub cover_image_id: Option<Uuid>,
    /// Settings.
    #[schema(value_type = Object)]
    pub settings: serde_json::Value,
    /// First publication.
    pub published_at: Option<DateTime<Utc>>,
    /// Creation.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<Event> for EventDto {
    fn from(e: Event) -> Self {
        EventDto {
            id: e.id,
            tenant_id: e.tenant_id.as_uuid(),
            organizer_id: e.organizer_id.as_uuid(),
            group_id: e.group_id,
            title: e.title,
            description: e.description,
            slug: e.slug,
            status: e.status,
            participants_visibility: e.participants_visibility,
            starts_at: e.starts_at,
            ends_at: e.ends_at,
            timezone: e.timezone,
            location_type: e.location_type,
            location_address: e.location_address,
            location_url: e.location_url,
            cover_image_id: e.cover_image_id,
            settings: e.settings,
            published_at: e.published_at,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

/// A ticket type to create or the full replacement of one.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateTicketTypeRequest {
    /// Name.
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: String,
    /// Price in the smallest currency unit (0: free).
    #[serde(default)]
    pub price_cents: i64,
    /// ISO 4217 code (default RUB).
    pub currency: Option<String>,
    /// Seats.
    pub quantity: i32,
    /// Minutes a paid reservation is held; none: it waits for payment without a timer.
    pub reservation_minutes: Option<i32>,
    /// Share paid upfront, 0–100 (default 100).
    pub prepayment_percent: Option<i32>,
    /// Sales open.
    pub sales_start: Option<DateTime<Utc>>,
    /// Sales close.
    pub sales_end: Option<DateTime<Utc>>,
    /// Position in lists.
    #[serde(default)]
    pub sort_order: i32,
    /// On sale (default true).
    pub is_active: Option<bool>,
}

/// A ticket type.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TicketTypeDto {
    /// Id.
    pub id: Uuid,
    /// Event.
    pub event_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Price in the smallest unit.
    pub price_cents: i64,
    /// Currency.
    pub currency: String,
    /// Seats.
    pub quantity: i32,
    /// Sold.
    pub sold_count: i32,
    /// Held by reservations.
    pub reserved_count: i32,
    /// Free seats.
    pub available: i32,
    /// Reservation minutes.
    pub reservation_minutes: Option<i32>,
    /// Prepayment share.
    pub prepayment_percent: i32,
    /// Sales open.
    pub sales_start: Option<DateTime<Utc>>,
    /// Sales close.
    pub sales_end: Option<DateTime<Utc>>,
    /// Position.
    pub sort_order: i32,
    /// On sale.
    pub is_active: bool,
    /// Creation.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<TicketType> for TicketTypeDto {
    fn from(t: TicketType) -> Self {
        TicketTypeDto {
            id: t.id,
            event_id: t.event_id,
            name: t.name,
            description: t.description,
            price_cents: t.price_cents,
            currency: t.currency,
            available: (t.quantity - t.sold_count - t.reserved_count).max(0),
            quantity: t.quantity,
            sold_count: t.sold_count,
            reserved_count: t.reserved_count,
            reservation_minutes: t.reservation_minutes,
            prepayment_percent: t.prepayment_percent,
            sales_start: t.sales_start,
            sales_end: t.sales_end,
            sort_order: t.sort_order,
            is_active: t.is_active,
            created_at: t.created_at,
            updated_at: t.updated_at,
        }
    }
}

/// A request for a seat.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateRegistrationRequest {
    /// The ticket type.
    pub ticket_type_id: Uuid,
    /// Contact email.
    pub email: Option<String>,
    /// First name; the profile's when empty or absent.
    #[serde(default)]
    pub first_name: String,
    /// Last name; the profile's when empty or absent.
    #[serde(default)]
    pub last_name: String,
    /// Answers to the organizer's questions.
    #[schema(value_type = Option<Object>)]
    pub custom_fields: Option<serde_json::Value>,
    /// Where the person came from (a short slug such as `vk`), counted by the dashboard.
    pub source: Option<String>,
}

/// A registration. Participants looking at an OPEN event's list see names and ticket types
/// only.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationDto {
    /// Id.
    pub id: Uuid,
    /// Event.
    pub event_id: Uuid,
    /// Ticket type.
    pub ticket_type_id: Uuid,
    /// Participant.
    pub user_id: Uuid,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Status.
    pub status: domain::events::registrations::RegistrationStatus,
    /// Email.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Code for the door.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confirmation_code: Option<String>,
    /// Answers to the organizer's questions.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub custom_fields: Option<serde_json::Value>,
    /// Price.
    pub price_cents: i64,
    /// Currency.
    pub currency: String,
    /// When a reservation runs out.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was cancelled.
    pub cancelled_at: Option<DateTime<Utc>>,
    /// Why.
    pub cancellation_reason: Option<String>,
    /// Creation.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Where the person came from, if the client said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

impl RegistrationDto {
    /// Everything, for the participant and organizers.
    pub fn full(r: storage::events::registrations::Registration) -> Self {
        RegistrationDto {
            id: r.id,
            event_id: r.event_id,
            ticket_type_id: r.ticket_type_id,
            user_id: r.user_id.as_uuid(),
            first_name: r.first_name,
            last_name: r.last_name,
            status: r.status,
            email: r.email,
            confirmation_code: Some(r.confirmation_code),
            custom_fields: Some(r.custom_fields),
            price_cents: r.price_cents,
            currency: r.currency,
            expires_at: r.expires_at,
            cancelled_at: r.cancelled_at,
            cancellation_reason: r.cancellation_reason,
            created_at: r.created_at,
            updated_at: r.updated_at,
            source: r.source,
        }
    }

    /// What other participants of an OPEN event may see.
    pub fn public(r: storage::events::registrations::Registration) -> Self {
        RegistrationDto {
            email: None,
            confirmation_code: None,
            custom_fields: None,
            source: None,
            ..Self::full(r)
        }
    }
}

/// A check-in by registration id.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckInRequest {
    /// QR_CODE (default) or MANUAL.
    pub method: Option<domain::events::registrations::CheckInMethod>,
}

/// A check-in by the code the participant shows.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CodeCheckInRequest {
    /// The 8-character confirmation code.
    pub confirmation_code: String,
    /// MANUAL (default) or QR_CODE.
    pub method: Option<domain::events::registrations::CheckInMethod>,
}

/// A waiting-list entry.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitlistEntryDto {
    /// Id.
    pub id: Uuid,
    /// Event.
    pub event_id: Uuid,
    /// Ticket type.
    pub ticket_type_id: Uuid,
    /// WAITING, NOTIFIED, CONVERTED, EXPIRED or LEFT.
    pub status: String,
    /// When a seat was offered.
    pub notified_at: Option<DateTime<Utc>>,
    /// Until when it is held.
    pub expires_at: Option<DateTime<Utc>>,
    /// Joined at.
    pub created_at: DateTime<Utc>,
}

impl From<storage::events::waitlist::Entry> for WaitlistEntryDto {
    fn from(e: storage::events::waitlist::Entry) -> Self {
        WaitlistEntryDto {
            id: e.id,
            event_id: e.event_id,
            ticket_type_id: e.ticket_type_id,
            status: e.status,
            notified_at: e.notified_at,
            expires_at: e.expires_at,
            created_at: e.created_at,
        }
    }
}
