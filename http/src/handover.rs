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

/// Where the map sends a request: the owner of the event it names; a read (which needs no
/// owner) to any member when the shard has none; a request about no event to any member; other
/// requests nowhere until the shard has an owner.
enum Destination {
    Owner(Arc<str>),
    AnyMember,
    Nowhere,
}

fn destination(map: &ShardMap, event: Option<Uuid>, read: bool) -> Destination {
    match event.map(|e| map.owner(domain::cluster::shard_of(e))) {
        Some(Some(owner)) => Destination::Owner(owner),
        Some(None) if !read => Destination::Nowhere,
        _ => Destination::AnyMember,
    }
}

/// The address a request goes to now (`destination`), members taken in turn.
pub fn target(map: &ShardMap, event: Option<Uuid>, read: bool) -> Option<Arc<str>> {
    match destination(map, event, read) {
        Destination::Owner(owner) => Some(owner),
        Destination::AnyMember => map.any_member(),
        Destination::Nowhere => None,
    }
}

/// Whether the map would still send this request to `base`.
///
/// Both this and `target` read `destination`: a request sent where `target` chose, and found
/// "moved" at once, would be sent again without a pause, over and over. A read of an unowned
/// shard (its owner's leases lapsed in a burst) did exactly that when "moved" was judged by the
/// owner alone — millions of sendings a minute, the gateway's memory growing by gigabytes.
pub fn still_sends_to(map: &ShardMap, event: Option<Uuid>, read: bool, base: &str) -> bool {
    let base = base.trim_end_matches('/');
    match destination(map, event, read) {
        Destination::Owner(owner) => owner.trim_end_matches('/') == base,
        Destination::AnyMember => map.is_member(base),
        Destination::Nowhere => false,
    }
}

/// Resolves once the map no longer sends this request to `base` (`still_sends_to`): the
/// event's shard has another owner, or `base` is no longer a live member.
pub async fn moved_away(map: &ShardMap, event: Option<Uuid>, read: bool, base: &str) {
    let mut changes = map.changes();
    while still_sends_to(map, event, read, base) {
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
    use domain::cluster::{SHARDS, shard_of};

    /// A map of members `a` and `b` where `event`'s shard is owned by `owner`.
    fn map(event: Uuid, owner: Option<&str>) -> ShardMap {
        let map = ShardMap::new("fingerprint");
        let mut owners = vec![None; usize::from(SHARDS)];
        owners[usize::from(shard_of(event).0)] = owner.map(Arc::from);
        map.show(owners, vec![Arc::from("http://a"), Arc::from("http://b")]);
        map
    }

    #[test]
    fn wherever_target_sends_a_request_the_map_still_sends_it_until_it_changes() {
        let event = Uuid::now_v7();
        for owner in [Some("http://a"), Some("http://b/"), None] {
            let map = map(event, owner);
            for about in [Some(event), None] {
                for read in [true, false] {
                    // Members are taken in turn: ask enough times to meet each.
                    for _ in 0..4 {
                        if let Some(base) = target(&map, about, read) {
                            assert!(
                                still_sends_to(&map, about, read, &base),
                                "owner {owner:?}, event {about:?}, read {read}: sent to {base} and moved at once"
                            );
                        }
                    }
                }
            }
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_read_of_an_unowned_shard_is_held_at_its_member_until_the_shard_is_owned() {
        let event = Uuid::now_v7();
        let map = map(event, None);
        let base = target(&map, Some(event), true).unwrap();
        let waiting = moved_away(&map, Some(event), true, &base);
        tokio::pin!(waiting);
        assert!(
            tokio::time::timeout(Duration::from_secs(5), &mut waiting)
                .await
                .is_err(),
            "a read sent to a live member does not move while the shard has no owner"
        );
        // The shard is owned by the other member: the read goes there.
        let other = if &*base == "http://a" {
            "http://b"
        } else {
            "http://a"
        };
        let mut owners = vec![None; usize::from(SHARDS)];
        owners[usize::from(shard_of(event).0)] = Some(Arc::from(other));
        map.show(owners, vec![Arc::from("http://a"), Arc::from("http://b")]);
        tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("moved once the shard has another owner");
        assert_eq!(target(&map, Some(event), true).as_deref(), Some(other));
    }

    #[test]
    fn a_write_moves_when_its_owner_changes_or_leaves() {
        let event = Uuid::now_v7();
        let owned = map(event, Some("http://a"));
        assert!(still_sends_to(&owned, Some(event), false, "http://a/"));
        assert!(!still_sends_to(&owned, Some(event), false, "http://b"));
        let unowned = map(event, None);
        assert!(!still_sends_to(&unowned, Some(event), false, "http://a"));
        // A request about no event stays with a live member, not with a departed one.
        assert!(still_sends_to(&unowned, None, false, "http://b"));
        assert!(!still_sends_to(&unowned, None, true, "http://c"));
    }

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
