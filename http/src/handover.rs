//! The gateway holds a request through a hand-over instead of showing it to the client. While
//! an event's shard changes hands (its owner killed, paused, leaving, or a node joining), the
//! owner answers 503, refuses the connection or stops answering; a request the gateway may
//! send again is sent again — to the shard's new owner once the map names one — until the
//! hand-over budget (`Config::hand_over_wait`) is spent, and only then is the 503
//! passed on. What may be sent again: reads, and seat requests, which carry their idempotency
//! key into the seat's own transaction (a second copy answers with the first's registration);
//! and any request a node answered without running it (`events::owner::NOT_SERVED`: the shard
//! had just left it and nobody held it yet).

use actors::cluster::ShardMap;
use axum::http::{HeaderMap, Method};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// Whether a request to the events service may be sent again without effect: a read, or a
/// seat request with its idempotency key.
pub fn may_resend(method: &Method, path: &str, headers: &HeaderMap) -> bool {
    if *method == Method::GET || *method == Method::HEAD {
        return true;
    }
    *method == Method::POST
        && is_seat_request(path)
        && headers.contains_key(crate::idempotency::IDEMPOTENCY_KEY)
}

/// `POST /api/v1/events/{id}/registrations`.
fn is_seat_request(path: &str) -> bool {
    crate::events::owner::event_in_path(path).is_some()
        && path.trim_end_matches('/').ends_with("/registrations")
        && path.matches('/').count() == 5
}

/// Where a request goes in the map: the owner of the event it names; a read (which needs no
/// owner) to any member when the shard has none; other requests to any member.
pub fn target(map: &ShardMap, event: Option<Uuid>, read: bool) -> Option<Arc<str>> {
    let owner = event.map(|e| map.owner(domain::cluster::shard_of(e)));
    match owner {
        Some(Some(owner)) => Some(owner),
        Some(None) if !read => None,
        _ => map.any_member(),
    }
}

/// Resolves once the map no longer sends this request to `base`: the event's shard has
/// another owner (or none), or `base` is no longer a live member.
pub async fn moved_away(map: &ShardMap, event: Option<Uuid>, base: &str) {
    let mut changes = map.changes();
    loop {
        let still = match event {
            Some(e) => map
                .owner(domain::cluster::shard_of(e))
                .is_some_and(|owner| owner.trim_end_matches('/') == base),
            None => map.is_member(base),
        };
        if !still {
            return;
        }
        if changes.changed().await.is_err() {
            // The map stopped: nothing will move any more.
            std::future::pending::<()>().await;
        }
    }
}

/// Waits before the next attempt: until the map changes, or a pause that grows with the
/// attempts, whichever comes first, never past `deadline`.
pub async fn pause(map: &ShardMap, attempt: u32, deadline: Instant) {
    let step = Duration::from_millis(50 * u64::from(attempt.clamp(1, 8)));
    let until = (Instant::now() + step).min(deadline);
    let mut changes = map.changes();
    tokio::select! {
        _ = changes.changed() => {}
        _ = tokio::time::sleep_until(until) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_keyed_seat_requests_may_be_sent_again() {
        let event = Uuid::now_v7();
        let seats = format!("/api/v1/events/{event}/registrations");
        let mut keyed = HeaderMap::new();
        keyed.insert(
            crate::idempotency::IDEMPOTENCY_KEY,
            "0b4f3c9e-6a1d-4e8b-9a51-3f0b2c9d7e10".parse().unwrap(),
        );
        assert!(may_resend(&Method::POST, &seats, &keyed));
        assert!(!may_resend(&Method::POST, &seats, &HeaderMap::new()));
        assert!(may_resend(&Method::GET, &seats, &HeaderMap::new()));
        assert!(may_resend(
            &Method::HEAD,
            "/api/v1/events",
            &HeaderMap::new()
        ));
        // Other writes may have taken effect before a failure: the client decides.
        for path in [
            format!("/api/v1/events/{event}/publish"),
            format!("/api/v1/events/{event}/waitlist"),
            format!("/api/v1/events/{event}/registrations/export"),
            format!("/api/v1/registrations/{event}/check-in"),
            "/api/v1/events".to_string(),
        ] {
            assert!(!may_resend(&Method::POST, &path, &keyed), "{path}");
        }
        assert!(!may_resend(&Method::DELETE, &seats, &keyed));
        assert!(!may_resend(&Method::PUT, &seats, &keyed));
    }
}
