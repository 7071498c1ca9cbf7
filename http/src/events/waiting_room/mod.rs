//! The waiting room of an on-sale over HTTP: the organizer opens, changes and closes it
//! (`/waiting-room`); a visitor joins it, reads where they stand (with their admission once
//! let in) and leaves it (`/queue`), or follows it as it moves (`stream`). Registrations check
//! admissions in `registrations`.

pub mod stream;
pub mod watch;

use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::events::waiting_room::admission::{self, AdmissionRefusal};
use domain::events::waiting_room::pass::{self, Pass};
use domain::events::waiting_room::{
    self as rules, DEFAULT_ADMISSION_MINUTES, DEFAULT_GRACE_MINUTES, PlaceStatus, RoomSettings,
    admission_expiry, ahead, estimated_wait,
};
use domain::events::waitlist::takes_entries;
use domain::validation::FieldErrors;
use serde::{Deserialize, Serialize};
use storage::events::catalog;
use storage::events::waiting_room::places::{self, Joined, Place};
use storage::events::waiting_room::{Room, rooms};
use utoipa::ToSchema;
use uuid::Uuid;

/// Opening a waiting room, or changing it.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WaitingRoomRequest {
    /// When the sale opens: visitors who came before are drawn in random order then.
    pub on_sale_at: DateTime<Utc>,
    /// Visitors let in per minute.
    #[schema(minimum = 1, maximum = 1000000)]
    pub admit_per_minute: i64,
    /// How long an admission lasts, in minutes (10 when not given).
    #[schema(minimum = 1, maximum = 120)]
    pub admission_minutes: Option<i64>,
    /// How long a place is kept after its visitor leaves, in minutes (5 when not given).
    #[schema(minimum = 0, maximum = 120)]
    pub grace_minutes: Option<i64>,
}

/// An event's waiting room.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitingRoomDto {
    /// The event.
    pub event_id: Uuid,
    /// When the sale opens.
    pub on_sale_at: DateTime<Utc>,
    /// Visitors let in per minute.
    pub admit_per_minute: i32,
    /// How long an admission lasts, in minutes.
    pub admission_minutes: i32,
    /// How long a place is kept after its visitor leaves, in minutes.
    pub grace_minutes: i32,
    /// When the visitors who came early were drawn in random order: the sale has opened.
    pub drawn_at: Option<DateTime<Utc>>,
    /// Places handed out so far.
    pub arrivals: i64,
    /// Visitors let in so far.
    pub admitted: i64,
    /// No seat is left.
    pub sold_out: bool,
}

impl From<Room> for WaitingRoomDto {
    fn from(r: Room) -> Self {
        WaitingRoomDto {
            event_id: r.event_id,
            on_sale_at: r.on_sale_at,
            admit_per_minute: r.admit_per_minute,
            admission_minutes: r.admission_minutes,
            grace_minutes: r.grace_minutes,
            drawn_at: r.drawn_at,
            arrivals: r.arrivals,
            admitted: r.admitted_count,
            sold_out: r.sold_out_at.is_some(),
        }
    }
}

/// Where a visitor stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlaceDto {
    /// The event.
    pub event_id: Uuid,
    /// PRE_QUEUE, WAITING, ADMITTED, EXPIRED, LEFT or SOLD_OUT.
    pub status: PlaceStatus,
    /// Visitors ahead, at most (some of them may have left); while WAITING.
    pub ahead: Option<i64>,
    /// Seconds until this visitor's turn at the room's rate; while WAITING.
    pub estimated_wait_seconds: Option<i64>,
    /// When the sale opens (the order of the pre-queue is drawn then).
    pub on_sale_at: DateTime<Utc>,
    /// Joined at.
    pub joined_at: DateTime<Utc>,
    /// The admission to show as `X-Admission` when registering; while ADMITTED.
    pub admission: Option<String>,
    /// When the admission stops working; while ADMITTED.
    pub admission_expires_at: Option<DateTime<Utc>>,
    /// Until when a visitor who left can come back to this place; while LEFT.
    pub kept_until: Option<DateTime<Utc>>,
    /// A pass to this place: shown as `X-Queue-Place` when reading the place again, the answer
    /// needs no read of the place (forget it on leaving: it cannot tell one left).
    pub place_pass: Option<String>,
}

/// The keys of admissions and place passes; none without the installation's secret (then no
/// admission or pass is given, and every one shown is refused or ignored).
pub(crate) struct Keys {
    admission: Option<Vec<u8>>,
    pass: Option<Vec<u8>>,
}

