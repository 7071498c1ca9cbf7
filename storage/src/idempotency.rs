//! The idempotency-key store behind `X-Idempotency-Key`. A key belongs to one caller; the
//! first request with it is recorded as in progress, its response is stored when it ends, and
//! later requests with the same key and the same body get that response again. A claim in
//! progress records the life line of the process that holds it (`crate::liveness`): when that
//! process is gone, the claim is taken over at once; otherwise after five minutes.

use crate::db::{Database, DbError, Schema};
use chrono::{DateTime, Utc};
use uuid::Uuid;

/// An in-progress claim older than this is treated as abandoned (its process died without
/// its death being seen, or kept the claim because its outcome was unknown).
const ABANDONED_AFTER_SECONDS: f64 = 300.0;

/// A transaction for key bookkeeping that does not wait for its WAL flush: the
/// registration (or any other change) a key guards commits durably on its own, and a key
/// lost in a crash only turns a replay into a fresh attempt that the change's own rules judge
/// (e.g. "already registered"). This keeps two fsyncs per request off the hot path.
async fn bookkeeping(db: &Database) -> Result<crate::Tx, DbError> {
    let tx = db.begin(crate::Scope::anonymous()).await?;
    tx.batch_execute("SET LOCAL synchronous_commit TO OFF")
        .await?;
    Ok(tx)
}

/// A response kept for replay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredResponse {
    /// HTTP status.
    pub status: u16,
    /// Content type of the body.
    pub content_type: Option<String>,
    /// The body bytes.
    pub body: Vec<u8>,
}

/// What to do with a request carrying a key.
#[derive(Debug, PartialEq, Eq)]
pub enum Claim {
    /// First use: process it, then `complete` or `release`.
    Fresh,
    /// Seen before with the same request: send this response again.
    Replay(StoredResponse),
    /// The same key is being processed right now.
    InProgress,
    /// The key was used with a different request.
    Mismatch,
}

/// Records the first use of `key` by `owner` for the process whose life line is `holder`, or
/// reports what happened to it.
pub async fn claim(
    db: &Database,
    schema: Schema,
    owner: Uuid,
    key: Uuid,
    request_hash: &[u8],
    holder: Option<i64>,
) -> Result<Claim, DbError> {
    let tx = bookkeeping(db).await?;
    let claim = claim_in(&tx, schema, owner, key, request_hash, holder).await?;
    tx.commit().await?;
    Ok(claim)
}

async fn claim_in(
    client: &crate::Tx,
    schema: Schema,
    owner: Uuid,
    key: Uuid,
    request_hash: &[u8],
    holder: Option<i64>,
) -> Result<Claim, DbError> {
    let s = schema.name();
    let inserted = client
        .execute(
            &format!(
                "INSERT INTO {s}.idempotency_keys (owner_id, key, request_hash, holder)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING"
            ),
            &[&owner, &key, &request_hash, &holder],
        )
        .await?;
    if inserted == 1 {
        return Ok(Claim::Fresh);
    }
    let row = client
        .query_opt(
            &format!(
                // Abandonment is judged on the database's clock, the one that wrote
                // `created_at`: a node whose clock runs ahead would take over live claims.
                // A holder whose life line no live session holds any more died with it.
                "SELECT request_hash, status, content_type, response_body, created_at,
                        created_at < clock_timestamp() - make_interval(secs => $3::float8)
                        OR (holder IS NOT NULL AND {gone})
                 FROM {s}.idempotency_keys WHERE owner_id = $1 AND key = $2",
                gone = crate::liveness::holder_gone("holder"),
            ),
            &[&owner, &key, &ABANDONED_AFTER_SECONDS],
        )
        .await?;
    let Some(row) = row else {
        // Released between our insert and select: the caller may simply retry.
        return Ok(Claim::InProgress);
    };
    let stored_hash: Vec<u8> = row.get(0);
    if stored_hash != request_hash {
        return Ok(Claim::Mismatch);
    }
    let status: Option<i16> = row.get(1);
    match status {
        Some(status) => Ok(Claim::Replay(StoredResponse {
            status: u16::try_from(status).unwrap_or(500),
            content_type: row.get(2),
            body: row.get::<_, Option<Vec<u8>>>(3).unwrap_or_default(),
        })),
        None => {
            let created: DateTime<Utc> = row.get(4);
            let abandoned: bool = row.get(5);
            if abandoned {
                // Take over a claim whose process died; only one caller wins the update.
                let taken = client
                    .execute(
                        &format!(
                            "UPDATE {s}.idempotency_keys SET created_at = now(), holder = $4
                             WHERE owner_id = $1 AND key = $2 AND status IS NULL AND created_at = $3"
                        ),
                        &[&owner, &key, &created, &holder],
                    )
                    .await?;
                if taken == 1 {
                    return Ok(Claim::Fresh);
                }
            }
            Ok(Claim::InProgress)
        }
    }
}

/// Stores the response of a fresh claim.
pub async fn complete(
    db: &Database,
    schema: Schema,
    owner: Uuid,
    key: Uuid,
    response: &StoredResponse,
) -> Result<(), DbError> {
    let client = bookkeeping(db).await?;
    client
        .execute(
            &format!(
                "UPDATE {}.idempotency_keys SET status = $3, content_type = $4, response_body = $5
                 WHERE owner_id = $1 AND key = $2",
                schema.name()
            ),
            &[
                &owner,
                &key,
                &i16::try_from(response.status).unwrap_or(500),
                &response.content_type,
                &response.body,
            ],
        )
        .await?;
    client.commit().await?;
    Ok(())
}

/// Forgets a fresh claim whose request is known to have changed nothing, so the client can
/// retry it.
pub async fn release(db: &Database, schema: Schema, owner: Uuid, key: Uuid) -> Result<(), DbError> {
    let client = bookkeeping(db).await?;
    client
        .execute(
            &format!(
                "DELETE FROM {}.idempotency_keys WHERE owner_id = $1 AND key = $2 AND status IS NULL",
                schema.name()
            ),
            &[&owner, &key],
        )
        .await?;
    client.commit().await?;
    Ok(())
}

/// Deletes keys older than `hours`.
pub async fn purge(db: &Database, schema: Schema, hours: u32) -> Result<u64, DbError> {
    let client = db.client().await?;
    Ok(client
        .execute(
            &format!(
                "DELETE FROM {}.idempotency_keys WHERE created_at < now() - make_interval(hours => $1)",
                schema.name()
            ),
            &[&(hours as i32)],
        )
        .await?)
}
