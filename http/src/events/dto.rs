//! Request and response bodies of the event service.

use chrono::{DateTime, Utc};
use domain::events::lifecycle::{EventStatus, ParticipantsVisibility};
use domain::events::offer::{self, Availability};
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
    /// Title: 1 to 255 characters once surrounding whitespace is trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub title: String,
    /// Description: at most 20000 characters, no NUL.
    #[serde(default)]
    #[schema(max_length = 20000, pattern = r"^[^\x00]*$")]
    pub description: String,
    /// Slug: 3 to 80 lower-case Latin letters, digits and hyphens, not starting or ending with a
    /// hyphen; generated from the title (transliterated) when absent.
    #[schema(
        min_length = 3,
        max_length = 80,
        pattern = r"^[a-z0-9][a-z0-9-]*[a-z0-9]$"
    )]
    pub slug: Option<String>,
    /// Group for a private event.
    pub group_id: Option<Uuid>,
    /// CLOSED (default) or OPEN.
    pub participants_visibility: Option<ParticipantsVisibility>,
    /// Start, RFC 3339, not before 2000-01-01T00:00:00Z (the pattern also leaves out
    /// 2000-01-01 written with a positive UTC offset).
    #[schema(
        pattern = r"^(?!2000-01-01[Tt][0-9:.]*\+(?!00:00$))[2-9][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
    )]
    pub starts_at: DateTime<Utc>,
    /// End, RFC 3339; after the start.
    pub ends_at: Option<DateTime<Utc>>,
    /// Time zone for display (default UTC): a name of the IANA tz database, such as
    /// `Europe/Moscow` or `UTC`, case as written there. The list is not enumerated here; the
    /// pattern and length only narrow it, and another name is refused (400).
    #[schema(max_length = 64, pattern = r"^[A-Za-z0-9/_+-]+$")]
    pub timezone: Option<String>,
    /// OFFLINE, ONLINE or HYBRID.
    pub location_type: Option<LocationType>,
    /// Address: at most 500 characters, no NUL.
    #[schema(max_length = 500, pattern = r"^[^\x00]*$")]
    pub location_address: Option<String>,
    /// URL: `http://` or `https://` (lower case), no whitespace, at most 500 characters.
    #[schema(
        max_length = 500,
        pattern = r"^https?://[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub location_url: Option<String>,
    /// Cover image (media file id).
    pub cover_image_id: Option<Uuid>,
    /// Settings: an object of at most 64 KB as JSON, no NUL in keys or strings, numbers
    /// within ±9007199254740991.
    #[schema(value_type = Option<Object>)]
    pub settings: Option<serde_json::Value>,
}

/// Changes to an event; absent fields stay, null clears an optional field.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateEventRequest {
    /// Title: 1 to 255 characters once surrounding whitespace is trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub title: Option<String>,
    /// Description: at most 20000 characters, no NUL.
    #[schema(max_length = 20000, pattern = r"^[^\x00]*$")]
    pub description: Option<String>,
    /// Group (null makes the event public).
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub group_id: Option<Option<Uuid>>,
    /// Participant visibility.
    pub participants_visibility: Option<ParticipantsVisibility>,
    /// Start, RFC 3339, not before 2000-01-01T00:00:00Z (the pattern also leaves out
    /// 2000-01-01 written with a positive UTC offset).
    #[schema(
        pattern = r"^(?!2000-01-01[Tt][0-9:.]*\+(?!00:00$))[2-9][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
    )]
    pub starts_at: Option<DateTime<Utc>>,
    /// End; after the start.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub ends_at: Option<Option<DateTime<Utc>>>,
    /// Time zone: a name of the IANA tz database, such as `Europe/Moscow` or `UTC`. The list
    /// is not enumerated here; the pattern and length only narrow it, and another name is
    /// refused (400).
    #[schema(max_length = 64, pattern = r"^[A-Za-z0-9/_+-]+$")]
    pub timezone: Option<String>,
    /// Kind of place.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<LocationType>)]
    pub location_type: Option<Option<LocationType>>,
    /// Address: at most 500 characters, no NUL.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<String>, max_length = 500, pattern = r"^[^\x00]*$")]
    pub location_address: Option<Option<String>>,
    /// URL: `http://` or `https://` (lower case), no whitespace, at most 500 characters.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<String>, max_length = 500, pattern = r"^https?://[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$")]
    pub location_url: Option<Option<String>>,
    /// Cover image.
    #[serde(default, deserialize_with = "crate::extract::nullable")]
    #[schema(value_type = Option<Uuid>)]
    pub cover_image_id: Option<Option<Uuid>>,
    /// Settings (replaces the current object): an object of at most 64 KB as JSON, no NUL in
    /// keys or strings, numbers within ±9007199254740991.
    #[schema(value_type = Option<Object>)]
    pub settings: Option<serde_json::Value>,
}

