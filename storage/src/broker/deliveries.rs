//! The in-process broker's deliveries in PostgreSQL (`broker.deliveries`): the safety net
//! under its memory queues, its retry schedule and its dead letters. A row is written per
//! event and consumer before a publish is confirmed, belongs to the bus holding it in memory
//! (its owner, see `owner`), and is deleted once the handler succeeded. A bus running a
//! consumer takes up the rows of that consumer that nobody holds: those of a process that
//! died, and replayed dead letters.

use super::DeadLetter;
use crate::db::{Database, DbError, Schema, Scope};
use domain::envelope::Envelope;
use std::collections::HashMap;
use std::time::Duration;
use uuid::Uuid;

/// A delivery taken up from the table, to be handed to its consumer.
pub(super) struct Taken {
    /// The row.
    pub id: Uuid,
    /// Whose it is.
    pub consumer: String,
    /// The envelope as stored; decoded by the caller, which parks it if it does not decode.
    pub event: serde_json::Value,
    /// The attempt this delivery is.
    pub attempt: u32,
    /// It named its event's place in an outbox, and the event is no longer there.
    pub purged: bool,
}

/// Records the deliveries `(row id, consumer, event)` as held by `owner`, in one statement:
/// once this returns they survive a crash. Events read from the outbox of `outbox` are
/// recorded by where they are (`source`, `event_id`), the others by a copy.
pub(super) async fn record(
    db: &Database,
    owner: i64,
    rows: &[(Uuid, &str, &Envelope)],
    outbox: Option<Schema>,
) -> Result<(), DbError> {
    if rows.is_empty() {
        return Ok(());
    }
    let ids: Vec<Uuid> = rows.iter().map(|r| r.0).collect();
    let consumers: Vec<&str> = rows.iter().map(|r| r.1).collect();
    let client = db.client().await?;
    match outbox {
        Some(schema) => {
            let events: Vec<Uuid> = rows.iter().map(|r| r.2.id.as_uuid()).collect();
            client
                .execute(
                    "INSERT INTO broker.deliveries (id, consumer, source, event_id, owner)
                     SELECT u.id, u.consumer, $3, u.event_id, $5
                     FROM UNNEST($1::uuid[], $2::text[], $4::uuid[]) AS u(id, consumer, event_id)",
                    &[&ids, &consumers, &schema.name(), &events, &owner],
                )
                .await?;
        }
        None => {
            let events: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| serde_json::to_value(r.2).unwrap_or(serde_json::Value::Null))
                .collect();
            client
                .execute(
                    "INSERT INTO broker.deliveries (id, consumer, event, owner)
                     SELECT u.id, u.consumer, u.event, $4
                     FROM UNNEST($1::uuid[], $2::text[], $3::jsonb[]) AS u(id, consumer, event)",
                    &[&ids, &consumers, &events, &owner],
                )
                .await?;
        }
    }
    Ok(())
}

/// Forgets handled deliveries. The commit does not wait for the WAL flush: a delete lost in a
/// crash only means a redelivery, which the consumer's inbox drops.
pub(super) async fn delete(db: &Database, ids: &[Uuid]) -> Result<(), DbError> {
    let tx = db.begin_unflushed(Scope::anonymous()).await?;
    tx.execute("DELETE FROM broker.deliveries WHERE id = ANY($1)", &[&ids])
        .await?;
    tx.commit().await
}

/// Schedules attempt `attempt` of a delivery in `delay`, so a crash meanwhile keeps both the
/// count and the wait.
pub(super) async fn reschedule(
    db: &Database,
    id: Uuid,
    attempt: u32,
    delay: Duration,
    error: &str,
) -> Result<(), DbError> {
    let delay_ms = i64::try_from(delay.as_millis()).unwrap_or(i64::MAX);
    db.client()
        .await?
        .execute(
            "UPDATE broker.deliveries
             SET attempt = $2, due_at = now() + $3 * interval '1 millisecond', last_error = $4
             WHERE id = $1",
            &[&id, &to_i32(attempt), &delay_ms, &error],
        )
        .await?;
    Ok(())
}

/// Parks a delivery as a dead letter after `attempts` attempts, with a copy of its event
/// when it had only its place in an outbox: a dead letter may wait longer than the outbox
/// keeps it.
pub(super) async fn park(
    db: &Database,
    id: Uuid,
    attempts: u32,
    error: &str,
    event: Option<&Envelope>,
) -> Result<(), DbError> {
    let event = event.and_then(|e| serde_json::to_value(e).ok());
    db.client()
        .await?
        .execute(
            "UPDATE broker.deliveries
             SET attempt = $2, dead_at = now(), owner = NULL, last_error = $3,
                 event = coalesce(event, $4)
             WHERE id = $1",
            &[&id, &to_i32(attempts), &error, &event],
        )
        .await?;
    Ok(())
}