impl Keys {
    pub(crate) fn of(state: &AppState) -> Keys {
        let secret = state
            .config
            .auth
            .jwt_secret
            .as_ref()
            .map(|s| s.expose().as_bytes())
            .filter(|s| !s.is_empty());
        Keys {
            admission: secret.map(admission::key),
            pass: secret.map(pass::key),
        }
    }
}

impl PlaceDto {
    pub(crate) fn of(place: &Place, keys: &Keys, user: Uuid, now: DateTime<Utc>) -> PlaceDto {
        let mut dto = PlaceDto::judged(place, keys.admission.as_deref(), user, now);
        dto.place_pass = keys.pass.as_deref().map(|key| {
            let facts = place.facts();
            let said = Pass {
                ordinal: place.ordinal,
                joined_at: place.joined_at,
                undrawn: facts.undrawn,
            };
            pass::sign(key, place.room.event_id, user, &said)
        });
        dto
    }

    fn judged(place: &Place, key: Option<&[u8]>, user: Uuid, now: DateTime<Utc>) -> PlaceDto {
        let status = place.status(now);
        let waiting = status == PlaceStatus::Waiting;
        let before = ahead(place.ordinal, place.room.admitted_through);
        let expires = place
            .admitted_at
            .map(|at| admission_expiry(at, place.room.admission_minutes));
        let admission = match (status, key, expires) {
            (PlaceStatus::Admitted, Some(key), Some(expires)) => {
                Some(admission::sign(key, place.room.event_id, user, expires))
            }
            _ => None,
        };
        PlaceDto {
            event_id: place.room.event_id,
            status,
            ahead: waiting.then_some(before),
            estimated_wait_seconds: waiting
                .then(|| estimated_wait(before, place.room.admit_per_minute).num_seconds()),
            on_sale_at: place.room.on_sale_at,
            joined_at: place.joined_at,
            admission_expires_at: admission.as_ref().and(expires),
            admission,
            kept_until: place
                .left_at
                .map(|left| left + chrono::Duration::minutes(i64::from(place.room.grace_minutes))),
            place_pass: None,
        }
    }
}

/// Checks the admission a registration shows for `event`: `Ok(true)` when one is shown and
/// valid, `Ok(false)` when none is shown (the seat's judge then refuses it if the room is
/// open), and the refusal, counted, when one is shown and not valid.
pub(crate) fn check_admission(
    state: &AppState,
    shown: Option<&str>,
    event: Uuid,
    user: Uuid,
) -> Result<bool, ApiError> {
    let Some(shown) = shown else {
        return Ok(false);
    };
    let checked = match Keys::of(state).admission {
        Some(key) => admission::verify(&key, shown, event, user, state.clock.now()),
        None => Err(AdmissionRefusal::Forged),
    };
    checked
        .map(|()| true)
        .map_err(|refusal| refused(state, refusal))
}

/// The error of a refused admission, counted under its reason.
pub(crate) fn refused(state: &AppState, refusal: AdmissionRefusal) -> ApiError {
    state.metrics.count_admission_refused(refusal.as_str());
    domain::error::Refusal::from(refusal.refusal()).into()
}

/// Opens the event's waiting room, or changes it: from now on a registration needs an
/// admission. The on-sale time can move only until the sale opens.
#[utoipa::path(put, path = "/api/v1/events/{id}/waiting-room", tag = "waiting room", request_body = WaitingRoomRequest,
    responses((status = 200, body = WaitingRoomDto), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn open(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
    Json(body): Json<WaitingRoomRequest>,
) -> Result<Json<WaitingRoomDto>, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let admission_minutes = body.admission_minutes.unwrap_or(DEFAULT_ADMISSION_MINUTES);
    let grace_minutes = body.grace_minutes.unwrap_or(DEFAULT_GRACE_MINUTES);
    let mut errors = FieldErrors::new();
    rules::check_settings(
        &mut errors,
        body.admit_per_minute,
        admission_minutes,
        grace_minutes,
    );
    errors.into_result()?;
    // In range, so each fits.
    let settings = RoomSettings {
        on_sale_at: body.on_sale_at,
        admit_per_minute: i32::try_from(body.admit_per_minute).unwrap_or(i32::MAX),
        admission_minutes: i32::try_from(admission_minutes).unwrap_or(i32::MAX),
        grace_minutes: i32::try_from(grace_minutes).unwrap_or(i32::MAX),
    };
    let room = rooms::open(&state.db, tenant, user, event, settings, state.clock.now()).await?;
    Ok(Json(room.into()))
}

