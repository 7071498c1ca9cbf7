//! Organization requests: users submit, platform administrators review.

use super::dto::{
    CreateOrganizationRequestRequest, OrganizationRequestDto, RejectRequest, ReviewRequest,
};
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, MaybeJson, Path, Query};
use crate::paging::PageParams;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use domain::identity::requests::{RequestStatus, Review};
use domain::identity::rules;
use domain::ids::UserId;
use domain::paging::Page;
use domain::validation::{FieldError, FieldErrors};
use serde::Deserialize;
use storage::identity::{admins, requests};
use uuid::Uuid;

/// Filter of the request list.
#[derive(Deserialize, utoipa::IntoParams)]
pub struct RequestFilter {
    /// Only requests in this state.
    pub status: Option<RequestStatus>,
}

async fn require_admin(state: &AppState, user: UserId) -> Result<(), ApiError> {
    if admins::is_admin(&state.db, user).await? {
        Ok(())
    } else {
        Err(ApiError::new(domain::ErrorCode::Forbidden))
    }
}

/// Submits a request to create an organization.
#[utoipa::path(post, path = "/api/v1/organization-requests", tag = "organizations", request_body = CreateOrganizationRequestRequest,
    responses((status = 201, body = OrganizationRequestDto), (status = 400, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn submit(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<CreateOrganizationRequestRequest>,
) -> Result<(StatusCode, Json<OrganizationRequestDto>), ApiError> {
    let user = caller.require_user()?;
    let name = body.name.trim();
    let slug = body.slug.trim();
    let mut errors = FieldErrors::new();
    errors.check_length("name", name, 1, 255);
    rules::check_slug(&mut errors, "slug", slug);
    if let Some(d) = &body.description {
        errors.check_length("description", d, 0, 5000);
    }
    errors.into_result()?;
    let request = requests::submit(
        &state.db,
        user,
        name,
        slug,
        body.description.as_deref(),
        state.clock.now(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(request.into())))
}

/// Lists requests: all for administrators (filterable by status), one's own otherwise.
#[utoipa::path(get, path = "/api/v1/organization-requests", tag = "organizations", params(PageParams, RequestFilter),
    responses((status = 200, description = "a page of OrganizationRequestDto"), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    paging: PageParams,
    Query(filter): Query<RequestFilter>,
) -> Result<Json<Page<OrganizationRequestDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&requests::SORT)?;
    let only_of = if admins::is_admin(&state.db, user).await? {
        None
    } else {
        Some(user)
    };
    let found = requests::list(&state.db, only_of, filter.status, &page).await?;
    Ok(Json(found.map(Into::into)))
}

/// A request, for its requester and administrators.
#[utoipa::path(get, path = "/api/v1/organization-requests/{id}", tag = "organizations",
    responses((status = 200, body = OrganizationRequestDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<OrganizationRequestDto>, ApiError> {
    let user = caller.require_user()?;
    let request = requests::get(&state.db, id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    if request.user_id != user && !admins::is_admin(&state.db, user).await? {
        // Someone else's request is not revealed.
        return Err(ApiError::not_found());
    }
    Ok(Json(request.into()))
}

/// Approves a pending request (administrators); the slug is kept for the requester 7 days.
#[utoipa::path(post, path = "/api/v1/organization-requests/{id}/approve", tag = "organizations", request_body(content = Option<ReviewRequest>),
    responses((status = 200, body = OrganizationRequestDto), (status = 403, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn approve(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    MaybeJson(body): MaybeJson<ReviewRequest>,
) -> Result<Json<OrganizationRequestDto>, ApiError> {
    let admin = caller.require_user()?;
    require_admin(&state, admin).await?;
    let comment = body
        .and_then(|b| b.reason)
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty());
    let reviewed = requests::review(
        &state.db,
        id,
        admin,
        Review::Approve,
        comment.as_deref(),
        state.clock.now(),
    )
    .await?;
    Ok(Json(reviewed.into()))
}

/// Rejects a pending request with a reason (administrators).
#[utoipa::path(post, path = "/api/v1/organization-requests/{id}/reject", tag = "organizations", request_body = RejectRequest,
    responses((status = 200, body = OrganizationRequestDto), (status = 400, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn reject(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<RejectRequest>,
) -> Result<Json<OrganizationRequestDto>, ApiError> {
    let admin = caller.require_user()?;
    require_admin(&state, admin).await?;
    // A missing or null reason is refused as required while reading the body.
    let reason = body.reason.trim().to_string();
    if reason.is_empty() {
        return Err(ApiError::field("reason", FieldError::Required));
    }
    let reviewed = requests::review(
        &state.db,
        id,
        admin,
        Review::Reject,
        Some(&reason),
        state.clock.now(),
    )
    .await?;
    Ok(Json(reviewed.into()))
}
