//! The in-process broker's deliveries in PostgreSQL (`broker.deliveries`): the safety net
//! under its memory queues, its retry schedule and its dead letters. Before a publish is
//! confirmed each consumer gets a row naming its events (up to `EVENTS_PER_ROW` of one outbox
//! in a row, or one event as a copy); the row belongs to the bus holding it in memory (its
//! owner, see `owner`) and is deleted once every message in it was handled. A message of a
//! shared row that fails moves to a row of its own for its retries or as a dead letter. A bus
//! running a consumer takes up the rows of that consumer that nobody holds: those of a process
//! that died (all of whose events come again; the consumers' inboxes drop what they applied),
//! and replayed dead letters.

use super::DeadLetter;
use crate::db::{Database, DbError, Schema, Scope};
use domain::envelope::Envelope;
use std::collections::HashMap;
use std::time::Duration;
use uuid::Uuid;

/// Events of an outbox one row names at most: 100 ids (1.6 kB) keep a row below the size at
/// which PostgreSQL compresses a value or moves it out of line.
pub(super) const EVENTS_PER_ROW: usize = 100;

/// A row taken up from the table, to be handed to its consumer.
pub(super) struct Taken {
    /// The row.
    pub id: Uuid,
    /// Whose it is.
    pub consumer: String,
    /// The attempt this delivery is.
    pub attempt: u32,
    /// The outbox its events are named in; none for a row carrying a copy.
    pub source: Option<Schema>,
    /// Its events, in publication order.
    pub events: Vec<TakenEvent>,
}

/// One event of a row taken up.
pub(super) struct TakenEvent {
    /// Its id, where the row names it in an outbox.
    pub id: Option<Uuid>,
    /// The envelope as stored, decoded by the caller, which parks it if it does not decode;
    /// none when the event is no longer in its outbox (purged).
    pub event: Option<serde_json::Value>,
}

/// What a publish records for one consumer in one row.
pub(super) struct Recorded<'a> {
    /// The row.
    pub id: Uuid,
    /// Whose it is.
    pub consumer: &'a str,
    /// Its events, in order: one when recorded as a copy, up to `EVENTS_PER_ROW` by place.
    pub events: Vec<&'a Envelope>,
}