/// What a copy of an event changes; everything else is the source's.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CopyEventRequest {
    /// The copy's title (default: the source's): 1 to 255 characters once trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub title: Option<String>,
    /// The copy's start (default: the source's), not before 2000-01-01T00:00:00Z; its end and
    /// every ticket type's sales window move with it.
    #[schema(
        pattern = r"^(?!2000-01-01[Tt][0-9:.]*\+(?!00:00$))[2-9][0-9]{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])[Tt](?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"
    )]
    pub starts_at: Option<DateTime<Utc>>,
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
    /// What it offers, in lists only (absent when nothing is on offer): for the catalogue's
    /// Its waiting room is open: a seat is had through the queue
    /// (`/api/v1/events/{id}/queue`), with an admission.
    pub waiting_room: bool,
    /// cards.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offer: Option<OfferDto>,
}

/// The ticket types an event has on offer (active, sales not ended), summed up.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OfferDto {
    /// The lowest price, in the smallest unit of `currency` (0: free).
    pub lowest_price_cents: i64,
    /// ISO 4217 code of the lowest price.
    pub currency: String,
    /// Seats neither sold nor held.
    pub seats_left: i64,
    /// AVAILABLE, FEW_LEFT (at most 5 seats or a tenth of them) or SOLD_OUT.
    pub availability: Availability,
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
            waiting_room: e.waiting_room,
            offer: e.offer.map(|o| OfferDto {
                availability: offer::availability(o.seats_left, o.seats_total),
                lowest_price_cents: o.lowest_price_cents,
                currency: o.currency,
                seats_left: o.seats_left,
            }),
        }
    }
}

/// A ticket type to create or the full replacement of one.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateTicketTypeRequest {
    /// Name: 1 to 255 characters once surrounding whitespace is trimmed, no NUL.
    #[schema(
        min_length = 1,
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000](?:[^\x00]{0,253}[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000])?[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
    pub name: String,
    /// Description: at most 5000 characters, no NUL.
    #[serde(default)]
    #[schema(max_length = 5000, pattern = r"^[^\x00]*$")]
    pub description: String,
    /// Price in the smallest currency unit (0: free), at most 10^10.
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10_000_000_000i64)]
    pub price_cents: i64,
    /// ISO 4217 code (default RUB).
    #[schema(schema_with = currency_schema)]
    pub currency: Option<String>,
    /// Seats, 0 to 1000000 (never below the seats sold and reserved: 422).
    #[schema(minimum = 0, maximum = 1_000_000)]
    pub quantity: i32,
    /// Minutes a paid reservation is held, 1 to 10080 (a week); none: it waits for payment
    /// without a timer.
    #[schema(minimum = 1, maximum = 10_080)]
    pub reservation_minutes: Option<i32>,
    /// Share paid upfront, 0–100 (default 100).
    #[schema(minimum = 0, maximum = 100)]
    pub prepayment_percent: Option<i32>,
    /// Sales open.
    pub sales_start: Option<DateTime<Utc>>,
    /// Sales close; after the opening when both are given.
    pub sales_end: Option<DateTime<Utc>>,
    /// Position in lists.
    #[serde(default)]
    pub sort_order: i32,
    /// On sale (default true).
    pub is_active: Option<bool>,
}

/// `currency` of a ticket type: the codes `domain::events::validation::is_currency` accepts.
fn currency_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::from_iter([Type::String, Type::Null]))
        .enum_values(Some(
            domain::events::validation::currencies()
                .map(serde_json::Value::from)
                .chain(std::iter::once(serde_json::Value::Null)),
        ))
        .description(Some(
            "ISO 4217 code of an active currency (null or absent: RUB). The server also takes it \
             in lower case or with surrounding whitespace.",
        ))
        .build()
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
    /// The ticket type (one of this event's: another is refused, 400).
    pub ticket_type_id: Uuid,
    /// Contact email: one `@`, a dot inside the domain, at most 254 characters (the server also
    /// takes surrounding whitespace and non-ASCII characters within 254 bytes).
    #[schema(
        max_length = 254,
        pattern = r"^[!-?A-~]+@[!-\-/-?A-~][!-?A-~]*\.[!-?A-~]*[!-\-/-?A-~]$"
    )]
    pub email: Option<String>,
    /// First name; the profile's when empty or absent. At most 100 characters, no control
    /// characters.
    #[serde(default)]
    #[schema(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub first_name: String,
    /// Last name; the profile's when empty or absent. At most 100 characters, no control
    /// characters.
    #[serde(default)]
    #[schema(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub last_name: String,
    /// Answers to the organizer's questions: an object of at most 16 KB as JSON, no NUL in
    /// keys or strings, numbers within ±9007199254740991.
    #[schema(value_type = Option<Object>)]
    pub custom_fields: Option<serde_json::Value>,
    /// Where the person came from (a short slug such as `vk`), counted by the dashboard: 1 to 64
    /// lower-case Latin letters, digits, `-` or `_`.
    #[schema(pattern = r"^[a-z0-9_-]{1,64}$")]
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
    /// The 8-character confirmation code: Latin letters (any case) and digits, surrounding
    /// whitespace ignored. Issued codes use `ABCDEFGHJKLMNPQRSTUVWXYZ23456789`; another code is
    /// looked up all the same (404).
    #[schema(
        pattern = r"^[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[A-Za-z0-9]{8}[\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*$"
    )]
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
