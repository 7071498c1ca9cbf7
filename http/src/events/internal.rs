//! Routes of the events service for other services only (under `/internal/`, which the gateway
//! never forwards): how an event may be tracked, asked by analytics when its own projection of
//! events has not caught up with the outbox yet.

use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::state::AppState;
use crate::trust::ServiceCall;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use storage::events::catalog;
use uuid::Uuid;

/// The path of the tracking check, `{id}` being the event.
pub const TRACKING: &str = "/internal/events/{id}/tracking";

/// The answer: whose event it is and whether it is a draft.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrackingDto {
    /// The organization its records belong to.
    pub tenant_id: Uuid,
    /// Never published, or unpublished since: tracked for the organization's members only.
    pub draft: bool,
}

/// How a live event may be tracked; 404 for an unknown or deleted one.
pub async fn tracking(
    _caller: ServiceCall,
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
) -> Result<Json<TrackingDto>, ApiError> {
    let found = catalog::tracking_of(&state.db, id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(TrackingDto {
        tenant_id: found.tenant.as_uuid(),
        draft: found.draft,
    }))
}
