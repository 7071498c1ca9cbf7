//! Where an event's actors live in a cluster. Events are spread over a fixed set of shards by
//! their id; each shard is owned by one events node at a time, chosen among the live members by
//! rendezvous hashing, so a member joining or leaving moves only the shards it gains or loses,
//! then evened out by the events on sale in them (`placement`). All of it is plain computation
//! over what every member reads from the database, so the members agree.

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
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

/// What the members know of the shards when they share them out, read from the database in
/// one statement so every member reads the same.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Standing {
    /// How many events on sale (published, neither over nor deleted) each shard holds; a
    /// shard without any is absent.
    pub loads: BTreeMap<ShardId, u32>,
    /// Who holds each shard's unexpired lease now.
    pub holders: BTreeMap<ShardId, String>,
}

/// Who should own each shard among `members` (all of them, or none without members).
///
/// Rendezvous hashing alone spreads the shards evenly but not the events on sale in them: 64
/// events over three members landed 24/20/20, and the member with most sells its part last.
/// So shards with events on sale are shared out by their load, each member taking at most
/// its part (`ceil(events / members)`): first a loaded shard stays with the member holding it
/// while that member has room, so a publication or a member joining moves only what no
/// longer fits; then the rest go, heaviest first, to the first member in their rendezvous
/// order with room. Shards without events on sale follow rendezvous hashing.
///
/// When some shard fits nowhere (shards holding several events each can leave the room in
/// pieces), it goes to the least loaded member, in a plan made again letting each member keep
/// up to its part plus the heaviest shard's load less one; if, with that plan's holders, a
/// plan within the part can be made after all, that one is taken. Either way the plan, once
/// carried out, is made again the same while nothing changes: a plan within the part keeps
/// every shard where it is, and so does the looser plan (its loads are within its bound, and
/// the stricter plan still does not fit) — no shard flips back and forth between rounds.
pub fn placement(members: &[String], standing: &Standing) -> BTreeMap<ShardId, String> {
    let mut loaded: Vec<(ShardId, u64)> = standing
        .loads
        .iter()
        .filter(|(_, load)| **load > 0)
        .map(|(s, load)| (*s, u64::from(*load)))
        .collect();
    loaded.sort_by_key(|(s, load)| (std::cmp::Reverse(*load), *s));
    let total: u64 = loaded.iter().map(|(_, load)| load).sum();
    let part = total.div_ceil(members.len().max(1) as u64);
    let heaviest = loaded.first().map_or(0, |(_, load)| *load);
    if let Shared::Fitted(plan) = share_out(members, standing, &loaded, part, part, false) {
        return plan;
    }
    let looser = part + heaviest.saturating_sub(1);
    let plan = match share_out(members, standing, &loaded, part, looser, true) {
        Shared::Fitted(plan) | Shared::Forced(plan) => plan,
        // Only without members: nothing to share among.
        Shared::Overflowed => return BTreeMap::new(),
    };
    let carried_out = Standing {
        loads: standing.loads.clone(),
        holders: plan.clone(),
    };
    match share_out(members, &carried_out, &loaded, part, part, false) {
        Shared::Fitted(within) => within,
        _ => plan,
    }
}

/// How one attempt of `share_out` ended.
enum Shared {
    /// Every loaded shard fitted within the part.
    Fitted(BTreeMap<ShardId, String>),
    /// Some shard fitted nowhere (the first attempt stops there).
    Overflowed,
    /// Some shard fitted nowhere and went to the least loaded member.
    Forced(BTreeMap<ShardId, String>),
}

