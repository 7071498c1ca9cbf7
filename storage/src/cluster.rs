//! The events cluster in PostgreSQL: members heartbeat, and each shard has one lease with an
//! owner, an epoch and an expiry on the database's clock (`clock_timestamp()`), so nodes whose
//! clocks disagree still agree on who holds what. A lease is taken only when it is free or has
//! run out, and every change of owner raises the epoch; an owner's transaction checks its
//! owner and epoch with `fence`, which also holds the lease row until commit, so a takeover
//! waits for a commit in flight and a stale owner commits nothing.

use crate::db::{Database, DbError, Tx};
use chrono::{DateTime, Utc};
use domain::cluster::ShardId;
use std::time::Duration;

/// A shard held by a node at an epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The shard.
    pub shard: ShardId,
    /// The epoch it is held at; the node's writes for it carry this number.
    pub epoch: i64,
}

/// A member of the events cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// Its name (unique in the cluster).
    pub node: String,
    /// Where its events service answers.
    pub address: String,
    /// Its last heartbeat.
    pub heartbeat_at: DateTime<Utc>,
}

/// One shard as the cluster sees it now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardState {
    /// The shard.
    pub shard: ShardId,
    /// Who holds an unexpired lease on it, with its address; none while it is being handed
    /// over.
    pub owner: Option<(String, String)>,
    /// Its epoch.
    pub epoch: i64,
}

/// A transaction whose lease no longer holds: it must not commit.
#[derive(Debug, thiserror::Error)]
#[error("shard {shard} is no longer held by {node} at epoch {epoch}")]
pub struct Fenced {
    /// The shard.
    pub shard: ShardId,
    /// The node that thought it held it.
    pub node: String,
    /// The epoch it thought it held.
    pub epoch: i64,
}

/// Why a fenced write failed.
#[derive(Debug, thiserror::Error)]
pub enum FenceError {
    /// The lease moved on.
    #[error(transparent)]
    Fenced(#[from] Fenced),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn shard(n: i16) -> ShardId {
    ShardId(u8::try_from(n).unwrap_or_default())
}

fn shards(list: &[ShardId]) -> Vec<i16> {
    list.iter().map(|s| s.as_i16()).collect()
}

/// Says `node` is alive and answers at `address`.
pub async fn heartbeat(db: &Database, node: &str, address: &str) -> Result<(), DbError> {
    let client = db.client().await?;
    client
        .execute(
            "INSERT INTO event_service.members (node, address, heartbeat_at, joined_at)
             VALUES ($1, $2, clock_timestamp(), clock_timestamp())
             ON CONFLICT (node) DO UPDATE SET address = EXCLUDED.address, heartbeat_at = EXCLUDED.heartbeat_at",
            &[&node, &address],
        )
        .await?;
    Ok(())
}

/// The members that heartbeat within `within`, by name.
pub async fn live_members(db: &Database, within: Duration) -> Result<Vec<Member>, DbError> {
    let client = db.client().await?;
    let rows = client
        .query(
            "SELECT node, address, heartbeat_at FROM event_service.members
             WHERE heartbeat_at > clock_timestamp() - make_interval(secs => $1::float8 / 1000)
             ORDER BY node",
            &[&millis(within)],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Member {
            node: r.get(0),
            address: r.get(1),
            heartbeat_at: r.get(2),
        })
        .collect())
}

/// Extends every unexpired lease of `node` by `ttl`; returns the leases it still holds. A
/// lease that ran out is not renewed: another node may have it by now.
pub async fn renew(db: &Database, node: &str, ttl: Duration) -> Result<Vec<Lease>, DbError> {
    let client = db.client().await?;
    let rows = client
        .query(
            "UPDATE event_service.shard_leases
             SET expires_at = clock_timestamp() + make_interval(secs => $2::float8 / 1000)
             WHERE owner = $1 AND expires_at > clock_timestamp()
             RETURNING shard, epoch",
            &[&node, &millis(ttl)],
        )
        .await?;
    Ok(leases(&rows))
}

