//! The check identity and events make before they accept a media file id (`avatarId`,
//! `logoId`, `coverImageId`): the media service decides whether the file may be attached by
//! that user or organization. A service never reads another's schema, so when the media
//! service runs in another process it is asked over HTTP, signed as the calling service; in
//! the same process the storage function answers directly.

use super::internal::{ATTACHABLE, AttachableDto};
use crate::error::ApiError;
use crate::internal_call;
use crate::state::AppState;
use domain::config::Service;
use domain::error::Refusal;
use domain::media::attachable::Holder;
use domain::media::refusals::MediaRefusal;
use domain::validation::{FieldError, FieldErrors};
use std::time::Duration;
use uuid::Uuid;

/// How long the media service may take to answer before the request fails with 503.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Accepts `file` as the value of `field` only if `holder` may attach it; `caller` is the
/// service asking. Refused with 422 naming the field, the same answer whether the file does
/// not exist or belongs to someone else (ids of others cannot be probed); 503 when the media
/// service cannot be asked.
pub async fn require(
    state: &AppState,
    caller: Service,
    field: &str,
    file: Uuid,
    holder: Holder,
) -> Result<(), ApiError> {
    let attachable = if state.config.runs(Service::Media) {
        storage::media::files::attachable(&state.db, file, holder).await?
    } else {
        ask(state, caller, file, holder).await?
    };
    if attachable {
        Ok(())
    } else {
        Err(refused(field))
    }
}

/// The refusal: a business rule (422) whose details name the field, like a validation error.
fn refused(field: &str) -> ApiError {
    let refusal = MediaRefusal::NotAttachable;
    ApiError {
        fields: Some(FieldErrors::single(
            field,
            FieldError::Invalid(refusal.text()),
        )),
        ..ApiError::from(Refusal::from(refusal))
    }
}

fn unavailable(cause: &dyn std::fmt::Display) -> ApiError {
    tracing::warn!(error = %cause, "media service unreachable for an attachment check");
    ApiError::from(Refusal::from(MediaRefusal::Unavailable))
        .with_details(serde_json::json!({"service": Service::Media.name()}))
}

/// Asks the media service in another process.
async fn ask(
    state: &AppState,
    caller: Service,
    file: Uuid,
    holder: Holder,
) -> Result<bool, ApiError> {
    let query = match holder {
        Holder::User(user) => format!("user={user}"),
        Holder::Organization(tenant) => format!("tenant={tenant}"),
    };
    let path = ATTACHABLE.replace("{id}", &file.to_string());
    // A refused signature or a failing media service (a 404 included: the route answers
    // every id) means the check cannot be made, which is the media service's trouble, not
    // the client's.
    let answer: AttachableDto = internal_call::get(
        state,
        Service::Media,
        caller,
        &format!("{path}?{query}"),
        TIMEOUT,
    )
    .await
    .map_err(|e| unavailable(&e))?
    .ok_or_else(|| unavailable(&"media answered 404"))?;
    Ok(answer.attachable)
}
