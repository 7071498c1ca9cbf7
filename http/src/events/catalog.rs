//! Events: list and read under the visibility rules, create, change, delete, life cycle.

use super::dto::{CopyEventRequest, CreateEventRequest, EventDto, UpdateEventRequest};
use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path, Query};
use crate::paging::PageParams;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::config::Service;
use domain::events::lifecycle::{Action, EventStatus};
use domain::events::patch::EventPatch;
use domain::events::{slug, validation};
use domain::ids::TenantId;
use domain::media::attachable::Holder;
use domain::paging::Page;
use domain::validation::{FieldError, FieldErrors};
use serde::Deserialize;
use storage::events::catalog::{self as events, EventFilter, NewEvent};
use uuid::Uuid;

/// Filters of the event list.
#[derive(Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct EventQuery {
    /// DRAFT, PUBLISHED, CANCELLED or COMPLETED.
    pub status: Option<EventStatus>,
    /// Only this organizer's events.
    pub organizer_id: Option<Uuid>,
    /// Only this organization's events: every status for a token of that organization, what
    /// the caller may see anyway (published public events, their groups' ones) for anyone else.
    pub organization_id: Option<Uuid>,
    /// Only events starting at or after (ISO 8601).
    pub starts_after: Option<DateTime<Utc>>,
    /// Words to find in title or description (Russian and English).
    #[param(max_length = 200, pattern = r"^[^\x00]*$")]
    pub search: Option<String>,
}

fn check_text(errors: &mut FieldErrors, title: Option<&str>, description: Option<&str>) {
    if let Some(t) = title {
        errors.check_length("title", t.trim(), 1, 255);
    }
    if let Some(d) = description {
        errors.check_length("description", d, 0, 20_000);
    }
}

fn check_place(
    errors: &mut FieldErrors,
    timezone: Option<&str>,
    address: Option<&str>,
    url: Option<&str>,
) {
    if let Some(tz) = timezone
        && !validation::is_time_zone(tz)
    {
        errors.add("timezone", FieldError::InvalidFormat);
    }
    if let Some(a) = address {
        errors.check_length("locationAddress", a, 0, 500);
    }
    if let Some(u) = url {
        validation::check_url(errors, "locationUrl", u);
    }
}

fn check_settings(errors: &mut FieldErrors, settings: Option<&serde_json::Value>) {
    if let Some(settings) = settings {
        domain::validation::check_stored_object(errors, "settings", settings, 65_536);
    }
}

/// A cover must be an image uploaded in the caller's organization (422 otherwise).
async fn require_cover(state: &AppState, tenant: TenantId, cover: Uuid) -> Result<(), ApiError> {
    crate::media::attachable::require(
        state,
        Service::Events,
        "coverImageId",
        cover,
        Holder::Organization(tenant),
    )
    .await
}

/// Events the caller may see: organizers their tenant's, everyone published public ones,
/// group members their groups' ones. `organizationId` keeps one organization's events (its
/// own members see every status; the visibility rules are the same for everyone else).
/// Public: no token needed; a token that is not valid is refused.
#[utoipa::path(get, path = "/api/v1/events", tag = "events", params(PageParams, EventQuery),
    responses((status = 200, description = "a page of EventDto"), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    paging: PageParams,
    Query(query): Query<EventQuery>,
) -> Result<Json<Page<EventDto>>, ApiError> {
    let page = paging.resolve(&events::SORT)?;
    if let Some(search) = &query.search {
        let mut errors = FieldErrors::new();
        errors.check_length("search", search, 0, 200);
        errors.into_result()?;
    }
    let filter = EventFilter {
        status: query.status,
        organizer_id: query.organizer_id,
        organization_id: query.organization_id,
        starts_after: query.starts_after,
        search: query.search,
    };
    Ok(Json(
        events::list(&state.db, caller.scope(), &filter, &page, state.clock.now())
            .await?
            .map(Into::into),
    ))
}

/// Creates a DRAFT event (OWNER or MODERATOR); it starts in 2000 or later, and its cover is an
/// image uploaded in the organization.
#[utoipa::path(post, path = "/api/v1/events", tag = "events", request_body = CreateEventRequest,
    responses((status = 201, body = EventDto), (status = 400, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateEventRequest>,
) -> Result<(StatusCode, Json<EventDto>), ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let mut errors = FieldErrors::new();
    check_text(&mut errors, Some(&body.title), Some(&body.description));
    check_place(
        &mut errors,
        body.timezone.as_deref(),
        body.location_address.as_deref(),
        body.location_url.as_deref(),
    );
    check_settings(&mut errors, body.settings.as_ref());
    validation::check_start(&mut errors, body.starts_at);
    validation::check_times(&mut errors, body.starts_at, body.ends_at);
    if let Some(s) = &body.slug
        && !slug::is_valid(s)
    {
        errors.add("slug", FieldError::InvalidFormat);
    }
    errors.into_result()?;
    if let Some(cover) = body.cover_image_id {
        require_cover(&state, tenant, cover).await?;
    }
    let new = NewEvent {
        title: body.title.trim().to_string(),
        description: body.description,
        slug: body.slug,
        group_id: body.group_id,
        participants_visibility: body.participants_visibility.unwrap_or_default(),
        starts_at: body.starts_at,
        ends_at: body.ends_at,
        timezone: body.timezone.unwrap_or_else(|| "UTC".into()),
        location_type: body.location_type,
        location_address: body.location_address,
        location_url: body.location_url,
        cover_image_id: body.cover_image_id,
        settings: body.settings.unwrap_or_else(|| serde_json::json!({})),
    };
    let event = events::create(&state.db, tenant, user, &new, state.clock.now()).await?;
    Ok((StatusCode::CREATED, Json(event.into())))
}

