//! `bilet cluster status`: the members of the events cluster and which shards each owns, as
//! PostgreSQL says now, and whether the processes' pools fit what PostgreSQL allows.

use domain::cluster::SHARDS;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;
use storage::Database;
use storage::cluster::{self, Member, ShardState};

/// Reads the cluster and renders it; members silent for longer than `lease_ttl` are marked.
pub async fn status(db: &Database, lease_ttl: Duration) -> anyhow::Result<String> {
    let live = cluster::live_members(db, lease_ttl).await?;
    let known = cluster::live_members(db, Duration::from_secs(24 * 3600)).await?;
    let map = cluster::map(db).await?;
    let budget = storage::peers::connection_budget(db, http::peers::SEEN_WITHIN).await?;
    let mut text = render(&known, &live, &map);
    let _ = writeln!(
        text,
        "connections: the live processes may open {}, PostgreSQL allows {}{}",
        budget.wanted,
        budget.allowed,
        budget
            .warning()
            .map(|w| format!("\nWARNING: {w}"))
            .unwrap_or_default()
    );
    Ok(text)
}

/// Compresses shard numbers into ranges: 0-3,7,9-10.
fn ranges(shards: &[u8]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < shards.len() {
        let start = shards[i];
        let mut end = start;
        while i + 1 < shards.len() && shards[i + 1] == end.wrapping_add(1) && end < u8::MAX {
            i += 1;
            end = shards[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            let _ = write!(out, "{start}");
        } else {
            let _ = write!(out, "{start}-{end}");
        }
        i += 1;
    }
    out
}

/// The text `bilet cluster status` prints.
pub fn render(known: &[Member], live: &[Member], map: &[ShardState]) -> String {
    let mut owned: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
    let mut orphans = Vec::new();
    for state in map {
        match &state.owner {
            Some((node, _)) => owned.entry(node.as_str()).or_default().push(state.shard.0),
            None => orphans.push(state.shard.0),
        }
    }
    let sworn = domain::cluster::sworn_in(
        &live
            .iter()
            .map(|m| domain::cluster::Sworn {
                node: m.node.clone(),
                joined_at: m.joined_at,
                fingerprint: m.fingerprint.clone(),
                clock_right: true,
            })
            .collect::<Vec<_>>(),
    );
    let mut out = String::new();
    let _ = writeln!(out, "members ({} live):", live.len());
    for member in known {
        let state = if live.iter().any(|m| m.node == member.node) {
            "live"
        } else {
            "silent"
        };
        // A live member whose secrets are not the cluster's takes no shard: say why.
        let secrets = if state == "live" && !sworn.contains(&member.node) {
            "  OTHER SECRETS than the cluster's: takes no shards".to_string()
        } else if state == "live" && domain::clock::too_far_off(member.clock_off) {
            format!(
                "  CLOCK OFF by {} ms from the database's: takes no shards",
                member.clock_off.num_milliseconds()
            )
        } else {
            String::new()
        };
        let shards = owned
            .get(member.node.as_str())
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let _ = writeln!(
            out,
            "  {:<28} {:<6} {:<28} last heartbeat {}  shards {:>3}  {}{}",
            member.node,
            state,
            member.address,
            member.heartbeat_at.format("%Y-%m-%d %H:%M:%S%.3f UTC"),
            shards.len(),
            ranges(shards),
            secrets
        );
    }
    let _ = writeln!(
        out,
        "shards: {} of {} owned, {} without owner{}",
        usize::from(SHARDS) - orphans.len(),
        SHARDS,
        orphans.len(),
        if orphans.is_empty() {
            String::new()
        } else {
            format!(" ({})", ranges(&orphans))
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::cluster::ShardId;

    #[test]
    fn shards_are_printed_as_ranges() {
        assert_eq!(ranges(&[0, 1, 2, 3, 7, 9, 10]), "0-3,7,9-10");
        assert_eq!(ranges(&[255]), "255");
        assert_eq!(ranges(&[]), "");
    }

    #[test]
    fn members_owners_and_orphans_are_listed() {
        let at = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default();
        let member = |node: &str, fingerprint: &str| Member {
            node: node.into(),
            address: format!("http://{node}:8082"),
            heartbeat_at: at,
            joined_at: at,
            fingerprint: fingerprint.into(),
            clock_off: chrono::Duration::zero(),
        };
        let known = vec![member("a-1", "f"), member("b-1", "f"), member("c-1", "g")];
        let live = vec![member("a-1", "f"), member("c-1", "g")];
        let map: Vec<ShardState> = (0..=255u8)
            .map(|s| ShardState {
                shard: ShardId(s),
                owner: (s < 200).then(|| ("a-1".to_string(), "http://a-1:8082".to_string())),
                epoch: 1,
            })
            .collect();
        let text = render(&known, &live, &map);
        assert!(text.contains("members (2 live)"), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains("c-1") && l.contains("OTHER SECRETS")),
            "{text}"
        );
        assert!(
            !text
                .lines()
                .any(|l| l.contains("a-1") && l.contains("OTHER")),
            "{text}"
        );
        assert!(
            text.contains("a-1") && text.contains("live") && text.contains("0-199"),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains("b-1") && l.contains("silent") && l.contains("shards   0")),
            "{text}"
        );
        assert!(
            text.contains("shards: 200 of 256 owned, 56 without owner (200-255)"),
            "{text}"
        );
    }
}