/// Takes those of `wanted` that are free or have run out, for `ttl`, each at a new epoch.
pub async fn claim(
    db: &Database,
    node: &str,
    wanted: &[ShardId],
    ttl: Duration,
) -> Result<Vec<Lease>, DbError> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let client = db.client().await?;
    let rows = client
        .query(
            "UPDATE event_service.shard_leases
             SET owner = $1, epoch = epoch + 1, changed_at = clock_timestamp(),
                 expires_at = clock_timestamp() + make_interval(secs => $3::float8 / 1000)
             WHERE shard = ANY($2) AND (owner IS NULL OR expires_at <= clock_timestamp())
             RETURNING shard, epoch",
            &[&node, &shards(wanted), &millis(ttl)],
        )
        .await?;
    Ok(leases(&rows))
}

/// Gives up `node`'s leases on `given` (a hand-over or a shutdown): another node can take
/// them at once instead of waiting for them to run out.
pub async fn release(db: &Database, node: &str, given: &[ShardId]) -> Result<u64, DbError> {
    if given.is_empty() {
        return Ok(0);
    }
    let client = db.client().await?;
    Ok(client
        .execute(
            "UPDATE event_service.shard_leases
             SET owner = NULL, expires_at = '-infinity', changed_at = clock_timestamp()
             WHERE owner = $1 AND shard = ANY($2)",
            &[&node, &shards(given)],
        )
        .await?)
}

/// Leaves the cluster: every lease of `node` is released and it is no longer a member.
pub async fn leave(db: &Database, node: &str) -> Result<(), DbError> {
    let client = db.client().await?;
    client
        .execute(
            "UPDATE event_service.shard_leases
             SET owner = NULL, expires_at = '-infinity', changed_at = clock_timestamp()
             WHERE owner = $1",
            &[&node],
        )
        .await?;
    client
        .execute(
            "DELETE FROM event_service.members WHERE node = $1",
            &[&node],
        )
        .await?;
    Ok(())
}

/// Every shard with its current owner (an unexpired lease) and that owner's address.
pub async fn map(db: &Database) -> Result<Vec<ShardState>, DbError> {
    let client = db.client().await?;
    let rows = client
        .query(
            "SELECT l.shard, l.epoch, m.node, m.address
             FROM event_service.shard_leases l
             LEFT JOIN event_service.members m
               ON m.node = l.owner AND l.expires_at > clock_timestamp()
             ORDER BY l.shard",
            &[],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let node: Option<String> = r.get(2);
            let address: Option<String> = r.get(3);
            ShardState {
                shard: shard(r.get(0)),
                epoch: r.get(1),
                owner: node.zip(address),
            }
        })
        .collect())
}

/// Checks inside `tx` that `node` still holds `lease`, and keeps the lease row share-locked
/// until `tx` ends: a takeover (which updates the row) waits for this commit, so either the
/// commit lands while the lease holds or the check fails and nothing is written.
pub async fn fence(tx: &Tx, node: &str, lease: Lease) -> Result<(), FenceError> {
    let held = tx
        .query_opt(
            "SELECT 1 FROM event_service.shard_leases
             WHERE shard = $1 AND owner = $2 AND epoch = $3 AND expires_at > clock_timestamp()
             FOR SHARE",
            &[&lease.shard.as_i16(), &node, &lease.epoch],
        )
        .await
        .map_err(DbError::from)?;
    match held {
        Some(_) => Ok(()),
        None => Err(Fenced {
            shard: lease.shard,
            node: node.to_string(),
            epoch: lease.epoch,
        }
        .into()),
    }
}

fn leases(rows: &[tokio_postgres::Row]) -> Vec<Lease> {
    rows.iter()
        .map(|r| Lease {
            shard: shard(r.get(0)),
            epoch: r.get(1),
        })
        .collect()
}
