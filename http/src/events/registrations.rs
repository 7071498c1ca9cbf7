//! Registrations: taking a seat (through the ticket type's actor), reading, cancelling and
//! checking in.

use super::dto::{CheckInRequest, CodeCheckInRequest, CreateRegistrationRequest, RegistrationDto};
use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, MaybeJson, Path, Query};
use crate::idempotency::IDEMPOTENCY_KEY;
use crate::paging::PageParams;
use crate::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use domain::error::{ErrorCode, Refusal};
use domain::events::lifecycle::{EventStatus, ParticipantsVisibility};
use domain::events::registrations::{CheckInMethod, RegistrationStatus};
use domain::identity::rules;
use domain::paging::Page;
use domain::roles::Role;
use domain::validation::{FieldError, FieldErrors};
use serde::Deserialize;
use storage::Scope;
use storage::events::catalog;
use storage::events::registrations::{
    self, Canceller, CheckInTarget, RegistrationFilter, SeatOutcome, SeatRequest,
};
use uuid::Uuid;

/// Filters of the registration list.
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationQuery {
    /// Only this status.
    pub status: Option<RegistrationStatus>,
    /// Only this ticket type.
    pub ticket_type_id: Option<Uuid>,
}

/// Takes a seat. Needs `X-Idempotency-Key`: a retry with the same key returns the same
/// registration.
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
) -> Result<(StatusCode, Json<RegistrationDto>), ApiError> {
    let user = caller.require_user()?;
    let mut errors = FieldErrors::new();
    if !headers.contains_key(IDEMPOTENCY_KEY) {
        errors.add("X-Idempotency-Key", FieldError::Required);
    }
    let email = body
        .email
        .as_deref()
        .map(|e| rules::normalize_email(&mut errors, "email", e));
    rules::check_name(&mut errors, "firstName", &body.first_name);
    rules::check_name(&mut errors, "lastName", &body.last_name);
    let custom_fields = body.custom_fields.unwrap_or_else(|| serde_json::json!({}));
    if !custom_fields.is_object() {
        errors.add(
            "customFields",
            FieldError::WrongType {
                expected: "object".into(),
            },
        );
    } else if custom_fields.to_string().len() > 16 * 1024 {
        errors.add("customFields", FieldError::TooLong { max: 16 * 1024 });
    }
    errors.into_result()?;

    // Visibility is the caller's: a private event of a group they are not in is 404.
    let (event, ticket_type) =
        catalog::get_with_type(&state.db, caller.scope(), event_id, body.ticket_type_id).await?;
    if event.status != EventStatus::Published {
        return Err(Refusal::with(
            ErrorCode::BusinessRule,
            "Событие не принимает регистрации",
            "The event does not take registrations",
        )
        .into());
    }
    let ticket_type = ticket_type.ok_or_else(|| {
        ApiError::field(
            "ticketTypeId",
            FieldError::Invalid(domain::i18n::Text {
                ru: "Такого типа билета у события нет",
                en: "The event has no such ticket type",
            }),
        )
    })?;
    let now = state.clock.now();
    if !ticket_type.is_active
        || ticket_type.sales_start.is_some_and(|s| now < s)
        || ticket_type.sales_end.is_some_and(|e| now >= e)
    {
        return Err(Refusal::with(
            ErrorCode::BusinessRule,
            "Продажа этого типа билета закрыта",
            "This ticket type is not on sale now",
        )
        .into());
    }
    let request = SeatRequest {
        user,
        email,
        first_name: body.first_name.trim().to_string(),
        last_name: body.last_name.trim().to_string(),
        custom_fields,
    };
    let outcome = state
        .ticketing
        .reserve(event.tenant_id, ticket_type.id, request)
        .await
        .map_err(|e| ApiError::internal(&e))?;
    match outcome {
        SeatOutcome::Created(registration) => Ok((
            StatusCode::CREATED,
            Json(RegistrationDto::full(*registration)),
        )),
        SeatOutcome::SoldOut => Err(ApiError::new(ErrorCode::SoldOut)),
        SeatOutcome::AlreadyRegistered => Err(Refusal::with(
            ErrorCode::Conflict,
            "Вы уже зарегистрированы на это событие",
            "You are already registered for this event",
        )
        .into()),
        SeatOutcome::NotOnSale => Err(Refusal::with(
            ErrorCode::BusinessRule,
            "Продажа этого типа билета закрыта",
            "This ticket type is not on sale now",
        )
        .into()),
    }
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
    let filter = RegistrationFilter {
        status: query.status,
        ticket_type_id: query.ticket_type_id,
        active_only: false,
    };
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
        Err(storage::Error::Refused(r)) if r.code == ErrorCode::NotFound => {
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

/// Checks a participant in by the confirmation code, for door staff typing it.
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
    let code = body.confirmation_code.trim().to_uppercase();
    if code.len() != 8 || !code.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(ApiError::field(
            "confirmationCode",
            FieldError::InvalidFormat,
        ));
    }
    let method = body.method.unwrap_or(CheckInMethod::Manual);
    let target = CheckInTarget::Code {
        event: event_id,
        code,
    };
    let r = registrations::check_in(&state.db, tenant, staff, target, method, state.clock.now())
        .await?;
    Ok(Json(RegistrationDto::full(r)))
}
