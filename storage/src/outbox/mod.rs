//! The transactional outbox: a domain event is a row written in the same transaction as the
//! change it describes, so an event is published if and only if its change committed.

mod relay;

pub use relay::{Relay, RelayHandle};

use crate::db::{DbError, Schema, Tx};
use domain::envelope::Envelope;

/// The NOTIFY channel that wakes the relay; the payload is the schema name.
pub const CHANNEL: &str = "bilet_outbox";

/// Writes an event into the outbox of `schema` as part of `tx`. The relay is woken when the
/// transaction commits (NOTIFY is transactional), and never if it rolls back.
pub async fn enqueue(tx: &Tx, schema: Schema, event: &Envelope) -> Result<(), DbError> {
    let s = schema.name();
    let sql = format!(
        "WITH row AS (
            INSERT INTO {s}.outbox (id, event_type, tenant_id, actor_id, occurred_at, data)
            VALUES ($1, $2, $3, $4, $5, $6)
            RETURNING 1
         )
         SELECT pg_notify('{CHANNEL}', '{s}') FROM row"
    );
    tx.execute(
        &sql,
        &[
            &event.id.as_uuid(),
            &event.event_type,
            &event.tenant_id.map(|t| t.as_uuid()),
            &event.actor_id.map(|u| u.as_uuid()),
            &event.occurred_at,
            &event.data,
        ],
    )
    .await?;
    Ok(())
}

/// Number of events of a schema not yet confirmed by the broker.
pub async fn backlog(db: &crate::Database, schema: Schema) -> Result<i64, DbError> {
    let client = db.client().await?;
    let row = client
        .query_one(
            &format!(
                "SELECT count(*) FROM {}.outbox WHERE published_at IS NULL",
                schema.name()
            ),
            &[],
        )
        .await?;
    Ok(row.get(0))
}

/// Writes many events in one statement, as part of `tx` (used by group commits).
pub async fn enqueue_many(tx: &Tx, schema: Schema, events: &[Envelope]) -> Result<(), DbError> {
    if events.is_empty() {
        return Ok(());
    }
    let s = schema.name();
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
    let data: Vec<&serde_json::Value> = events.iter().map(|e| &e.data).collect();
    // One round trip: the rows and the relay's wake-up (delivered at commit).
    tx.query(
        &format!(
            "WITH o AS (
                INSERT INTO {s}.outbox (id, event_type, tenant_id, actor_id, occurred_at, data)
                SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::uuid[], $4::uuid[], $5::timestamptz[], $6::jsonb[])
                RETURNING 1
             ) SELECT pg_notify('{CHANNEL}', '{s}') FROM (SELECT 1 FROM o LIMIT 1) AS any_row"
        ),
        &[&ids, &types, &tenants, &actors, &times, &data],
    )
    .await?;
    Ok(())
}