/// One attempt at `placement`: holders keep their loaded shards up to `kept_up_to`, the rest
/// go to the first member in rendezvous order with room within `part`; a shard that fits
/// nowhere ends the attempt, unless `force` places it with the least loaded member.
fn share_out(
    members: &[String],
    standing: &Standing,
    loaded: &[(ShardId, u64)],
    part: u64,
    kept_up_to: u64,
    force: bool,
) -> Shared {
    let mut plan: BTreeMap<ShardId, String> = ShardId::all()
        .filter_map(|s| owner_of(s, members).map(|m| (s, m.to_string())))
        .collect();
    let mut taken: BTreeMap<&str, u64> = members.iter().map(|m| (m.as_str(), 0)).collect();
    let mut left = Vec::new();
    for (shard, load) in loaded.iter().copied() {
        let holder = standing
            .holders
            .get(&shard)
            .and_then(|h| taken.get_key_value(h.as_str()))
            .map(|(h, taken)| (*h, *taken));
        match holder {
            Some((holder, has)) if has + load <= kept_up_to => {
                taken.insert(holder, has + load);
                plan.insert(shard, holder.to_string());
            }
            _ => left.push((shard, load)),
        }
    }
    let mut forced = false;
    for (shard, load) in left {
        let mut order: Vec<&str> = members.iter().map(String::as_str).collect();
        order.sort_by_key(|m| (std::cmp::Reverse(score(m, shard)), *m));
        let has = |m: &str| taken.get(m).copied().unwrap_or(0);
        let to = match order.iter().find(|m| has(m) + load <= part) {
            Some(to) => *to,
            None if !force => return Shared::Overflowed,
            None => {
                forced = true;
                // The first of the least loaded, in rendezvous order.
                let Some(to) = order.iter().min_by_key(|m| has(m)) else {
                    return Shared::Overflowed;
                };
                *to
            }
        };
        taken.insert(to, has(to) + load);
        plan.insert(shard, to.to_string());
    }
    if forced {
        Shared::Forced(plan)
    } else {
        Shared::Fitted(plan)
    }
}