/// Takes for `owner` up to `limit` due deliveries of `consumers` that nobody holds: replayed
/// ones, and those whose owner's advisory lock is gone with its process. Oldest first.
pub(super) async fn take_up(
    db: &Database,
    owner: i64,
    consumers: &[String],
    limit: i64,
) -> Result<Vec<Taken>, DbError> {
    // A bigint advisory lock shows in pg_locks as its high and low halves.
    let rows = db
        .client()
        .await?
        .query(
            "WITH live AS (
                SELECT (l.classid::int8 << 32) | l.objid::int8 AS owner
                FROM pg_locks l
                WHERE l.locktype = 'advisory' AND l.objsubid = 1 AND l.granted
                  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
             ), free AS (
                SELECT d.id FROM broker.deliveries d
                WHERE d.consumer = ANY($2) AND d.dead_at IS NULL AND d.due_at <= now()
                  AND (d.owner IS NULL
                       OR (d.owner <> $1 AND d.owner NOT IN (SELECT owner FROM live)))
                ORDER BY d.seq
                LIMIT $3
                FOR UPDATE OF d SKIP LOCKED
             )
             UPDATE broker.deliveries d SET owner = $1
             FROM free WHERE d.id = free.id
             RETURNING d.seq, d.id, d.consumer, d.event, d.attempt, d.source, d.event_id",
            &[&owner, &consumers, &limit],
        )
        .await?;
    // Where a row names its event's place, the event is read from that outbox.
    let mut wanted: HashMap<&str, Vec<Uuid>> = HashMap::new();
    for r in &rows {
        if let (None, Some(source), Some(event)) = (
            r.get::<_, Option<serde_json::Value>>(3),
            r.get::<_, Option<&str>>(5),
            r.get::<_, Option<Uuid>>(6),
        ) {
            wanted.entry(source).or_default().push(event);
        }
    }
    let mut found: HashMap<Uuid, serde_json::Value> = HashMap::new();
    for (source, ids) in wanted {
        // A name no service has is no outbox: those rows stay without an event.
        let Some(schema) = Schema::from_name(source) else {
            continue;
        };
        for event in crate::outbox::events_by_id(db, schema, &ids).await? {
            found.insert(
                event.id.as_uuid(),
                serde_json::to_value(&event).unwrap_or(serde_json::Value::Null),
            );
        }
    }
    let mut taken: Vec<(i64, Taken)> = rows
        .iter()
        .map(|r| {
            let event = r.get::<_, Option<serde_json::Value>>(3).or_else(|| {
                r.get::<_, Option<Uuid>>(6)
                    .and_then(|id| found.get(&id).cloned())
            });
            (
                r.get(0),
                Taken {
                    id: r.get(1),
                    consumer: r.get(2),
                    purged: event.is_none(),
                    // Parked by the caller, which cannot decode it.
                    event: event.unwrap_or(serde_json::Value::Null),
                    attempt: u32::try_from(r.get::<_, i32>(4)).unwrap_or(1).max(1),
                },
            )
        })
        .collect();
    // RETURNING promises no order.
    taken.sort_by_key(|(seq, _)| *seq);
    Ok(taken.into_iter().map(|(_, t)| t).collect())
}

/// The dead letters of `consumer`, or of every consumer, oldest first. What
/// `bilet dlq list` prints for the in-process broker.
pub async fn dead_letters(
    db: &Database,
    consumer: Option<&str>,
) -> Result<Vec<DeadLetter>, DbError> {
    let rows = db
        .client()
        .await?
        .query(
            "SELECT consumer, attempt, event, last_error FROM broker.deliveries
             WHERE dead_at IS NOT NULL AND ($1::text IS NULL OR consumer = $1)
             ORDER BY seq",
            &[&consumer],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            // None only for a delivery whose event was purged from its outbox before it
            // could be parked with a copy.
            let event: Option<serde_json::Value> = r.get(2);
            DeadLetter {
                consumer: r.get(0),
                attempts: u32::try_from(r.get::<_, i32>(1)).unwrap_or(0),
                raw: event.as_ref().map(|e| e.to_string()).unwrap_or_default(),
                event: event.and_then(|e| serde_json::from_value(e).ok()),
                reason: r.get(3),
            }
        })
        .collect())
}

/// Sends every dead letter of `consumer` back with a fresh attempt count; a bus running the
/// consumer (in this process or another) takes them up within its poll. Returns how many.
/// What `bilet dlq replay` does for the in-process broker.
pub async fn replay(db: &Database, consumer: &str) -> Result<usize, DbError> {
    let n = db
        .client()
        .await?
        .execute(
            "UPDATE broker.deliveries
             SET dead_at = NULL, attempt = 1, owner = NULL, due_at = now()
             WHERE consumer = $1 AND dead_at IS NOT NULL",
            &[&consumer],
        )
        .await?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

fn to_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
