//! Organizations, their members and invites.

use super::dto::{
    AccessTokenDto, CreateInviteRequest, CreateOrganizationRequest, InviteDto, MemberDto,
    OrganizationDto, UpdateMemberRequest, UpdateOrganizationRequest,
};
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, MaybeJson, Path};
use crate::paging::PageParams;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::ids::{TenantId, UserId};
use domain::media::attachable::Holder;
use domain::paging::Page;
use domain::roles::Role;
use domain::validation::FieldErrors;
use serde::Serialize;
use storage::identity::invites::PendingInvite;
use storage::identity::organizations::{self, OrganizationChange};
use storage::identity::{invites, members, sessions};
use utoipa::ToSchema;
use uuid::Uuid;

/// The caller's organizations.
#[utoipa::path(get, path = "/api/v1/organizations", tag = "organizations", params(PageParams),
    responses((status = 200, description = "a page of OrganizationDto"), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
    paging: PageParams,
) -> Result<Json<Page<OrganizationDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&organizations::SORT)?;
    let found = organizations::list_mine(&state.db, user, &page).await?;
    Ok(Json(
        found.map(|(org, role)| OrganizationDto::new(org, role)),
    ))
}

/// Creates the organization from the caller's approved request; the caller becomes OWNER.
#[utoipa::path(post, path = "/api/v1/organizations", tag = "organizations", request_body(content = Option<CreateOrganizationRequest>),
    responses((status = 201, body = OrganizationDto), (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    MaybeJson(body): MaybeJson<CreateOrganizationRequest>,
) -> Result<(StatusCode, Json<OrganizationDto>), ApiError> {
    let user = caller.require_user()?;
    let request_id = body.and_then(|b| b.request_id);
    let org =
        organizations::create_from_request(&state.db, user, request_id, state.clock.now()).await?;
    Ok((
        StatusCode::CREATED,
        Json(OrganizationDto::new(org, Role::Owner)),
    ))
}

/// An organization, for its members.
#[utoipa::path(get, path = "/api/v1/organizations/{id}", tag = "organizations",
    responses((status = 200, body = OrganizationDto), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<OrganizationDto>, ApiError> {
    let user = caller.require_user()?;
    let (org, role) = organizations::get(&state.db, TenantId(id), user).await?;
    Ok(Json(OrganizationDto::new(org, role)))
}

/// Updates an organization (OWNER). `logoUrl` is an http(s) URL; `logoId` an image uploaded
/// in this organization (422 otherwise).
#[utoipa::path(put, path = "/api/v1/organizations/{id}", tag = "organizations", request_body = UpdateOrganizationRequest,
    responses((status = 200, body = OrganizationDto), (status = 400, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(body): Json<UpdateOrganizationRequest>,
) -> Result<Json<OrganizationDto>, ApiError> {
    let user = caller.require_user()?;
    let mut errors = FieldErrors::new();
    if let Some(name) = &body.name {
        errors.check_length("name", name.trim(), 1, 255);
    }
    if let Some(url) = &body.logo_url {
        domain::identity::rules::check_logo_url(&mut errors, "logoUrl", url);
    }
    if let Some(d) = &body.description {
        errors.check_length("description", d, 0, 5000);
    }
    if let Some(settings) = &body.settings {
        domain::validation::check_stored_object(&mut errors, "settings", settings, 65_536);
    }
    errors.into_result()?;
    if let Some(Some(logo)) = body.logo_id {
        // Only the owner learns whether a file may be the logo: anyone else is refused first,
        // so the check cannot tell strangers which files an organization has.
        let (_, role) = organizations::get(&state.db, TenantId(id), user).await?;
        if role != Role::Owner {
            return Err(ApiError::new(domain::ErrorCode::Forbidden));
        }
        crate::media::attachable::require(
            &state,
            domain::config::Service::Identity,
            "logoId",
            logo,
            Holder::Organization(TenantId(id)),
        )
        .await?;
    }
    let change = OrganizationChange {
        name: body.name.map(|n| n.trim().to_string()),
        description: body.description,
        logo_url: body.logo_url,
        logo_id: body.logo_id,
        settings: body.settings,
    };
    let org =
        organizations::update(&state.db, TenantId(id), user, &change, state.clock.now()).await?;
    Ok(Json(OrganizationDto::new(org, Role::Owner)))
}

/// Soft-deletes an organization (OWNER).
#[utoipa::path(delete, path = "/api/v1/organizations/{id}", tag = "organizations",
    responses((status = 204), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    organizations::delete(&state.db, TenantId(id), user, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// An access token for this organization, with the caller's role there.
#[utoipa::path(post, path = "/api/v1/organizations/{id}/switch", tag = "organizations",
    responses((status = 200, body = AccessTokenDto), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn switch(
    State(state): State<AppState>,
    caller: Caller,
    headers: axum::http::HeaderMap,
    Path(id): Path<Uuid>,
) -> Result<Json<AccessTokenDto>, ApiError> {
    let user_id = caller.require_user()?;
    let tenant = TenantId(id);
    // The user (and so the access version) is read before the role: a role change that
    // commits in between then leaves a token below the new version, refused at once, never
    // the old role at the new version.
    let user = storage::identity::users::by_id(&state.db, user_id)
        .await?
        .ok_or_else(|| ApiError::new(domain::ErrorCode::Unauthorized))?;
    let (_, role) = organizations::get(&state.db, tenant, user_id).await?;
    // The session of the presented token (its `sid`) remembers the organization, so the
    // next refresh stays in it.
    let session = bearer_session(&state, &headers);
    if let Some(session) = session {
        sessions::set_tenant(&state.db, user_id, session, tenant).await?;
    }
    let access = state
        .tokens
        .issue(
            user_id,
            user.email,
            Some(tenant),
            vec![role],
            session,
            user.access_version,
            state.clock.now(),
        )
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(AccessTokenDto {
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
        tenant_id: id,
        roles: vec![role],
    }))
}

fn bearer_session(state: &AppState, headers: &axum::http::HeaderMap) -> Option<Uuid> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = value.strip_prefix("Bearer ")?;
    state.tokens.verify(token.trim()).ok()?.sid
}

/// Members of an organization.
#[utoipa::path(get, path = "/api/v1/organizations/{id}/members", tag = "organizations", params(PageParams),
    responses((status = 200, description = "a page of MemberDto"), (status = 403, body = crate::error::ErrorBody)))]
pub async fn members(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    paging: PageParams,
) -> Result<Json<Page<MemberDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&members::SORT)?;
    let found = members::list(&state.db, TenantId(id), user, &page).await?;
    Ok(Json(found.map(Into::into)))
}

