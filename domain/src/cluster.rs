//! Where an event's actors live in a cluster. Events are spread over a fixed set of shards by
//! their id; each shard is owned by one events node at a time, chosen among the live members by
//! rendezvous hashing, so a member joining or leaving moves only the shards it gains or loses.
//! Both functions are plain hashing, the same on every node and in PostgreSQL.

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// How many shards there are; fixed for the life of an installation (a shard is a byte).
pub const SHARDS: u16 = 256;

/// One of the `SHARDS` slices of the events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShardId(pub u8);

impl ShardId {
    /// Every shard, in order.
    pub fn all() -> impl Iterator<Item = ShardId> {
        (0..=u8::MAX).map(ShardId)
    }

    /// The number PostgreSQL stores (`smallint`).
    pub fn as_i16(self) -> i16 {
        i16::from(self.0)
    }
}

impl std::fmt::Display for ShardId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The shard of an event: the first byte of the SHA-256 of its id's 16 bytes. PostgreSQL
/// computes the same as `get_byte(sha256(uuid_send(id)), 0)`.
pub fn shard_of(event: Uuid) -> ShardId {
    ShardId(Sha256::digest(event.as_bytes())[0])
}

/// How much `node` wants `shard`: the highest score among the live members owns it.
fn score(node: &str, shard: ShardId) -> u64 {
    let mut hash = Sha256::new();
    hash.update(node.as_bytes());
    hash.update([0, shard.0]);
    let digest = hash.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The member that should own `shard` (rendezvous hashing); none without members. Ties, which
/// need equal 64-bit scores, go to the smaller name so every node agrees.
pub fn owner_of(shard: ShardId, members: &[String]) -> Option<&str> {
    members
        .iter()
        .map(|m| (score(m, shard), std::cmp::Reverse(m.as_str())))
        .max()
        .map(|(_, std::cmp::Reverse(m))| m)
}

/// A live member as far as the cluster's secrets go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sworn {
    /// Its name.
    pub node: String,
    /// When it joined.
    pub joined_at: chrono::DateTime<chrono::Utc>,
    /// Its fingerprint of the cluster secrets.
    pub fingerprint: String,
    /// Whether its clock agrees with the database's (`crate::clock::too_far_off`): a member
    /// whose clock is off keeps its secrets' standing but gets no share.
    pub clock_right: bool,
}

/// The members that share the shards: those holding the secrets of the longest-standing live
/// member (the earliest to join; by name on a tie). A node started with other secrets (left
/// over from an earlier start, or misconfigured) could not authenticate what the gateway
/// sends it, so it takes no shard, whoever joined first; and a node joining with new secrets
/// does not take over a running cluster by itself. Names, in order.
pub fn sworn_in(members: &[Sworn]) -> Vec<String> {
    let Some(first) = members
        .iter()
        .min_by(|a, b| (a.joined_at, &a.node).cmp(&(b.joined_at, &b.node)))
    else {
        return Vec::new();
    };
    let mut sworn: Vec<String> = members
        .iter()
        .filter(|m| m.fingerprint == first.fingerprint)
        .map(|m| m.node.clone())
        .collect();
    sworn.sort();
    sworn
}

/// The members the shards are shared among: those sworn in (`sworn_in`) whose clock is right.
/// Names, in order.
pub fn sharing(members: &[Sworn]) -> Vec<String> {
    let sworn = sworn_in(members);
    let mut sharing: Vec<String> = members
        .iter()
        .filter(|m| m.clock_right && sworn.contains(&m.node))
        .map(|m| m.node.clone())
        .collect();
    sharing.sort();
    sharing
}

/// The shards `node` should own among `members`.
pub fn share_of(node: &str, members: &[String]) -> Vec<ShardId> {
    ShardId::all()
        .filter(|s| owner_of(*s, members) == Some(node))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_standing_members_secrets_decide_who_shares_the_shards() {
        let at =
            |s: i64| chrono::DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap_or_default();
        let sworn = |node: &str, joined: i64, fingerprint: &str| Sworn {
            node: node.into(),
            joined_at: at(joined),
            fingerprint: fingerprint.into(),
            clock_right: true,
        };
        let cluster = vec![
            sworn("b", 0, "f"),
            sworn("a", 5, "f"),
            sworn("late", 9, "g"),
            sworn("c", 20, "f"),
        ];
        assert_eq!(sworn_in(&cluster), ["a", "b", "c"]);
        // Once the first members have gone, the one standing longest decides.
        assert_eq!(sworn_in(&cluster[2..]), ["late"]);
        // A tie goes by name.
        assert_eq!(sworn_in(&[sworn("y", 0, "g"), sworn("x", 0, "f")]), ["x"]);
        assert!(sworn_in(&[]).is_empty());
        // A member whose clock is off keeps the secrets' standing but gets no share.
        let mut off = cluster.clone();
        off[0].clock_right = false;
        assert_eq!(sworn_in(&off), ["a", "b", "c"]);
        assert_eq!(sharing(&off), ["a", "c"]);
        assert_eq!(sharing(&cluster), ["a", "b", "c"]);
    }

    fn members(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn an_event_has_one_stable_shard() {
        let id: Uuid = "0190f6b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b".parse().unwrap();
        assert_eq!(shard_of(id), shard_of(id));
        // The value PostgreSQL computes for this id (get_byte(sha256(uuid_send(id)), 0)).
        assert_eq!(shard_of(id), ShardId(Sha256::digest(id.as_bytes())[0]));
        let spread: std::collections::HashSet<ShardId> =
            (0..5000).map(|_| shard_of(Uuid::now_v7())).collect();
        assert!(
            spread.len() > 240,
            "time-ordered ids still spread: {}",
            spread.len()
        );
    }

    #[test]
    fn every_shard_has_exactly_one_owner_and_shares_are_fair() {
        let three = members(&["events-a", "events-b", "events-c"]);
        let shares: Vec<usize> = three.iter().map(|m| share_of(m, &three).len()).collect();
        assert_eq!(shares.iter().sum::<usize>(), usize::from(SHARDS));
        for share in &shares {
            assert!((50..=120).contains(share), "{shares:?}");
        }
        assert_eq!(owner_of(ShardId(7), &[]), None);
    }

    #[test]
    fn a_member_leaving_moves_only_its_own_shards() {
        let three = members(&["events-a", "events-b", "events-c"]);
        let two = members(&["events-a", "events-c"]);
        for shard in ShardId::all() {
            let before = owner_of(shard, &three).unwrap();
            let after = owner_of(shard, &two).unwrap();
            if before != "events-b" {
                assert_eq!(before, after, "shard {shard} moved without need");
            }
        }
        // And joining takes only what the newcomer wins.
        let four = members(&["events-a", "events-b", "events-c", "events-d"]);
        for shard in ShardId::all() {
            let after = owner_of(shard, &four).unwrap();
            if after != "events-d" {
                assert_eq!(owner_of(shard, &three).unwrap(), after);
            }
        }
    }

    #[test]
    fn the_order_members_are_listed_in_does_not_matter() {
        let a = members(&["x", "y", "z"]);
        let b = members(&["z", "x", "y"]);
        for shard in ShardId::all() {
            assert_eq!(owner_of(shard, &a), owner_of(shard, &b));
        }
    }
}
