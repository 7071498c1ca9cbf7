//! Groups of an organization and joining them by code.

use super::dto::{
    CreateGroupRequest, GroupDto, GroupInviteDto, GroupMemberDto, UpdateGroupRequest, deep_link,
};
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::paging::PageParams;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use domain::ids::TenantId;
use domain::paging::Page;
use domain::validation::FieldErrors;
use storage::identity::groups;
use uuid::Uuid;

fn check(errors: &mut FieldErrors, name: Option<&str>, description: Option<&str>) {
    if let Some(name) = name {
        errors.check_length("name", name.trim(), 1, 255);
    }
    if let Some(d) = description {
        errors.check_length("description", d, 0, 5000);
    }
}

/// Groups of an organization, for its members.
#[utoipa::path(get, path = "/api/v1/organizations/{id}/groups", tag = "groups", params(PageParams),
    responses((status = 200, description = "a page of GroupDto"), (status = 403, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    paging: PageParams,
) -> Result<Json<Page<GroupDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&groups::SORT)?;
    Ok(Json(
        groups::list(&state.db, TenantId(id), user, &page)
            .await?
            .map(Into::into),
    ))
}

/// Creates a group (OWNER or MODERATOR); publishes group.created.
#[utoipa::path(post, path = "/api/v1/organizations/{id}/groups", tag = "groups", request_body = CreateGroupRequest,
    responses((status = 201, body = GroupDto), (status = 400, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<CreateGroupRequest>,
) -> Result<(StatusCode, Json<GroupDto>), ApiError> {
    let user = caller.require_user()?;
    let mut errors = FieldErrors::new();
    check(&mut errors, Some(&body.name), Some(&body.description));
    errors.into_result()?;
    let group = groups::create(
        &state.db,
        TenantId(id),
        user,
        body.name.trim(),
        &body.description,
        state.clock.now(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(group.into())))
}

/// A group, for members of its organization or of the group.
#[utoipa::path(get, path = "/api/v1/groups/{id}", tag = "groups",
    responses((status = 200, body = GroupDto), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<GroupDto>, ApiError> {
    let user = caller.require_user()?;
    Ok(Json(groups::get(&state.db, id, user).await?.into()))
}

/// Updates a group (OWNER or MODERATOR).
#[utoipa::path(put, path = "/api/v1/groups/{id}", tag = "groups", request_body = UpdateGroupRequest,
    responses((status = 200, body = GroupDto), (status = 400, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<UpdateGroupRequest>,
) -> Result<Json<GroupDto>, ApiError> {
    let user = caller.require_user()?;
    let mut errors = FieldErrors::new();
    check(
        &mut errors,
        body.name.as_deref(),
        body.description.as_deref(),
    );
    errors.into_result()?;
    let name = body.name.as_deref().map(str::trim);
    let group = groups::update(
        &state.db,
        id,
        user,
        name,
        body.description.as_deref(),
        state.clock.now(),
    )
    .await?;
    Ok(Json(group.into()))
}

/// Deletes a group (OWNER or MODERATOR).
#[utoipa::path(delete, path = "/api/v1/groups/{id}", tag = "groups",
    responses((status = 204), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    groups::delete(&state.db, id, user).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The group's invite code and messenger link (OWNER or MODERATOR).
#[utoipa::path(post, path = "/api/v1/groups/{id}/invite", tag = "groups",
    responses((status = 201, body = GroupInviteDto), (status = 403, body = crate::error::ErrorBody)))]
pub async fn invite(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<(StatusCode, Json<GroupInviteDto>), ApiError> {
    let user = caller.require_user()?;
    let group = groups::invite_code(&state.db, id, user).await?;
    Ok((
        StatusCode::CREATED,
        Json(GroupInviteDto {
            group_id: group.id,
            deep_link: deep_link(&state.config.messenger.bot_username, &group.invite_code),
            invite_code: group.invite_code,
        }),
    ))
}

/// Members of a group, for members of its organization.
#[utoipa::path(get, path = "/api/v1/groups/{id}/members", tag = "groups", params(PageParams),
    responses((status = 200, description = "a page of GroupMemberDto"), (status = 403, body = crate::error::ErrorBody)))]
pub async fn members(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    paging: PageParams,
) -> Result<Json<Page<GroupMemberDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&groups::MEMBER_SORT)?;
    Ok(Json(
        groups::members(&state.db, id, user, &page)
            .await?
            .map(Into::into),
    ))
}

/// Joins a group by its code; publishes group.member.added.
#[utoipa::path(post, path = "/api/v1/groups/join/{code}", tag = "groups",
    params(("code" = String, Path, pattern = r"^(?!\.\.?$)[^\x00-\x1F\x7F/\\%]+$",
        description = "The group code. Any path segment the gateway lets through is read: no control characters, `/`, `\\` or `%`, and not `.` or `..`; an unknown code is 404.")),
    responses((status = 200, body = GroupDto), (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)))]
pub async fn join(
    State(state): State<AppState>,
    caller: Caller,
    Path(code): Path<String>,
) -> Result<Json<GroupDto>, ApiError> {
    let user = caller.require_user()?;
    if code.len() > 32 {
        return Err(ApiError::not_found());
    }
    Ok(Json(
        groups::join(&state.db, code.trim(), user, state.clock.now())
            .await?
            .into(),
    ))
}
