//! Revoked access: what makes a still-unexpired access token stop working. Identity records a
//! revocation in the same transaction as the change that causes it (a member removed, a role
//! changed, an organization or account deleted, a password reset, a session ended) and wakes
//! the gateways with `NOTIFY bilet_revocations`; they read the log's recent rows and keep the
//! last token lifetime of it in memory.

use crate::db::{Connection, Database, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::identity::revocation::{Revocation, Revoked};
use domain::ids::{TenantId, UserId};
use uuid::Uuid;

/// The channel gateways listen on.
pub const CHANNEL: &str = "bilet_revocations";

async fn notify(tx: &Tx) -> Result<()> {
    tx.execute("SELECT pg_notify($1, '')", &[&CHANNEL]).await?;
    Ok(())
}

/// Every access token the user holds now stops working (their claims may no longer be true);
/// tokens issued after this commit carry the new version.
pub async fn user(tx: &Tx, user: UserId) -> Result<()> {
    users(tx, &[user.as_uuid()]).await
}

/// As [`user`], for several users in one statement.
pub async fn users(tx: &Tx, users: &[Uuid]) -> Result<()> {
    if users.is_empty() {
        return Ok(());
    }
    tx.execute(
        "WITH bumped AS (
            UPDATE user_service.users SET access_version = access_version + 1
            WHERE id = ANY($1) RETURNING id, access_version)
         INSERT INTO user_service.access_revocations (user_id, min_version)
         SELECT id, access_version FROM bumped",
        &[&users],
    )
    .await?;
    notify(tx).await
}

/// Every member of an organization (it is being deleted).
pub async fn members_of(tx: &Tx, org: TenantId) -> Result<()> {
    let rows = tx
        .query(
            "SELECT user_id FROM user_service.organization_members WHERE organization_id = $1",
            &[&org.as_uuid()],
        )
        .await?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.get(0)).collect();
    users(tx, &ids).await
}

/// The access tokens of these sessions stop working (logout, a reused refresh token, a session
/// pushed out by newer ones).
pub async fn sessions(tx: &Tx, user: UserId, sessions: &[Uuid]) -> Result<()> {
    if sessions.is_empty() {
        return Ok(());
    }
    tx.execute(
        "INSERT INTO user_service.access_revocations (user_id, session_id)
         SELECT $1, s FROM unnest($2::uuid[]) AS s",
        &[&user.as_uuid(), &sessions],
    )
    .await?;
    notify(tx).await
}

/// Revocations recorded after `since`, and the database's clock at the reading (what the
/// next reading's `since` is measured against).
pub async fn since(
    session: &Connection,
    since: DateTime<Utc>,
) -> Result<(Vec<Revocation>, DateTime<Utc>)> {
    // The clock row comes even when nothing was revoked.
    let rows = session
        .query(
            "SELECT r.user_id, r.session_id, r.min_version, r.created_at, c.now
             FROM (SELECT now() AS now) c
             LEFT JOIN user_service.access_revocations r ON r.created_at > $1
             ORDER BY r.seq",
            &[&since],
        )
        .await?;
    let read_at = rows.first().map(|r| r.get(4)).unwrap_or(since);
    let revocations = rows.iter().filter_map(from_row).collect();
    Ok((revocations, read_at))
}

/// Drops revocations older than `before` (no token they concern is still valid).
pub async fn purge(db: &Database, before: DateTime<Utc>) -> Result<u64> {
    let client = db.client().await?;
    Ok(client
        .execute(
            "DELETE FROM user_service.access_revocations WHERE created_at < $1",
            &[&before],
        )
        .await?)
}

fn from_row(row: &tokio_postgres::Row) -> Option<Revocation> {
    let user: Uuid = row.get::<_, Option<Uuid>>(0)?;
    let session: Option<Uuid> = row.get(1);
    let min_version: Option<i64> = row.get(2);
    let revoked = match session {
        Some(session) => Revoked::Session(session),
        None => Revoked::Below(min_version.unwrap_or(0)),
    };
    Some(Revocation {
        user: UserId(user),
        revoked,
        at: row.get(3),
    })
}
