//! Joining, reading and leaving the waiting list of a sold-out ticket type.

use super::dto::WaitlistEntryDto;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use domain::events::waitlist::takes_entries;
use domain::identity::rules;
use domain::validation::FieldErrors;
use serde::Deserialize;
use storage::events::{catalog, ticket_types, waitlist};
use uuid::Uuid;

/// Joining a waiting list.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct JoinWaitlistRequest {
    /// The sold-out ticket type.
    pub ticket_type_id: Uuid,
    /// Contact email.
    #[schema(
        max_length = 254,
        pattern = r"^[!-?A-~]+@[!-\-/-?A-~][!-?A-~]*\.[!-?A-~]*[!-\-/-?A-~]$"
    )]
    pub email: Option<String>,
}

/// Joins the waiting list of a sold-out ticket type of a published event.
#[utoipa::path(post, path = "/api/v1/events/{id}/waitlist", tag = "registrations", request_body = JoinWaitlistRequest,
    responses((status = 201, body = WaitlistEntryDto), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn join(
    State(state): State<AppState>,
    caller: Caller,
    Path(event_id): Path<Uuid>,
    Json(body): Json<JoinWaitlistRequest>,
) -> Result<(StatusCode, Json<WaitlistEntryDto>), ApiError> {
    let user = caller.require_user()?;
    let mut errors = FieldErrors::new();
    let email = body
        .email
        .as_deref()
        .map(|e| rules::normalize_email(&mut errors, "email", e));
    errors.into_result()?;
    let event = catalog::get(&state.db, caller.scope(), event_id).await?;
    takes_entries(event.status)?;
    ticket_types::get(&state.db, caller.scope(), event_id, body.ticket_type_id).await?;
    let entry = waitlist::join(
        &state.db,
        event.tenant_id,
        event_id,
        body.ticket_type_id,
        user,
        email.as_deref(),
        state.clock.now(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(entry.into())))
}

/// The caller's open entries on the event's waiting lists: WAITING, or NOTIFIED with a seat
/// held until `expiresAt`; at most one per ticket type, oldest first; an empty list when the
/// caller waits on none of them. 404 when the caller cannot see the event.
#[utoipa::path(get, path = "/api/v1/events/{id}/waitlist", tag = "registrations",
    responses((status = 200, body = [WaitlistEntryDto]), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn mine(
    State(state): State<AppState>,
    caller: Caller,
    Path(event_id): Path<Uuid>,
) -> Result<Json<Vec<WaitlistEntryDto>>, ApiError> {
    let user = caller.require_user()?;
    catalog::get(&state.db, caller.scope(), event_id).await?;
    let entries = waitlist::open_of(&state.db, user, event_id).await?;
    Ok(Json(
        entries.into_iter().map(WaitlistEntryDto::from).collect(),
    ))
}

/// Leaves the event's waiting lists; a seat held for the caller goes to the next person.
#[utoipa::path(delete, path = "/api/v1/events/{id}/waitlist", tag = "registrations",
    responses((status = 204), (status = 404, body = crate::error::ErrorBody)))]
pub async fn leave(
    State(state): State<AppState>,
    caller: Caller,
    Path(event_id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    let event = catalog::get(&state.db, caller.scope(), event_id).await?;
    waitlist::leave(
        &state.db,
        event.tenant_id,
        event_id,
        user,
        state.clock.now(),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
