//! The signed-in user: profile, password, deletion.

use super::dto::{ChangePasswordRequest, UpdateUserRequest, UserDto};
use super::passwords;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use domain::ErrorCode;
use domain::identity::rules;
use domain::validation::FieldErrors;
use storage::identity::users::{self, ProfileChange};

/// The current user.
#[utoipa::path(get, path = "/api/v1/users/me", tag = "users", responses((status = 200, body = UserDto), (status = 401, body = crate::error::ErrorBody)))]
pub async fn me(State(state): State<AppState>, caller: Caller) -> Result<Json<UserDto>, ApiError> {
    let user = users::by_id(&state.db, caller.require_user()?)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized))?;
    Ok(Json(user.into()))
}

/// Updates the profile; publishes user.updated. The avatar must be the caller's own personal
/// image (422 otherwise).
#[utoipa::path(put, path = "/api/v1/users/me", tag = "users", request_body = UpdateUserRequest,
    responses((status = 200, body = UserDto), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)))]
pub async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<UpdateUserRequest>,
) -> Result<Json<UserDto>, ApiError> {
    let user = caller.require_user()?;
    let mut errors = FieldErrors::new();
    if let Some(first) = &body.first_name {
        rules::check_name(&mut errors, "firstName", first);
    }
    if let Some(last) = &body.last_name {
        rules::check_name(&mut errors, "lastName", last);
    }
    errors.into_result()?;
    if let Some(Some(avatar)) = body.avatar_id {
        crate::media::attachable::require(
            &state,
            domain::config::Service::Identity,
            "avatarId",
            avatar,
            domain::media::attachable::Holder::User(user),
        )
        .await?;
    }
    let change = ProfileChange {
        first_name: body.first_name.map(|s| s.trim().to_string()),
        last_name: body.last_name.map(|s| s.trim().to_string()),
        avatar_id: body.avatar_id,
    };
    let updated = users::update_profile(&state.db, user, &change, state.clock.now()).await?;
    Ok(Json(updated.into()))
}

/// Changes the password; every session ends and every outstanding reset link stops working.
/// A wrong current password counts toward the login lock, and a locked account is refused
/// (`account_locked`) as at login: a stolen access token must not become a way around the
/// lock to guess the password.
#[utoipa::path(put, path = "/api/v1/users/me/password", tag = "users", request_body = ChangePasswordRequest,
    responses((status = 204), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody)))]
pub async fn change_password(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<ChangePasswordRequest>,
) -> Result<StatusCode, ApiError> {
    let id = caller.require_user()?;
    let mut errors = FieldErrors::new();
    rules::check_password(&mut errors, "newPassword", &body.new_password);
    errors.into_result()?;
    let user = users::by_id(&state.db, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized))?;
    let now = state.clock.now();
    // A messenger-only account sets its first password without a current one.
    if let Some(hash) = user.password_hash.clone() {
        super::auth::check_password(&state, &user, hash, body.current_password, now).await?;
    }
    let hash = passwords::hash(body.new_password, state.config.auth.bcrypt_cost).await?;
    // Also starts the failed-attempt count over, as a successful login does.
    users::set_password(&state.db, id, &hash, now).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes the account (soft delete); every session ends.
#[utoipa::path(delete, path = "/api/v1/users/me", tag = "users",
    responses((status = 204), (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn delete(State(state): State<AppState>, caller: Caller) -> Result<StatusCode, ApiError> {
    users::soft_delete(&state.db, caller.require_user()?, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
