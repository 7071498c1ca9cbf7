//! The events cluster in PostgreSQL: members heartbeat, and each shard has one lease with an
//! owner, an epoch and an expiry on the database's clock (`clock_timestamp()`), so nodes whose
//! clocks disagree still agree on who holds what. A lease is taken only when it is free or has
//! run out, and every change of owner raises the epoch; an owner's transaction checks its
//! owner and epoch with a `Fence`, which also key-share-locks the lease rows until commit. A
//! takeover locks the row for update and skips rows still locked, so it never lands while a
//! commit is in flight, a stale owner commits nothing, and renewals (which change no key) never
//! wait for the owner's own transactions.

use crate::db::{Database, DbError, Scope, Tx};
use crate::error::Error;
use chrono::{DateTime, Utc};
use domain::cluster::{ShardId, Standing};
use std::sync::Arc;
use std::time::Duration;

/// The channel a change of shard owners is announced on (the gateway's map listens).
pub const CHANNEL: &str = "bilet_shards";

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
    /// When it joined.
    pub joined_at: DateTime<Utc>,
    /// Its fingerprint of the cluster secrets (`domain::trust::cluster_fingerprint`).
    pub fingerprint: String,
    /// How far its clock was from the database's at its last heartbeat.
    pub clock_off: chrono::Duration,
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

/// What a node relies on when it writes for some shards: its name and their leases. Every
/// owner's transaction checks it with `check`, inside the transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fence {
    node: Arc<str>,
    leases: Vec<Lease>,
}

impl Fence {
    /// `node` writing under `leases`.
    pub fn new(node: impl Into<Arc<str>>, leases: Vec<Lease>) -> Fence {
        Fence {
            node: node.into(),
            leases,
        }
    }

    /// One fence over the leases of all of `fences` (each shard once), for a transaction that
    /// writes for several events of the same node; `None` when they are of different nodes or
    /// hold one shard at different epochs.
    pub fn joined<'a>(fences: impl IntoIterator<Item = &'a Fence>) -> Option<Fence> {
        let mut fences = fences.into_iter();
        let first = fences.next()?;
        let mut leases = first.leases.clone();
        for fence in fences {
            if fence.node != first.node {
                return None;
            }
            for lease in &fence.leases {
                match leases.iter().find(|l| l.shard == lease.shard) {
                    None => leases.push(*lease),
                    Some(held) if held == lease => {}
                    // Two epochs of one shard: the older one's writes must fail on their own.
                    Some(_) => return None,
                }
            }
        }
        Some(Fence {
            node: first.node.clone(),
            leases,
        })
    }

    /// The leases.
    pub fn leases(&self) -> &[Lease] {
        &self.leases
    }

    /// The fence over those of its leases whose shard is in `shards` (a sweep fences only the
    /// shards it writes to, so it holds no other shard's lease row while it works).
    pub fn only(&self, shards: &[i16]) -> Fence {
        Fence {
            node: self.node.clone(),
            leases: self
                .leases
                .iter()
                .filter(|l| shards.contains(&l.shard.as_i16()))
                .copied()
                .collect(),
        }
    }

    /// The shards, as the database stores them (for `events.shard = ANY(..)`).
    pub fn shards(&self) -> Vec<i16> {
        self.leases.iter().map(|l| l.shard.as_i16()).collect()
    }

    /// Whether it covers no shard (a write under it can touch nothing).
    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
    }

    /// Checks inside `tx` that the node still holds every lease, and key-share-locks their
    /// rows until `tx` ends: a takeover skips a locked row, so either this commit lands while
    /// the leases hold or nothing of it is written.
    ///
    /// Each lease is looked up by its shard's key, in a subquery the planner cannot turn into
    /// a scan of the table. Renewals rewrite every lease row a few times a second, and while
    /// any transaction of the database is long (a backup, an export) none of those versions
    /// can be pruned: the table grows by hundreds of pages a minute. A seat transaction's plan
    /// is made once per connection (generic plans), when the table was a dozen pages and a
    /// scan of it the cheapest; that scan then read every page of the grown table in every
    /// seat transaction for the rest of the connection's life.
    pub async fn check(&self, tx: &Tx) -> Result<(), Error> {
        if self.leases.is_empty() {
            return Ok(());
        }
        let epochs: Vec<i64> = self.leases.iter().map(|l| l.epoch).collect();
        let stmt = tx
            .prepare_cached(
                "SELECT k.shard FROM UNNEST($1::int2[], $2::int8[]) AS h(shard, epoch),
                 LATERAL (SELECT l.shard FROM event_service.shard_leases l
                          WHERE l.shard = h.shard AND l.epoch = h.epoch
                            AND l.owner = $3 AND l.expires_at > clock_timestamp()
                          LIMIT 1
                          FOR KEY SHARE) k",
            )
            .await?;
        let held = tx
            .query(&stmt, &[&self.shards(), &epochs, &&*self.node])
            .await?;
        if held.len() == self.leases.len() {
            return Ok(());
        }
        let kept: Vec<i16> = held.iter().map(|r| r.get(0)).collect();
        let lost = self
            .leases
            .iter()
            .find(|l| !kept.contains(&l.shard.as_i16()))
            .copied()
            .unwrap_or(self.leases[0]);
        Err(Error::Fenced(Fenced {
            shard: lost.shard,
            node: self.node.to_string(),
            epoch: lost.epoch,
        }))
    }
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

