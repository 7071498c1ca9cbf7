//! Which organization a tracked view belongs to, and whether the caller may track it at all.
//! Analytics' own projection (`analytics::tracked`) answers almost every view, but it follows
//! the events service's outbox through the broker, so under load it learns of an event (or of
//! its publication) after the event's pages are already being looked at. A view it cannot
//! place is therefore asked of the events service itself, which a service may do through its
//! API: directly in this process, signed over HTTP otherwise. The view of an event that exists
//! is never refused because the projection lags; when the events service cannot be asked, the
//! answer is 503 with Retry-After (the client may send it again), not a 404 that loses it.

use super::is_member;
use crate::context::Caller;
use crate::error::ApiError;
use crate::events::internal::{TRACKING, TrackingDto};
use crate::internal_call;
use crate::state::AppState;
use analytics::tracked::{self, TrackedEvent};
use domain::config::Service;
use domain::ids::TenantId;
use std::time::Duration;
use uuid::Uuid;

/// How long the events service may take to answer: a view is a small thing to hold a client
/// up for, and a 503 tells it to send the view again.
const TIMEOUT: Duration = Duration::from_secs(2);

/// The organization whose records a view of `event` by `caller` goes to; 404 when the event
/// does not exist or is a draft of an organization the caller is not a member of (a draft's
/// id cannot be probed from outside).
pub async fn tenant_of(
    state: &AppState,
    caller: &Caller,
    event: Uuid,
) -> Result<TenantId, ApiError> {
    let trackable = |e: &TrackedEvent| e.trackable_by(is_member(caller, e.tenant));
    if let Some(known) = tracked::find(&state.db, event).await?
        && trackable(&known)
    {
        return Ok(known.tenant);
    }
    // Unknown to the projection, or a draft to this caller: either may be the lag (not
    // created here yet, the publication not applied yet), so the events service decides.
    // Only these views pay for the question; the others never leave the projection.
    match ask_events(state, event).await? {
        Some(current) if trackable(&current) => {
            tracing::debug!(%event, "view placed by the events service ahead of the projection");
            Ok(current.tenant)
        }
        _ => Err(ApiError::not_found()),
    }
}

/// The events service's answer for `event`: in this process from its storage, else over HTTP.
async fn ask_events(state: &AppState, event: Uuid) -> Result<Option<TrackedEvent>, ApiError> {
    if state.config.runs(Service::Events) {
        let found = storage::events::catalog::tracking_of(&state.db, event).await?;
        return Ok(found.map(|t| TrackedEvent {
            tenant: t.tenant,
            draft: t.draft,
        }));
    }
    let path = TRACKING.replace("{id}", &event.to_string());
    let answer: Option<TrackingDto> =
        internal_call::get(state, Service::Events, Service::Analytics, &path, TIMEOUT)
            .await
            .map_err(|e| unavailable(&e))?;
    Ok(answer.map(|answer| TrackedEvent {
        tenant: TenantId(answer.tenant_id),
        draft: answer.draft,
    }))
}

fn unavailable(cause: &dyn std::fmt::Display) -> ApiError {
    tracing::warn!(error = %cause, "events service unreachable for a tracked view");
    ApiError::unavailable().with_details(serde_json::json!({"service": Service::Events.name()}))
}