/// The event's waiting room, for anyone who can see the event; 404 when it has none.
#[utoipa::path(get, path = "/api/v1/events/{id}/waiting-room", tag = "waiting room",
    responses((status = 200, body = WaitingRoomDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
) -> Result<Json<WaitingRoomDto>, ApiError> {
    let seen = catalog::get(&state.db, caller.scope(), event).await?;
    Ok(Json(
        rooms::get(&state.db, seen.tenant_id, event).await?.into(),
    ))
}

/// Closes the event's waiting room: registrations no longer need an admission, and the
/// places in it are gone.
#[utoipa::path(delete, path = "/api/v1/events/{id}/waiting-room", tag = "waiting room",
    responses((status = 204), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn close(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    rooms::close(&state.db, tenant, user, event).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Takes a place in the event's waiting room: 201 with a new place, 200 with the one the
/// account holds (one place per account; coming back within the grace period keeps it). 422
/// when the event is not published.
#[utoipa::path(post, path = "/api/v1/events/{id}/queue", tag = "waiting room",
    responses((status = 201, body = PlaceDto), (status = 200, body = PlaceDto), (status = 401, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn join(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
) -> Result<(StatusCode, Json<PlaceDto>), ApiError> {
    let user = caller.require_user()?;
    let seen = catalog::get(&state.db, caller.scope(), event).await?;
    // Only a published event takes registrations, and so visitors for them.
    takes_entries(seen.status)?;
    let now = state.clock.now();
    let (place, joined) = places::join(&state.db, seen.tenant_id, event, user, now).await?;
    let status = match joined {
        Joined::New => StatusCode::CREATED,
        Joined::Kept => StatusCode::OK,
    };
    Ok((
        status,
        Json(PlaceDto::of(&place, &Keys::of(&state), user.as_uuid(), now)),
    ))
}

/// Where the caller stands in the event's waiting room, with their admission once let in.
/// With the place's pass (`X-Queue-Place`, from an earlier answer) the node answers from the
/// room as it last read it, without reading the place: what a crowd refreshing its page costs.
#[utoipa::path(get, path = "/api/v1/events/{id}/queue", tag = "waiting room",
    params(("X-Queue-Place" = Option<String>, Header, description = "the place's pass")),
    responses((status = 200, body = PlaceDto), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn place(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(event): Path<Uuid>,
) -> Result<Json<PlaceDto>, ApiError> {
    let user = caller.require_user()?;
    let now = state.clock.now();
    let keys = Keys::of(&state);
    let shown = headers.get(pass::HEADER).and_then(|v| v.to_str().ok());
    if let Some(answer) = from_pass(&state, &keys, shown, event, user.as_uuid(), now).await? {
        return Ok(Json(answer));
    }
    let seen = catalog::get(&state.db, caller.scope(), event).await?;
    let place = places::of(&state.db, seen.tenant_id, event, user, now).await?;
    Ok(Json(PlaceDto::of(&place, &keys, user.as_uuid(), now)))
}

/// The answer a pass gives alone, from the room as this node last read it; `None` when the
/// place itself must be read: no valid pass, the room closed, a pre-queue turn past the on-sale
/// time (drawn again), or the visitor's turn come (the admission's time starts when first told).
async fn from_pass(
    state: &AppState,
    keys: &Keys,
    shown: Option<&str>,
    event: Uuid,
    user: Uuid,
    now: DateTime<Utc>,
) -> Result<Option<PlaceDto>, ApiError> {
    let (Some(shown), Some(key)) = (shown, keys.pass.as_deref()) else {
        return Ok(None);
    };
    let Some(said) = pass::read(key, shown, event, user) else {
        return Ok(None);
    };
    let Some(room) = state.rooms.current(&state.db, event).await? else {
        return Ok(None);
    };
    // A pre-queue turn is drawn again at the on-sale time (the room this node read may not
    // show the draw yet).
    if said.undrawn && (room.drawn_at.is_some() || now >= room.on_sale_at) {
        return Ok(None);
    }
    let place = Place {
        room,
        ordinal: said.ordinal,
        early: said.undrawn,
        joined_at: said.joined_at,
        left_at: None,
        admitted_at: None,
    };
    if place.status(now) == PlaceStatus::Admitted {
        return Ok(None);
    }
    let mut answer = PlaceDto::judged(&place, None, user, now);
    answer.place_pass = Some(shown.to_string());
    Ok(Some(answer))
}

/// Leaves the event's waiting room; the place is kept for the room's grace period.
#[utoipa::path(delete, path = "/api/v1/events/{id}/queue", tag = "waiting room",
    responses((status = 204), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn leave(
    State(state): State<AppState>,
    caller: Caller,
    Path(event): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    let seen = catalog::get(&state.db, caller.scope(), event).await?;
    places::leave(&state.db, seen.tenant_id, event, user, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
