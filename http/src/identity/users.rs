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

/// Updates the profile; publishes user.updated.
#[utoipa::path(put, path = "/api/v1/users/me", tag = "users", request_body = UpdateUserRequest,
    responses((status = 200, body = UserDto), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody)))]
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
    let change = ProfileChange {
        first_name: body.first_name.map(|s| s.trim().to_string()),
        last_name: body.last_name.map(|s| s.trim().to_string()),
        avatar_id: body.avatar_id,
    };
    let updated = users::update_profile(&state.db, user, &change, state.clock.now()).await?;
    Ok(Json(updated.into()))
}

/// Changes the password; every session ends.
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
    let current_ok = match user.password_hash {
        Some(hash) => passwords::verify(body.current_password, hash).await,
        // A messenger-only account sets its first password without a current one.
        None => true,
    };
    if !current_ok {
        return Err(ApiError::new(ErrorCode::InvalidCredentials));
    }
    let hash = passwords::hash(body.new_password, state.config.auth.bcrypt_cost).await?;
    users::set_password(&state.db, id, &hash, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Deletes the account (soft delete); every session ends.
#[utoipa::path(delete, path = "/api/v1/users/me", tag = "users",
    responses((status = 204), (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn delete(State(state): State<AppState>, caller: Caller) -> Result<StatusCode, ApiError> {
    users::soft_delete(&state.db, caller.require_user()?, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
