//! The transactional outbox: a domain event is a row written in the same transaction as the
//! change it describes, so an event is published if and only if its change committed.

mod doorbell;
mod purge;
mod relay;

pub(crate) use doorbell::ring;
pub use purge::{DAYS_AHEAD, KEEP_PUBLISHED, prepare_days, purge_published};
pub use relay::{Relay, RelayHandle};

use crate::db::{DbError, Schema, Tx};
use domain::envelope::Envelope;
use serde_json::value::RawValue;
use tokio_postgres::types::Json;

/// Writes an event into the outbox of `schema` as part of `tx`. This process's relay is woken
/// when the transaction commits (and never if it rolls back); relays of other processes find
/// the row when they poll. No NOTIFY: PostgreSQL serializes every notifying commit of a
/// database through one lock, which would make every seat commit of every node wait in line.
pub async fn enqueue(tx: &Tx, schema: Schema, event: &Envelope) -> Result<(), DbError> {
    let s = schema.name();
    let sql = format!(
        "INSERT INTO {s}.outbox (id, event_type, tenant_id, actor_id, occurred_at, data)
         VALUES ($1, $2, $3, $4, $5, $6)"
    );
    tx.ring_on_commit(schema);
    tx.execute(
        &sql,
        &[
            &event.id.as_uuid(),
            &event.event_type,
            &event.tenant_id.map(|t| t.as_uuid()),
            &event.actor_id.map(|u| u.as_uuid()),
            &event.occurred_at,
            &Json(event.data.raw()),
        ],
    )
    .await?;
    Ok(())
}

/// The events of `schema`'s outbox with these ids, in no particular order; those purged
/// already are missing.
pub(crate) async fn events_by_id(
    db: &crate::Database,
    schema: Schema,
    ids: &[uuid::Uuid],
) -> Result<Vec<Envelope>, DbError> {
    let rows = db
        .client()
        .await?
        .query(
            &format!(
                "SELECT {} FROM {}.outbox WHERE id = ANY($1)",
                relay::ENVELOPE,
                schema.name()
            ),
            &[&ids],
        )
        .await?;
    Ok(rows.iter().map(relay::envelope).collect())
}

/// Backlogs counted row by row up to this many; beyond, estimated (see `backlog`).
const COUNTED_BACKLOG: i64 = 10_000;

/// Number of events of a schema not yet confirmed by the broker: exact up to 10,000; beyond
/// that, the span of their sequence numbers (the relay publishes in that order, so it is
/// close), read from the two ends of the pending index. Counting every row cost 160 ms a look
/// behind a sale of 600,000; this, 24 ms.
pub async fn backlog(db: &crate::Database, schema: Schema) -> Result<i64, DbError> {
    let s = schema.name();
    let client = db.client().await?;
    let row = client
        .query_one(
            &format!(
                "SELECT CASE WHEN counted.n < $1 THEN counted.n
                        ELSE (SELECT max(seq) - min(seq) + 1 FROM {s}.outbox WHERE published_at IS NULL)
                        END
                 FROM (SELECT count(*) AS n
                       FROM (SELECT 1 FROM {s}.outbox WHERE published_at IS NULL LIMIT $1) pending) counted"
            ),
            &[&COUNTED_BACKLOG],
        )
        .await?;
    Ok(row.get::<_, Option<i64>>(0).unwrap_or(0))
}

/// Writes many events in one statement, as part of `tx` (used by group commits).
pub async fn enqueue_many(tx: &Tx, schema: Schema, events: &[Envelope]) -> Result<(), DbError> {
    if events.is_empty() {
        return Ok(());
    }
    let ids: Vec<uuid::Uuid> = events.iter().map(|e| e.id.as_uuid()).collect();
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    let tenants: Vec<Option<uuid::Uuid>> = events
        .iter()
        .map(|e| e.tenant_id.map(|t| t.as_uuid()))
        .collect();
    let actors: Vec<Option<uuid::Uuid>> = events
        .iter()
        .map(|e| e.actor_id.map(|u| u.as_uuid()))
        .collect();
    let times: Vec<chrono::DateTime<chrono::Utc>> = events.iter().map(|e| e.occurred_at).collect();
    let data: Vec<Json<&RawValue>> = events.iter().map(|e| Json(e.data.raw())).collect();
    tx.ring_on_commit(schema);
    let stmt = prepare_many(tx, schema).await?;
    tx.execute(&stmt, &[&ids, &types, &tenants, &actors, &times, &data])
        .await?;
    Ok(())
}

/// Prepares `enqueue_many`'s statement on `tx`'s connection, once per connection (the seat
/// path writes here in every commit): a transaction that sends its commit right behind its
/// writes (`Tx::commit_with`) prepares it in an earlier round trip.
pub async fn prepare_many(tx: &Tx, schema: Schema) -> Result<tokio_postgres::Statement, DbError> {
    let s = schema.name();
    Ok(tx
        .prepare_cached(&format!(
            "INSERT INTO {s}.outbox (id, event_type, tenant_id, actor_id, occurred_at, data)
             SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $5::timestamptz[], $6::jsonb[])"
        ))
        .await?)
}
