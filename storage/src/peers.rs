//! The processes of an installation, as they announce themselves in `platform.peers`: which
//! node each runs and a fingerprint of its service secret (`domain::trust::fingerprint`).
//! Liveness is judged on the database's clock, so processes whose clocks disagree still agree
//! on who was seen lately.

use crate::db::{Database, DbError};
use std::time::Duration;

/// A process seen lately.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    /// Its id (random per start).
    pub process: String,
    /// Its `[[nodes]]` name.
    pub node: String,
    /// The services it runs, comma-separated.
    pub services: String,
    /// The fingerprint of its service secret.
    pub fingerprint: String,
    /// The most connections it may open to PostgreSQL.
    pub connections: i32,
}

/// Records that `peer` is alive now.
pub async fn announce(db: &Database, peer: &Peer) -> Result<(), DbError> {
    db.client()
        .await?
        .execute(
            "INSERT INTO platform.peers (process, node, services, fingerprint, seen_at, connections)
             VALUES ($1, $2, $3, $4, clock_timestamp(), $5)
             ON CONFLICT (process) DO UPDATE
               SET node = EXCLUDED.node, services = EXCLUDED.services,
                   fingerprint = EXCLUDED.fingerprint, seen_at = EXCLUDED.seen_at,
                   connections = EXCLUDED.connections",
            &[&peer.process, &peer.node, &peer.services, &peer.fingerprint, &peer.connections],
        )
        .await?;
    Ok(())
}

/// Every process seen within `window`, itself included when it announced itself; rows older
/// than an hour are removed on the way (processes that died without leaving).
pub async fn seen_within(db: &Database, window: Duration) -> Result<Vec<Peer>, DbError> {
    let client = db.client().await?;
    client
        .execute(
            "DELETE FROM platform.peers WHERE seen_at < clock_timestamp() - interval '1 hour'",
            &[],
        )
        .await?;
    let millis = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let rows = client
        .query(
            "SELECT process, node, services, fingerprint, connections FROM platform.peers
             WHERE seen_at >= clock_timestamp() - make_interval(secs => $1::bigint / 1000.0)
             ORDER BY node, process",
            &[&millis],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Peer {
            process: r.get(0),
            node: r.get(1),
            services: r.get(2),
            fingerprint: r.get(3),
            connections: r.get(4),
        })
        .collect())
}

/// Removes `process` (it stops): the others stop comparing with it at once.
pub async fn leave(db: &Database, process: &str) -> Result<(), DbError> {
    db.client()
        .await?
        .execute("DELETE FROM platform.peers WHERE process = $1", &[&process])
        .await?;
    Ok(())
}

/// What the live processes may open against what PostgreSQL allows the application role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionBudget {
    /// The sum of the live processes' ceilings.
    pub wanted: i64,
    /// What the server allows this role: its `max_connections` less the superuser reserve,
    /// or the role's own connection limit when lower.
    pub allowed: i64,
}

impl ConnectionBudget {
    /// A warning for the operator when the processes could open more than allowed.
    pub fn warning(&self) -> Option<String> {
        (self.wanted > self.allowed).then(|| {
            format!(
                "the processes' pools can open {} connections; PostgreSQL allows this installation {}: set database.max_connections (or lower database.pool_size)",
                self.wanted, self.allowed
            )
        })
    }
}

/// The connection budget of the processes seen within `window`.
pub async fn connection_budget(
    db: &Database,
    window: Duration,
) -> Result<ConnectionBudget, DbError> {
    let millis = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let row = db
        .client()
        .await?
        .query_one(
            "SELECT
                (SELECT COALESCE(sum(connections), 0)::bigint FROM platform.peers
                 WHERE seen_at >= clock_timestamp() - make_interval(secs => $1::bigint / 1000.0)),
                (SELECT CASE WHEN r.rolconnlimit >= 0
                             THEN least(r.rolconnlimit::bigint, s.allowed) ELSE s.allowed END
                 FROM pg_roles r,
                      (SELECT (current_setting('max_connections')::int
                               - current_setting('superuser_reserved_connections')::int)::bigint AS allowed) s
                 WHERE r.rolname = current_user)",
            &[&millis],
        )
        .await?;
    Ok(ConnectionBudget {
        wanted: row.get(0),
        allowed: row.get(1),
    })
}
