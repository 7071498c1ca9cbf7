//! Registrations: taking a seat (through the ticket type's actor), reading, cancelling and
//! checking in.

use super::dto::{CheckInRequest, CodeCheckInRequest, CreateRegistrationRequest, RegistrationDto};
use super::organizer;
use super::waiting_room::{check_admission, refused};
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, MaybeJson, Path, Query};
use crate::idempotency::{IDEMPOTENCY_KEY, REPLAYED};
use crate::paging::PageParams;
use crate::state::AppState;
use actors::ticketing::TicketingError;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use domain::error::ErrorCode;
use domain::error::Refusal;
use domain::events::lifecycle::ParticipantsVisibility;
use domain::events::refusals::{EventFieldText, EventRefusal};
use domain::events::registrations::{CheckInMethod, RegistrationStatus, typed_code};
use domain::events::search::RegistrationSearch;
use domain::events::waiting_room::admission::{self, AdmissionRefusal};
use domain::identity::rules;
use domain::paging::Page;
use domain::roles::Role;
use domain::validation::{FieldError, FieldErrors};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use storage::Scope;
use storage::events::catalog;
use storage::events::registrations::{self, Canceller, CheckInTarget, RegistrationFilter};
use storage::events::seats::{SeatOutcome, SeatRequest};
use uuid::Uuid;

/// Filters of the registration list.
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationQuery {
    /// Only this status.
    pub status: Option<RegistrationStatus>,
    /// Only this ticket type.
    pub ticket_type_id: Option<Uuid>,
    /// Only this event (the caller's own list, `GET /registrations`).
    pub event_id: Option<Uuid>,
    /// Words that each begin the first name, the last name or the email (case aside), or a
    /// whole confirmation code (at most 100 characters, no control characters; a participant
    /// of an open event searches the others' names only).
    #[param(max_length = 100, pattern = r"^[^\x00-\x1F\x7F-\x9F]*$")]
    pub search: Option<String>,
}

impl RegistrationQuery {
    /// The storage filter of the parameters; 400 for a search too long or with control
    /// characters.
    fn filter(&self) -> Result<RegistrationFilter, ApiError> {
        let search = match self.search.as_deref().map(RegistrationSearch::parse) {
            None => None,
            Some(Ok(found)) => found,
            Some(Err(e)) => return Err(ApiError::field("search", e)),
        };
        Ok(RegistrationFilter {
            status: self.status,
            ticket_type_id: self.ticket_type_id,
            active_only: false,
            search,
        })
    }
}