/// The shards `node` should own among `members` (`placement`).
pub fn share_of(node: &str, members: &[String], standing: &Standing) -> Vec<ShardId> {
    placement(members, standing)
        .into_iter()
        .filter(|(_, owner)| owner == node)
        .map(|(shard, _)| shard)
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
        let shares: Vec<usize> = three
            .iter()
            .map(|m| share_of(m, &three, &Standing::default()).len())
            .collect();
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

    /// `events` events on sale, spread over the shards by their ids.
    fn on_sale(events: u128, seed: u128) -> BTreeMap<ShardId, u32> {
        let mut loads = BTreeMap::new();
        for i in 0..events {
            *loads
                .entry(shard_of(Uuid::from_u128(seed << 64 | i)))
                .or_default() += 1;
        }
        loads
    }

    /// How many events on sale each member holds under `plan`, most first.
    fn spread(plan: &BTreeMap<ShardId, String>, loads: &BTreeMap<ShardId, u32>) -> Vec<u32> {
        let mut by: BTreeMap<&str, u32> = BTreeMap::new();
        for (shard, load) in loads {
            *by.entry(plan[shard].as_str()).or_default() += load;
        }
        let mut spread: Vec<u32> = by.into_values().collect();
        spread.sort_unstable_by(|a, b| b.cmp(a));
        spread
    }

    /// The standing once `plan` is carried out.
    fn carried_out(loads: &BTreeMap<ShardId, u32>, plan: &BTreeMap<ShardId, String>) -> Standing {
        Standing {
            loads: loads.clone(),
            holders: plan.clone(),
        }
    }

    #[test]
    fn events_on_sale_are_shared_out_evenly_and_the_plan_holds_once_carried_out() {
        let three = members(&["events-a", "events-b", "events-c"]);
        for seed in 0..20 {
            let loads = on_sale(64, seed);
            // From rendezvous hashing (what a cluster holds before any event is published).
            let start = carried_out(&loads, &placement(&three, &Standing::default()));
            let plan = placement(&three, &start);
            assert!(
                spread(&plan, &loads)[0] <= 22,
                "{:?}",
                spread(&plan, &loads)
            );
            // Only what did not fit moved.
            let before = spread(&start.holders, &loads);
            let moved = loads.keys().filter(|s| plan[s] != start.holders[s]).count();
            assert!(
                moved <= (before[0] as usize).saturating_sub(22) * 2,
                "{moved} {before:?}"
            );
            // Shards without events on sale stay where rendezvous hashing puts them.
            for shard in ShardId::all().filter(|s| !loads.contains_key(s)) {
                assert_eq!(Some(plan[&shard].as_str()), owner_of(shard, &three));
            }
            assert_eq!(placement(&three, &carried_out(&loads, &plan)), plan);
        }
        // Shards holding several events each: at most the part plus the heaviest shard.
        let mut heavy = on_sale(200, 7);
        for (i, load) in heavy.values_mut().enumerate() {
            *load += (i % 5) as u32;
        }
        let total: u32 = heavy.values().sum();
        let plan = placement(
            &three,
            &carried_out(&heavy, &placement(&three, &Standing::default())),
        );
        assert!(
            spread(&plan, &heavy)[0] <= total.div_ceil(3) + 4,
            "{:?}",
            spread(&plan, &heavy)
        );
        assert_eq!(placement(&three, &carried_out(&heavy, &plan)), plan);
    }

    fn standing(loads: &[(u8, u32)], holders: &[(u8, &str)]) -> Standing {
        Standing {
            loads: loads.iter().map(|(s, l)| (ShardId(*s), *l)).collect(),
            holders: holders
                .iter()
                .map(|(s, h)| (ShardId(*s), h.to_string()))
                .collect(),
        }
    }

    #[test]
    fn shards_that_fit_nowhere_still_get_an_owner_and_the_plan_holds() {
        let three = members(&["events-a", "events-b", "events-c"]);
        // Four shards of two events over three members, a part of three: one member must
        // take two of them, whatever the hashing says.
        let heavy = standing(
            &[(10, 2), (20, 2), (30, 2), (40, 2)],
            &[
                (10, "events-a"),
                (20, "events-b"),
                (30, "events-c"),
                (40, "events-a"),
            ],
        );
        let plan = placement(&three, &heavy);
        assert_eq!(plan.len(), usize::from(SHARDS));
        let shared = spread(&plan, &heavy.loads);
        assert_eq!(shared.iter().sum::<u32>(), 8);
        assert!(
            shared[0] <= 3 + 1,
            "within the part and the heaviest less one: {shared:?}"
        );
        assert_eq!(placement(&three, &carried_out(&heavy.loads, &plan)), plan);
        // Here the first attempt does not fit (two shards of two on one holder, a part of
        // two, and no member with room for the second), but once the loose plan is made a
        // plan within the part exists with its holders, and that one is taken.
        let pieces = standing(
            &[(231, 1), (28, 1), (140, 2), (145, 2)],
            &[
                (231, "events-a"),
                (28, "events-c"),
                (140, "events-b"),
                (145, "events-b"),
            ],
        );
        let plan = placement(&three, &pieces);
        assert_eq!(spread(&plan, &pieces.loads), [2, 2, 2]);
        assert_eq!(placement(&three, &carried_out(&pieces.loads, &plan)), plan);
    }

    #[test]
    fn a_publication_moves_at_most_one_shard_and_a_leaving_member_only_its_own() {
        let three = members(&["events-a", "events-b", "events-c"]);
        let mut loads = on_sale(64, 3);
        let mut plan = placement(
            &three,
            &carried_out(&loads, &placement(&three, &Standing::default())),
        );
        for i in 0..40 {
            *loads
                .entry(shard_of(Uuid::from_u128(99 << 64 | i)))
                .or_default() += 1;
            let next = placement(&three, &carried_out(&loads, &plan));
            let moved = ShardId::all().filter(|s| next[s] != plan[s]).count();
            assert!(moved <= 1, "publication {i} moved {moved} shards");
            plan = next;
        }
        let two = members(&["events-a", "events-c"]);
        let after = placement(&two, &carried_out(&loads, &plan));
        for shard in ShardId::all() {
            if plan[&shard] != "events-b" {
                assert_eq!(
                    plan[&shard], after[&shard],
                    "shard {shard} moved without need"
                );
            }
        }
        let total: u32 = loads.values().sum();
        assert!(spread(&after, &loads)[0] <= total.div_ceil(2));
        // A holder that is no member any more counts for nothing.
        let mut gone = carried_out(&loads, &plan);
        gone.holders
            .values_mut()
            .for_each(|h| *h = "events-z".into());
        let fresh = placement(&three, &gone);
        assert!(fresh.values().all(|m| three.contains(m)));
        assert!(placement(&[], &gone).is_empty());
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