/// Creates an invite (OWNER or MODERATOR) valid 7 days, with its messenger deep link.
#[utoipa::path(post, path = "/api/v1/organizations/{id}/invite", tag = "organizations", request_body(content = Option<CreateInviteRequest>),
    responses((status = 201, body = InviteDto), (status = 403, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn invite(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    MaybeJson(body): MaybeJson<CreateInviteRequest>,
) -> Result<(StatusCode, Json<InviteDto>), ApiError> {
    let user = caller.require_user()?;
    let body = body.unwrap_or_default();
    let username = body
        .messenger_username
        .map(|u| u.trim().trim_start_matches('@').to_string())
        .filter(|u| !u.is_empty());
    if let Some(u) = &username {
        let mut errors = FieldErrors::new();
        errors.check_length("messengerUsername", u, 1, 100);
        errors.into_result()?;
    }
    let role = body.role.unwrap_or(Role::Moderator);
    let created = invites::create(
        &state.db,
        TenantId(id),
        user,
        role,
        username.as_deref(),
        state.clock.now(),
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(InviteDto::new(
            created,
            &state.config.messenger.bot_username,
        )),
    ))
}

/// An invite that still works (not used, not expired, not withdrawn): the invite as its
/// creation answered it, and when it was made.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingInviteDto {
    /// The invite.
    #[serde(flatten)]
    pub invite: super::dto::InviteDto,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}

impl PendingInviteDto {
    /// The invite with a link to `bot`.
    pub fn new(p: PendingInvite, bot: &str) -> Self {
        PendingInviteDto {
            invite: super::dto::InviteDto::new(p.invite, bot),
            created_at: p.created_at,
        }
    }
}

/// The organization's pending invites (unused and unexpired), newest first by default; for the
/// roles that create invites (OWNER or MODERATOR).
#[utoipa::path(get, path = "/api/v1/organizations/{id}/invites", tag = "organizations", params(PageParams),
    responses((status = 200, description = "a page of PendingInviteDto"), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn pending_invites(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    paging: PageParams,
) -> Result<Json<Page<PendingInviteDto>>, ApiError> {
    let user = caller.require_user()?;
    let page = paging.resolve(&invites::SORT)?;
    let found = invites::pending(&state.db, TenantId(id), user, state.clock.now(), &page).await?;
    let bot = &state.config.messenger.bot_username;
    Ok(Json(found.map(|p| PendingInviteDto::new(p, bot))))
}

/// Withdraws an unused invite (OWNER or MODERATOR): its code no longer lets anyone join.
#[utoipa::path(delete, path = "/api/v1/organizations/{id}/invites/{invite_id}", tag = "organizations",
    responses((status = 204), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn withdraw_invite(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, invite)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    invites::withdraw(&state.db, TenantId(id), user, invite).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Changes a member's role (OWNER).
#[utoipa::path(put, path = "/api/v1/organizations/{id}/members/{user_id}", tag = "organizations", request_body = UpdateMemberRequest,
    responses((status = 200, body = MemberDto), (status = 403, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn change_role(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, target)): Path<(Uuid, Uuid)>,
    Json(body): Json<UpdateMemberRequest>,
) -> Result<Json<MemberDto>, ApiError> {
    let user = caller.require_user()?;
    let org = TenantId(id);
    members::change_role(&state.db, org, user, UserId(target), body.role).await?;
    let member = members::get(&state.db, org, UserId(target))
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(member.into()))
}

/// Removes a member (OWNER), or leaves (any member on themself).
#[utoipa::path(delete, path = "/api/v1/organizations/{id}/members/{user_id}", tag = "organizations",
    responses((status = 204), (status = 403, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn remove_member(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, target)): Path<(Uuid, Uuid)>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    members::remove(
        &state.db,
        TenantId(id),
        user,
        UserId(target),
        state.clock.now(),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Accepts an invite: the caller becomes a member.
#[utoipa::path(post, path = "/api/v1/organizations/join/{code}", tag = "organizations",
    params(("code" = String, Path, pattern = r"^(?!\.\.?$)[^\x00-\x1F\x7F/\\%]+$",
        description = "The invite code. Any path segment the gateway lets through is read: no control characters, `/`, `\\` or `%`, and not `.` or `..`; an unknown code is 404.")),
    responses((status = 200, body = OrganizationDto), (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn join(
    State(state): State<AppState>,
    caller: Caller,
    Path(code): Path<String>,
) -> Result<Json<OrganizationDto>, ApiError> {
    let user = caller.require_user()?;
    if code.len() > 32 {
        return Err(ApiError::not_found());
    }
    let (org, role) = invites::join(&state.db, code.trim(), user, state.clock.now()).await?;
    Ok(Json(OrganizationDto::new(org, role)))
}