/// Says `node` is alive, answers at `address`, holds the secrets of `fingerprint`, and read
/// `local_now` on its clock just before; returns how far that clock is from the database's
/// (its minus the database's), which is stored for the other members to see.
pub async fn heartbeat(
    db: &Database,
    node: &str,
    address: &str,
    fingerprint: &str,
    local_now: Option<DateTime<Utc>>,
) -> Result<chrono::Duration, DbError> {
    let client = db.client().await?;
    let row = client
        .query_one(
            "INSERT INTO event_service.members
                 (node, address, heartbeat_at, joined_at, fingerprint, clock_off_ms)
             VALUES ($1, $2, clock_timestamp(), clock_timestamp(), $3,
                     COALESCE((extract(epoch FROM $4::timestamptz - clock_timestamp()) * 1000)::bigint, 0))
             ON CONFLICT (node) DO UPDATE SET address = EXCLUDED.address,
                heartbeat_at = EXCLUDED.heartbeat_at, fingerprint = EXCLUDED.fingerprint,
                clock_off_ms = EXCLUDED.clock_off_ms
             RETURNING clock_off_ms",
            &[&node, &address, &fingerprint, &local_now],
        )
        .await?;
    Ok(chrono::Duration::milliseconds(row.get(0)))
}

/// The members that heartbeat within `within`, by name.
pub async fn live_members(db: &Database, within: Duration) -> Result<Vec<Member>, DbError> {
    let client = db.client().await?;
    let rows = client
        .query(
            "SELECT node, address, heartbeat_at, joined_at, fingerprint, clock_off_ms
             FROM event_service.members
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
            joined_at: r.get(3),
            fingerprint: r.get(4),
            clock_off: chrono::Duration::milliseconds(r.get(5)),
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

/// What the members share the shards out by (`domain::cluster::placement`): the events on
/// sale in each shard and who holds it, in one statement so both are of the same moment.
/// Events of every tenant count, so it reads as the system.
pub async fn standing(db: &Database) -> Result<Standing, DbError> {
    // The BEGIN goes out with the read: a round trip less in a round that runs under its
    // leases' deadline.
    let (tx, rows) = db
        .begin_with(Scope::system(), "", async |tx: &Tx| {
            tx.query(
                "SELECT l.shard, CASE WHEN l.expires_at > clock_timestamp() THEN l.owner END, e.on_sale
                 FROM event_service.shard_leases l
                 LEFT JOIN (SELECT shard, count(*) AS on_sale FROM event_service.events
                            WHERE status = 'PUBLISHED' AND deleted_at IS NULL
                            GROUP BY shard) e ON e.shard = l.shard",
                &[],
            )
            .await
            .map_err(DbError::from)
        })
        .await?;
    tx.commit().await?;
    let mut standing = Standing::default();
    for row in &rows {
        let shard = shard(row.get(0));
        if let Some(holder) = row.get::<_, Option<String>>(1) {
            standing.holders.insert(shard, holder);
        }
        if let Some(on_sale) = row.get::<_, Option<i64>>(2) {
            standing
                .loads
                .insert(shard, u32::try_from(on_sale).unwrap_or(u32::MAX));
        }
    }
    Ok(standing)
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
            // A row still locked by the old owner's transaction is skipped, not waited for:
            // the next round takes it once that commit (or rollback) is over.
            "UPDATE event_service.shard_leases l
             SET owner = $1, epoch = l.epoch + 1, changed_at = clock_timestamp(),
                 expires_at = clock_timestamp() + make_interval(secs => $3::float8 / 1000)
             WHERE l.shard IN (
                 SELECT shard FROM event_service.shard_leases
                 WHERE shard = ANY($2) AND (owner IS NULL OR expires_at <= clock_timestamp())
                 FOR UPDATE SKIP LOCKED)
               AND (l.owner IS NULL OR l.expires_at <= clock_timestamp())
             RETURNING l.shard, l.epoch",
            &[&node, &shards(wanted), &millis(ttl)],
        )
        .await?;
    if !rows.is_empty() {
        announce(&client).await?;
    }
    Ok(leases(&rows))
}

/// Tells the listeners (gateways) that owners changed.
async fn announce(client: &tokio_postgres::Client) -> Result<(), DbError> {
    client
        .execute("SELECT pg_notify($1, '')", &[&CHANNEL])
        .await?;
    Ok(())
}

/// Gives up `node`'s leases on `given` (a hand-over or a shutdown): another node can take
/// them at once instead of waiting for them to run out.
pub async fn release(db: &Database, node: &str, given: &[ShardId]) -> Result<u64, DbError> {
    if given.is_empty() {
        return Ok(0);
    }
    let client = db.client().await?;
    let released = client
        .execute(
            "UPDATE event_service.shard_leases
             SET owner = NULL, expires_at = '-infinity', changed_at = clock_timestamp()
             WHERE owner = $1 AND shard = ANY($2)",
            &[&node, &shards(given)],
        )
        .await?;
    if released > 0 {
        announce(&client).await?;
    }
    Ok(released)
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
    announce(&client).await
}

/// Forgets members silent for longer than `after` (earlier incarnations of restarted nodes).
pub async fn forget_silent(db: &Database, after: Duration) -> Result<u64, DbError> {
    let client = db.client().await?;
    Ok(client
        .execute(
            "DELETE FROM event_service.members
             WHERE heartbeat_at < clock_timestamp() - make_interval(secs => $1::float8 / 1000)
               AND NOT EXISTS (SELECT 1 FROM event_service.shard_leases l
                               WHERE l.owner = members.node AND l.expires_at > clock_timestamp())",
            &[&millis(after)],
        )
        .await?)
}

/// The address of the node holding an unexpired lease on `shard`, if any.
pub async fn owner_address(db: &Database, shard: ShardId) -> Result<Option<String>, DbError> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT m.address FROM event_service.shard_leases l
             JOIN event_service.members m ON m.node = l.owner
             WHERE l.shard = $1 AND l.expires_at > clock_timestamp()",
            &[&shard.as_i16()],
        )
        .await?;
    Ok(row.map(|r| r.get(0)))
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

fn leases(rows: &[tokio_postgres::Row]) -> Vec<Lease> {
    rows.iter()
        .map(|r| Lease {
            shard: shard(r.get(0)),
            epoch: r.get(1),
        })
        .collect()
}