/// Takes a seat. Needs `X-Idempotency-Key`: a retry with the same key returns the same
/// answer (marked `Idempotent-Replayed: true`); the key with another request is refused.
#[utoipa::path(post, path = "/api/v1/events/{id}/registrations", tag = "registrations", request_body = CreateRegistrationRequest,
    params(("X-Idempotency-Key" = Uuid, Header, description = "required")),
    responses((status = 201, body = RegistrationDto), (status = 400, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(event_id): Path<Uuid>,
    Json(body): Json<CreateRegistrationRequest>,
) -> Result<Response, ApiError> {
    let user = caller.require_user()?;
    let mut errors = FieldErrors::new();
    let key = match headers.get(IDEMPOTENCY_KEY) {
        None => {
            errors.add("X-Idempotency-Key", FieldError::Required);
            None
        }
        Some(raw) => {
            let key = raw
                .to_str()
                .ok()
                .and_then(|k| Uuid::parse_str(k.trim()).ok());
            if key.is_none() {
                errors.add("X-Idempotency-Key", FieldError::InvalidFormat);
            }
            key
        }
    };
    let email = body
        .email
        .as_deref()
        .map(|e| rules::normalize_email(&mut errors, "email", e));
    rules::check_name(&mut errors, "firstName", &body.first_name);
    rules::check_name(&mut errors, "lastName", &body.last_name);
    if let Some(source) = &body.source {
        domain::analytics::check_source(&mut errors, "source", source);
    }
    let custom_fields = body.custom_fields.unwrap_or_else(|| serde_json::json!({}));
    domain::validation::check_stored_object(&mut errors, "customFields", &custom_fields, 16 * 1024);
    errors.into_result()?;
    let key = key.ok_or_else(|| ApiError::field("X-Idempotency-Key", FieldError::Required))?;
    let shown = headers
        .get(admission::HEADER)
        .map(|raw| raw.to_str().unwrap_or_default());
    let admitted = check_admission(&state, shown, event_id, user.as_uuid())?;

    let request = SeatRequest {
        event: event_id,
        user,
        caller_tenant: caller.tenant,
        key,
        request_hash: request_hash(
            event_id,
            body.ticket_type_id,
            &email,
            &body.first_name,
            &body.last_name,
            &custom_fields,
            &body.source,
        ),
        email,
        first_name: body.first_name.trim().to_string(),
        last_name: body.last_name.trim().to_string(),
        custom_fields,
        source: body.source,
        admitted,
    };
    // Visibility, the sales window and the key's earlier answers are judged by the ticket
    // type's actor inside its group commit: a request costs no statement of its own.
    let outcome = state
        .ticketing
        .reserve(event_id, body.ticket_type_id, request)
        .await
        .map_err(|e| match e {
            TicketingError::Moved(_) => ApiError::moved(&e),
            TicketingError::Unavailable(_) => {
                tracing::error!(error = %e, "seat request without database");
                ApiError::unavailable()
            }
            TicketingError::Busy(_) => {
                tracing::warn!(error = %e, "seat request lost its lock races");
                ApiError::unavailable()
            }
            TicketingError::Failed(_) => ApiError::internal(&e),
        })?;
    match outcome {
        SeatOutcome::Replayed(first) => {
            let mut response = answer(&state, &caller, event_id, body.ticket_type_id, *first)
                .await
                .unwrap_or_else(IntoResponse::into_response);
            response
                .headers_mut()
                .insert(REPLAYED, HeaderValue::from_static("true"));
            Ok(response)
        }
        outcome => answer(&state, &caller, event_id, body.ticket_type_id, outcome).await,
    }
}

/// The response to a judged seat request.
async fn answer(
    state: &AppState,
    caller: &Caller,
    event_id: Uuid,
    ticket_type_id: Uuid,
    outcome: SeatOutcome,
) -> Result<Response, ApiError> {
    match outcome {
        SeatOutcome::Created(registration) => Ok((
            StatusCode::CREATED,
            Json(RegistrationDto::full(*registration)),
        )
            .into_response()),
        SeatOutcome::Refused(refusal) => Err(refusal.refusal().into()),
        SeatOutcome::KeyReused => Err(ApiError::new(ErrorCode::IdempotencyKeyReused)),
        SeatOutcome::AdmissionRequired => Err(refused(state, AdmissionRefusal::Missing)),
        // Rare: tell "no such event" (404) from "no such ticket type" (400) with the caller's
        // own read.
        SeatOutcome::NotFound | SeatOutcome::Replayed(_) => {
            // Boxed: inline, this rare read would size the future of every seat request.
            let (_, ticket_type) = Box::pin(catalog::get_with_type(
                &state.db,
                caller.scope(),
                event_id,
                ticket_type_id,
            ))
            .await?;
            match ticket_type {
                None => Err(ApiError::field(
                    "ticketTypeId",
                    FieldError::from(EventFieldText::NoSuchTicketType),
                )),
                Some(_) => Err(ApiError::new(ErrorCode::NotFound)),
            }
        }
    }
}

/// What a seat request asks for, hashed: the same key must come with the same request.
fn request_hash(
    event: Uuid,
    ticket_type: Uuid,
    email: &Option<String>,
    first_name: &str,
    last_name: &str,
    custom_fields: &serde_json::Value,
    source: &Option<String>,
) -> Vec<u8> {
    let canonical = serde_json::json!([
        event,
        ticket_type,
        email,
        first_name,
        last_name,
        custom_fields,
        source
    ]);
    Sha256::digest(canonical.to_string().as_bytes()).to_vec()
}

/// Registrations of an event: organizers see all; a participant sees their own, or, for an
/// OPEN event they are registered for, everyone's names and ticket types.
#[utoipa::path(get, path = "/api/v1/events/{id}/registrations", tag = "registrations", params(PageParams, RegistrationQuery),
    responses((status = 200, description = "a page of RegistrationDto"), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(event_id): Path<Uuid>,
    paging: PageParams,
    Query(query): Query<RegistrationQuery>,
) -> Result<Json<Page<RegistrationDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&registrations::SORT)?;
    let filter = query.filter()?;
    let event = catalog::get(&state.db, caller.scope(), event_id).await?;
    let organizer = caller.tenant == Some(event.tenant_id)
        && caller.has_any_role(&[Role::Owner, Role::Moderator]);
    if organizer {
        let found =
            registrations::list(&state.db, caller.scope(), event_id, &filter, &page).await?;
        return Ok(Json(found.map(RegistrationDto::full)));
    }
    if event.participants_visibility == ParticipantsVisibility::Open
        && let Some(found) =
            registrations::list_as_participant(&state.db, user, event_id, &filter, &page).await?
    {
        return Ok(Json(found.map(|r| {
            if r.user_id == user {
                RegistrationDto::full(r)
            } else {
                RegistrationDto::public(r)
            }
        })));
    }
    let mine = registrations::list(&state.db, Scope::user(user), event_id, &filter, &page).await?;
    Ok(Json(mine.map(RegistrationDto::full)))
}