/// Records the deliveries of a publish as held by `owner`, in one statement: once this
/// returns they survive a crash. Events read from the outbox of `outbox` are recorded by
/// where they are (`source`, `event_ids`, several to a row), the others by a copy each.
pub(super) async fn record(
    db: &Database,
    owner: i64,
    rows: &[Recorded<'_>],
    outbox: Option<Schema>,
) -> Result<(), DbError> {
    if rows.is_empty() {
        return Ok(());
    }
    let client = db.client().await?;
    match outbox {
        Some(schema) => {
            // Flat arrays, one element per event, folded back into rows in their order (the
            // order of `seq`, which take-up follows).
            let (mut ids, mut consumers, mut events) = (Vec::new(), Vec::new(), Vec::new());
            for row in rows {
                for event in &row.events {
                    ids.push(row.id);
                    consumers.push(row.consumer);
                    events.push(event.id.as_uuid());
                }
            }
            client
                .execute(
                    "INSERT INTO broker.deliveries (id, consumer, source, event_ids, owner)
                     SELECT u.id, min(u.consumer), $3, array_agg(u.event_id ORDER BY u.n), $5
                     FROM UNNEST($1::uuid[], $2::text[], $4::uuid[]) WITH ORDINALITY
                          AS u(id, consumer, event_id, n)
                     GROUP BY u.id
                     ORDER BY min(u.n)",
                    &[&ids, &consumers, &schema.name(), &events, &owner],
                )
                .await?;
        }
        None => {
            let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
            let consumers: Vec<&str> = rows.iter().map(|r| r.consumer).collect();
            let events: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| {
                    r.events
                        .first()
                        .and_then(|e| serde_json::to_value(e).ok())
                        .unwrap_or(serde_json::Value::Null)
                })
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

/// One message of a shared row, moving to a row of its own.
pub(super) struct Apart<'a> {
    /// Its new row.
    pub id: Uuid,
    /// Whose it is.
    pub consumer: &'a str,
    /// The outbox the shared row names its events in.
    pub source: Schema,
    /// The event.
    pub event_id: Uuid,
}

/// Gives a message of a shared row a row of its own holding its attempt `attempt`, due in
/// `delay`: from then on its retries are its own, and the shared row waits only for its other
/// messages.
pub(super) async fn split(
    db: &Database,
    owner: i64,
    apart: &Apart<'_>,
    attempt: u32,
    delay: Duration,
    error: &str,
) -> Result<(), DbError> {
    let delay_ms = millis(delay);
    db.client()
        .await?
        .execute(
            "INSERT INTO broker.deliveries
                 (id, consumer, source, event_ids, owner, attempt, due_at, last_error)
             VALUES ($1, $2, $3, ARRAY[$4::uuid], $5, $6,
                     now() + $7 * interval '1 millisecond', $8)",
            &[
                &apart.id,
                &apart.consumer,
                &apart.source.name(),
                &apart.event_id,
                &owner,
                &to_i32(attempt),
                &delay_ms,
                &error,
            ],
        )
        .await?;
    Ok(())
}

/// Parks a message of a shared row as a dead letter of its own, with a copy of its event when
/// there is one (none when it was purged from its outbox).
pub(super) async fn park_apart(
    db: &Database,
    apart: &Apart<'_>,
    attempts: u32,
    error: &str,
    event: Option<serde_json::Value>,
) -> Result<(), DbError> {
    db.client()
        .await?
        .execute(
            "INSERT INTO broker.deliveries
                 (id, consumer, source, event_ids, event, attempt, dead_at, last_error)
             VALUES ($1, $2, $3, ARRAY[$4::uuid], $5, $6, now(), $7)",
            &[
                &apart.id,
                &apart.consumer,
                &apart.source.name(),
                &apart.event_id,
                &event,
                &to_i32(attempts),
                &error,
            ],
        )
        .await?;
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
    let delay_ms = millis(delay);
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
             RETURNING d.seq, d.id, d.consumer, d.event, d.attempt, d.source,
                       coalesce(d.event_ids, ARRAY[d.event_id])",
            &[&owner, &consumers, &limit],
        )
        .await?;
    // Where a row names its events' places, the events are read from that outbox.
    let mut wanted: HashMap<&str, Vec<Uuid>> = HashMap::new();
    for r in &rows {
        if let (None, Some(source), Some(events)) = (
            r.get::<_, Option<serde_json::Value>>(3),
            r.get::<_, Option<&str>>(5),
            r.get::<_, Option<Vec<Option<Uuid>>>>(6),
        ) {
            wanted
                .entry(source)
                .or_default()
                .extend(events.into_iter().flatten());
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
            let events = match r.get::<_, Option<serde_json::Value>>(3) {
                Some(copy) => vec![TakenEvent {
                    id: None,
                    event: Some(copy),
                }],
                None => r
                    .get::<_, Option<Vec<Option<Uuid>>>>(6)
                    .unwrap_or_default()
                    .into_iter()
                    .flatten()
                    .map(|id| TakenEvent {
                        id: Some(id),
                        event: found.get(&id).cloned(),
                    })
                    .collect(),
            };
            (
                r.get(0),
                Taken {
                    id: r.get(1),
                    consumer: r.get(2),
                    attempt: u32::try_from(r.get::<_, i32>(4)).unwrap_or(1).max(1),
                    source: r.get::<_, Option<&str>>(5).and_then(Schema::from_name),
                    events,
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

/// A delay in whole milliseconds, as the retry schedule's statements take it.
fn millis(delay: Duration) -> i64 {
    i64::try_from(delay.as_millis()).unwrap_or(i64::MAX)
}

fn to_i32(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}