/// Copies an event of the caller's organization (OWNER or MODERATOR) into a new DRAFT: its
/// details and the ticket types on offer, without registrations; moved to `startsAt` when given,
/// with its end and sales windows. The body may be `{}`.
#[utoipa::path(post, path = "/api/v1/events/{id}/copy", tag = "events", request_body = CopyEventRequest,
    responses((status = 201, body = EventDto), (status = 400, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)))]
pub async fn copy(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<CopyEventRequest>,
) -> Result<(StatusCode, Json<EventDto>), ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let mut errors = FieldErrors::new();
    check_text(&mut errors, body.title.as_deref(), None);
    if let Some(starts_at) = body.starts_at {
        validation::check_start(&mut errors, starts_at);
    }
    errors.into_result()?;
    let now = state.clock.now();
    let title = body.title.as_deref();
    let copy = events::copy(&state.db, tenant, user, id, title, body.starts_at, now).await?;
    Ok((StatusCode::CREATED, Json(copy.into())))
}

/// An event the caller may see.
#[utoipa::path(get, path = "/api/v1/events/{id}", tag = "events",
    responses((status = 200, body = EventDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<EventDto>, ApiError> {
    Ok(Json(
        events::get(&state.db, caller.scope(), id).await?.into(),
    ))
}

/// An event the caller may see, by its slug (the web front's readable address).
#[utoipa::path(get, path = "/api/v1/events/by-slug/{slug}", tag = "events",
    params(("slug" = String, Path, pattern = r"^(?!\.\.?$)[^\x00-\x1F\x7F/\\%]+$",
        description = "The event's slug. Any path segment the gateway lets through is looked up: no control characters, `/`, `\\` or `%`, and not `.` or `..`; an unknown slug is 404.")),
    responses((status = 200, body = EventDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get_by_slug(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> Result<Json<EventDto>, ApiError> {
    Ok(Json(
        events::get_by_slug(&state.db, caller.scope(), &slug)
            .await?
            .into(),
    ))
}

/// Changes an event of the caller's organization; final events cannot change.
#[utoipa::path(put, path = "/api/v1/events/{id}", tag = "events", request_body = UpdateEventRequest,
    responses((status = 200, body = EventDto), (status = 400, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<UpdateEventRequest>,
) -> Result<Json<EventDto>, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let mut errors = FieldErrors::new();
    check_text(
        &mut errors,
        body.title.as_deref(),
        body.description.as_deref(),
    );
    check_place(
        &mut errors,
        body.timezone.as_deref(),
        body.location_address.clone().flatten().as_deref(),
        body.location_url.clone().flatten().as_deref(),
    );
    check_settings(&mut errors, body.settings.as_ref());
    if let Some(starts_at) = body.starts_at {
        validation::check_start(&mut errors, starts_at);
    }
    errors.into_result()?;
    if let Some(Some(cover)) = body.cover_image_id {
        require_cover(&state, tenant, cover).await?;
    }
    let change = EventPatch {
        title: body.title.map(|t| t.trim().to_string()),
        description: body.description,
        group_id: body.group_id,
        participants_visibility: body.participants_visibility,
        starts_at: body.starts_at,
        ends_at: body.ends_at,
        timezone: body.timezone,
        location_type: body.location_type,
        location_address: body.location_address,
        location_url: body.location_url,
        cover_image_id: body.cover_image_id,
        settings: body.settings,
    };
    Ok(Json(
        events::update(&state.db, tenant, user, id, &change, state.clock.now())
            .await?
            .into(),
    ))
}

/// Deletes (soft) an event that is not published.
#[utoipa::path(delete, path = "/api/v1/events/{id}", tag = "events",
    responses((status = 204), (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    events::delete(&state.db, tenant, user, id, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn act(
    state: AppState,
    caller: Caller,
    id: Uuid,
    action: Action,
) -> Result<Json<EventDto>, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    Ok(Json(
        events::transition(&state.db, tenant, user, id, action, state.clock.now())
            .await?
            .into(),
    ))
}

/// Publishes a DRAFT event whose start is in the future.
#[utoipa::path(post, path = "/api/v1/events/{id}/publish", tag = "events",
    responses((status = 200, body = EventDto), (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn publish(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<EventDto>, ApiError> {
    act(state, caller, id, Action::Publish).await
}

/// Takes a PUBLISHED event back to DRAFT.
#[utoipa::path(post, path = "/api/v1/events/{id}/unpublish", tag = "events",
    responses((status = 200, body = EventDto), (status = 422, body = crate::error::ErrorBody)))]
pub async fn unpublish(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<EventDto>, ApiError> {
    act(state, caller, id, Action::Unpublish).await
}

/// Cancels a DRAFT or PUBLISHED event.
#[utoipa::path(post, path = "/api/v1/events/{id}/cancel", tag = "events",
    responses((status = 200, body = EventDto), (status = 422, body = crate::error::ErrorBody)))]
pub async fn cancel(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<EventDto>, ApiError> {
    act(state, caller, id, Action::Cancel).await
}

/// Marks a PUBLISHED event as held.
#[utoipa::path(post, path = "/api/v1/events/{id}/complete", tag = "events",
    responses((status = 200, body = EventDto), (status = 422, body = crate::error::ErrorBody)))]
pub async fn complete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<EventDto>, ApiError> {
    act(state, caller, id, Action::Complete).await
}
