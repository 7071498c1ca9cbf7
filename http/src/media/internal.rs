//! Routes of the media service for other services only (under `/internal/`, which the gateway
//! never forwards): whether a file may be attached to something a user or an organization
//! owns, asked by identity and events before they accept an avatar, logo or cover.

use crate::error::ApiError;
use crate::extract::{Json, Path, Query};
use crate::state::AppState;
use crate::trust::ServiceCall;
use axum::extract::State;
use domain::ids::{TenantId, UserId};
use domain::media::attachable::Holder;
use domain::media::refusals::MediaFieldText;
use domain::validation::FieldError;
use serde::{Deserialize, Serialize};
use storage::media::files;
use uuid::Uuid;

/// The path of the attachability check, `{id}` being the file.
pub const ATTACHABLE: &str = "/internal/media/files/{id}/attachable";

/// Who would hold the attachment: exactly one of the two.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HolderQuery {
    /// A user, for an avatar.
    pub user: Option<Uuid>,
    /// An organization, for a logo or a cover.
    pub tenant: Option<Uuid>,
}

/// The answer.
#[derive(Serialize, Deserialize)]
pub struct AttachableDto {
    /// Whether the file exists and may be attached by that holder. Unknown files and files of
    /// someone else both answer false.
    pub attachable: bool,
}

/// Whether a file may be attached by a user (`?user=`) or an organization (`?tenant=`).
pub async fn attachable(
    _caller: ServiceCall,
    State(state): State<AppState>,
    Path(id): Path<Uuid>,
    Query(query): Query<HolderQuery>,
) -> Result<Json<AttachableDto>, ApiError> {
    let holder = match (query.user, query.tenant) {
        (Some(user), None) => Holder::User(UserId(user)),
        (None, Some(tenant)) => Holder::Organization(TenantId(tenant)),
        _ => {
            return Err(ApiError::field(
                "user",
                FieldError::from(MediaFieldText::OneHolder),
            ));
        }
    };
    let attachable = files::attachable(&state.db, id, holder).await?;
    Ok(Json(AttachableDto { attachable }))
}
