//! Requests about one event belong to the events node that owns the event's shard. A node
//! that receives one for a shard it does not hold (the gateway's map was a moment behind)
//! forwards it once, as it came, to the owner the database names; a request forwarded
//! already, or one for a shard without owner, is answered 503 with Retry-After, and the
//! client's retry (same idempotency key) lands wherever the shard is by then. Reads need no
//! owner (they read the database): any node answers them, in a hand-over too.

use crate::error::ApiError;
use crate::state::AppState;
use crate::trust::{Trust, Verified};
use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::cluster::shard_of;
use std::sync::OnceLock;
use std::time::Duration;
use uuid::Uuid;

/// Set on a request one node forwards to another; a client's copy is stripped by the gateway
/// (every `x-internal-` header is).
pub const FORWARDED_BY: HeaderName = HeaderName::from_static("x-internal-forwarded-by");

/// Set on a node's 503 for a request it did not serve because the event's shard is not its
/// (and no owner took the forwarded copy): nothing of the request ran, so the gateway may send
/// any request so answered again, a write too, once the map names the new owner.
pub const NOT_SERVED: HeaderName = HeaderName::from_static("x-internal-not-served");

/// A 503 for a request that did not run here: the shard is in hand-over.
fn moved(why: &str) -> Response {
    let mut response = ApiError::moved(&why).into_response();
    response
        .headers_mut()
        .insert(NOT_SERVED, HeaderValue::from_static("moved"));
    response
}

/// The event a path is about: `/api/v1/events/{id}` and everything below it.
pub fn event_in_path(path: &str) -> Option<Uuid> {
    let mut segments = path.trim_start_matches('/').split('/');
    match (
        segments.next(),
        segments.next(),
        segments.next(),
        segments.next(),
    ) {
        (Some("api"), Some("v1"), Some("events"), Some(id)) => Uuid::parse_str(id).ok(),
        _ => None,
    }
}

fn client(state: &AppState) -> &'static reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(|| {
        crate::proxy::client(Duration::from_millis(
            state.config.gateway.forward_timeout_ms,
        ))
    })
}

/// Middleware of the events routes: serve what this node owns, forward the rest once.
pub async fn route_to_owner(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let Some(event) = event_in_path(request.uri().path()) else {
        return next.run(request).await;
    };
    let read = request.method() == Method::GET || request.method() == Method::HEAD;
    if read || state.ticketing.holds(event) {
        return next.run(request).await;
    }
    // Boxed: forwarding's futures are kilobytes, which inline would size (and every layer
    // around this one move) the future of each request this node serves itself.
    Box::pin(forward(state, request, event)).await
}

/// Sends a request for an event of a shard held elsewhere to the shard's owner, once.
async fn forward(state: AppState, request: Request, event: Uuid) -> Response {
    let shard = shard_of(event);
    if request.headers().contains_key(&FORWARDED_BY) {
        return moved(&format!(
            "forwarded once already; shard {shard} not held here"
        ));
    }
    let owner = match storage::cluster::owner_address(&state.db, shard).await {
        Ok(Some(owner)) => owner,
        Ok(None) => return moved(&format!("shard {shard} has no owner")),
        Err(e) => return ApiError::from(e).into_response(),
    };
    let (parts, body) = request.into_parts();
    let Ok(body) = to_bytes(body, crate::proxy::MAX_FORWARDED_BODY).await else {
        return ApiError::new(ErrorCode::PayloadTooLarge).into_response();
    };
    // A gateway's request keeps the gateway's assertion (it covers the same request); one from
    // the gateway of this very process carries none and is signed as it would have been.
    let trust = parts
        .extensions
        .get::<Verified>()
        .is_none()
        .then(|| Trust::from_config(&state.config));
    let by = HeaderValue::from_str(state.ticketing.ownership().node())
        .unwrap_or(HeaderValue::from_static("unnamed"));
    tracing::debug!(%event, %shard, %owner, "forwarding to the shard's owner");
    crate::proxy::send(
        client(&state),
        owner.trim_end_matches('/'),
        "events",
        &parts,
        body,
        trust.as_ref(),
        &[(FORWARDED_BY, by)],
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_found_in_their_paths() {
        let id = Uuid::now_v7();
        assert_eq!(event_in_path(&format!("/api/v1/events/{id}")), Some(id));
        assert_eq!(
            event_in_path(&format!("/api/v1/events/{id}/registrations")),
            Some(id)
        );
        assert_eq!(event_in_path("/api/v1/events"), None);
        assert_eq!(
            event_in_path("/api/v1/events/not-an-id/registrations"),
            None
        );
        assert_eq!(event_in_path(&format!("/api/v1/registrations/{id}")), None);
    }
}
