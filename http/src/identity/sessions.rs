//! The signed-in user's sessions: each device or browser that signed in, to tell apart and to
//! sign out from elsewhere (a lost phone, a shared computer).

use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::Serialize;
use storage::identity::sessions::{self, SessionInfo};
use utoipa::ToSchema;
use uuid::Uuid;

/// One active session. The access token's `sid` claim names the caller's own.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDto {
    pub id: Uuid,
    /// What signed in (the browser's User-Agent), when known.
    pub client: Option<String>,
    /// When it signed in (at most the refresh tokens' lifetime ago).
    pub started_at: DateTime<Utc>,
    /// Its last refresh.
    pub last_used_at: DateTime<Utc>,
    /// When it ends unless used again.
    pub expires_at: DateTime<Utc>,
}

impl From<SessionInfo> for SessionDto {
    fn from(s: SessionInfo) -> Self {
        SessionDto {
            id: s.id,
            client: s.client,
            started_at: s.started_at,
            last_used_at: s.last_used_at,
            expires_at: s.expires_at,
        }
    }
}

/// The caller's active sessions, the most recently used first.
#[utoipa::path(get, path = "/api/v1/users/me/sessions", tag = "users",
    responses((status = 200, body = Vec<SessionDto>), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<SessionDto>>, ApiError> {
    let user = caller.require_user()?;
    let found = sessions::list(&state.db, user, state.clock.now()).await?;
    Ok(Json(found.into_iter().map(SessionDto::from).collect()))
}

/// Ends one of the caller's sessions, its access tokens included (they stop working within
/// the revocation feed's delay); 404 when it is not theirs or has ended.
#[utoipa::path(delete, path = "/api/v1/users/me/sessions/{id}", tag = "users",
    responses((status = 204), (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn end(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    sessions::end_one(&state.db, user, id, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}