/// The caller's own registrations across events (the web front's "my tickets").
#[utoipa::path(get, path = "/api/v1/registrations", tag = "registrations", params(PageParams, RegistrationQuery),
    responses((status = 200, description = "a page of RegistrationDto"), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody)))]
pub async fn mine(
    State(state): State<AppState>,
    caller: Caller,
    paging: PageParams,
    Query(query): Query<RegistrationQuery>,
) -> Result<Json<Page<RegistrationDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&registrations::SORT)?;
    let filter = query.filter()?;
    let mine = registrations::list_mine(&state.db, user, query.event_id, &filter, &page).await?;
    Ok(Json(mine.map(RegistrationDto::full)))
}

/// A registration: its participant's, or an organizer's of its event.
#[utoipa::path(get, path = "/api/v1/registrations/{id}", tag = "registrations",
    responses((status = 200, body = RegistrationDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<RegistrationDto>, ApiError> {
    caller.require_user()?;
    Ok(Json(RegistrationDto::full(
        registrations::get(&state.db, caller.scope(), id).await?,
    )))
}

/// Cancels a registration (its participant, or an organizer of its event); the seat is freed.
/// One already cancelled or expired answers 204 too; after check-in only an organizer may.
#[utoipa::path(delete, path = "/api/v1/registrations/{id}", tag = "registrations",
    responses((status = 204), (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    let now = state.clock.now();
    let as_participant =
        registrations::cancel(&state.db, Canceller::Participant(user), id, None, now).await;
    match as_participant {
        // Not theirs, or checked in (which only an organizer may undo): an organizer of the
        // event's organization may still cancel it.
        Err(storage::Error::Refused(r))
            if r.code == ErrorCode::NotFound
                || (r.code == ErrorCode::BusinessRule && organizer(&caller).is_ok()) =>
        {
            let (tenant, user) = organizer(&caller).map_err(|_| ApiError::not_found())?;
            registrations::cancel(
                &state.db,
                Canceller::Organizer(tenant, user),
                id,
                Some("CANCELLED_BY_ORGANIZER"),
                now,
            )
            .await?;
        }
        other => {
            other?;
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Checks a participant in by registration id (organizers): only CONFIRMED, only once.
#[utoipa::path(post, path = "/api/v1/registrations/{id}/check-in", tag = "registrations", request_body(content = Option<CheckInRequest>),
    responses((status = 200, body = RegistrationDto), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn check_in(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    MaybeJson(body): MaybeJson<CheckInRequest>,
) -> Result<Json<RegistrationDto>, ApiError> {
    let (tenant, staff) = organizer(&caller)?;
    let method = body.and_then(|b| b.method).unwrap_or(CheckInMethod::QrCode);
    let r = registrations::check_in(
        &state.db,
        tenant,
        staff,
        CheckInTarget::Id(id),
        method,
        state.clock.now(),
    )
    .await?;
    Ok(Json(RegistrationDto::full(r)))
}

/// Checks a participant in by the confirmation code, for door staff typing it. A code of
/// another event of the organization is 422 with that event's `eventId` and `eventTitle` in
/// `details`; a code of no event of the organization is 404.
#[utoipa::path(post, path = "/api/v1/events/{id}/check-in", tag = "registrations", request_body = CodeCheckInRequest,
    responses((status = 200, body = RegistrationDto), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn check_in_by_code(
    State(state): State<AppState>,
    caller: Caller,
    Path(event_id): Path<Uuid>,
    Json(body): Json<CodeCheckInRequest>,
) -> Result<Json<RegistrationDto>, ApiError> {
    let (tenant, staff) = organizer(&caller)?;
    let code = typed_code(&body.confirmation_code)
        .ok_or_else(|| ApiError::field("confirmationCode", FieldError::InvalidFormat))?;
    let method = body.method.unwrap_or(CheckInMethod::Manual);
    let target = CheckInTarget::Code {
        event: event_id,
        code: code.clone(),
    };
    match registrations::check_in(&state.db, tenant, staff, target, method, state.clock.now()).await
    {
        Ok(r) => Ok(Json(RegistrationDto::full(r))),
        // Door staff must tell "not a ticket" from "a ticket for the other hall".
        Err(storage::Error::Refused(refusal)) if refusal.code == ErrorCode::NotFound => {
            match registrations::other_event_of_code(&state.db, tenant, staff, event_id, &code)
                .await?
            {
                Some((other, title)) => {
                    let mut error =
                        ApiError::from(Refusal::from(EventRefusal::TicketOfAnotherEvent));
                    error.details =
                        Some(serde_json::json!({"eventId": other, "eventTitle": title}));
                    Err(error)
                }
                None => Err(ApiError::not_found()),
            }
        }
        Err(other) => Err(other.into()),
    }
}
