//! The relay moves committed outbox rows to the broker, in order, and stamps a row only after
//! the broker confirmed it. It wakes when a transaction of this process that wrote into its
//! outbox commits (the doorbell), and polls for what other processes wrote.

use crate::broker::Broker;
use crate::db::{Database, DbError, Schema};
use domain::envelope::{Envelope, Payload};
use domain::ids::{EventId, TenantId, UserId};
use futures_util::FutureExt;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_postgres::types::Json;

/// Rows published per round; a full round is followed by another at once. A round's read
/// walks past the index entries of the rows published before it until a vacuum removes them
/// (2.7 ms a round behind a sale of 600,000), so a backlog is published in large rounds.
const BATCH: i64 = 500;
/// The pause before publishing again to a consumer that is behind.
const BEHIND_PAUSE: Duration = Duration::from_millis(100);

/// Publishes the outbox of a set of schemas.
pub struct Relay {
    db: Database,
    broker: Arc<dyn Broker>,
    schemas: Vec<Schema>,
    poll: Duration,
}

/// A running relay; dropping it does not stop it, `stop` does.
pub struct RelayHandle {
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl RelayHandle {
    /// Stops the relay after its current round.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

impl Relay {
    /// A relay over `schemas`.
    pub fn new(
        db: Database,
        broker: Arc<dyn Broker>,
        schemas: Vec<Schema>,
        poll: Duration,
    ) -> Relay {
        Relay {
            db,
            broker,
            schemas,
            poll,
        }
    }

    /// Starts one publishing task per schema.
    pub fn start(self) -> RelayHandle {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = Vec::new();
        for schema in self.schemas {
            tasks.push(tokio::spawn(run_schema(
                self.db.clone(),
                self.broker.clone(),
                schema,
                super::doorbell::hang(schema),
                self.poll,
                stop_rx.clone(),
            )));
        }
        RelayHandle {
            stop: stop_tx,
            tasks,
        }
    }
}

/// The pause after `failures` failed rounds in a row: doubling from 250 ms up to 15 s. The
/// first retry is quick (a broker that blinked); a long outage costs four attempts a minute,
/// and events wait at most 15 s once the broker is back.
fn backoff(failures: u32) -> Duration {
    const FIRST_MS: u64 = 250;
    const MAX_MS: u64 = 15_000;
    let doublings = failures.saturating_sub(1).min(16);
    Duration::from_millis((FIRST_MS << doublings).min(MAX_MS))
}

async fn run_schema(
    db: Database,
    broker: Arc<dyn Broker>,
    schema: Schema,
    waker: Arc<Notify>,
    poll: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut failures: u32 = 0;
    loop {
        if *stop.borrow() {
            return;
        }
        let outcome = publish_round(&db, broker.as_ref(), schema).await;
        match outcome {
            Ok(n) if n as i64 >= BATCH => failures = 0,
            Ok(_) => {
                failures = 0;
                tokio::select! {
                    _ = waker.notified() => {}
                    _ = tokio::time::sleep(poll) => {}
                    _ = stop.changed() => return,
                }
            }
            // Backpressure, not a failure: the broker waited for room already; try again
            // soon, at the pace the consumer frees it.
            Err(RoundError::Behind(reason)) => {
                tracing::debug!(schema = schema.name(), %reason, "outbox relay waits for a consumer");
                tokio::select! {
                    _ = tokio::time::sleep(BEHIND_PAUSE) => {}
                    _ = stop.changed() => return,
                }
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let pause = backoff(failures);
                tracing::warn!(schema = schema.name(), error = %e, retry_in_ms = pause.as_millis() as u64, "outbox relay round failed");
                // Only the backoff ends the pause: a ring says there is more to publish, which
                // the failed round knew already, and during an outage every commit rings.
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => return,
                }
                // The rings of the pause are covered by the round that follows.
                let _ = waker.notified().now_or_never();
            }
        }
    }
}

/// Why a round stopped early.
#[derive(Debug, thiserror::Error)]
enum RoundError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("broker refused: {0}")]
    Broker(String),
    /// A consumer's queue is full: the rows wait in the outbox, on disk.
    #[error("a consumer is behind: {0}")]
    Behind(String),
}

/// Publishes up to BATCH pending rows; returns how many were confirmed.
async fn publish_round(
    db: &Database,
    broker: &dyn Broker,
    schema: Schema,
) -> Result<usize, RoundError> {
    let s = schema.name();
    let tx = db.begin(crate::Scope::anonymous()).await?;
    // One relay per schema at a time keeps the order; another process skips the round.
    // Sorting is ruled out for the round's read: each day's pending index already gives its
    // rows in order, and once a day's table has been analyzed while nothing of it waited, the
    // planner expects one pending row and reads all of them to sort them (during a burst over
    // a thousand events, 95 ms a round instead of 3), where merging the days' indexes stops at
    // the batch.
    let locked: bool = tx
        .query_one(
            "SELECT pg_try_advisory_xact_lock(hashtext($1)), set_config('enable_sort', 'off', true)",
            &[&format!("bilet-outbox-{s}")],
        )
        .await
        .map_err(DbError::from)?
        .get(0);
    if !locked {
        return Ok(0);
    }
    let rows = tx
        .query(
            &format!(
                "SELECT {ENVELOPE} FROM {s}.outbox WHERE published_at IS NULL ORDER BY seq LIMIT $1"
            ),
            &[&BATCH],
        )
        .await
        .map_err(DbError::from)?;
    if rows.is_empty() {
        return Ok(0);
    }
    let events: Vec<Envelope> = rows.iter().map(envelope).collect();
    let (confirmed, failure) = match broker.publish_from(&events, schema).await {
        Ok(()) => (events.len(), None),
        Err(e) => (e.confirmed, Some((e.reason, e.behind))),
    };
    if confirmed > 0 {
        let ids: Vec<uuid::Uuid> = events[..confirmed].iter().map(|e| e.id.as_uuid()).collect();
        tx.execute(
            &format!("UPDATE {s}.outbox SET published_at = now() WHERE id = ANY($1)"),
            &[&ids],
        )
        .await
        .map_err(DbError::from)?;
    }
    tx.commit().await?;
    match failure {
        Some((reason, true)) => Err(RoundError::Behind(reason)),
        Some((reason, false)) => Err(RoundError::Broker(reason)),
        None => Ok(confirmed),
    }
}

/// The columns of an outbox row that make its envelope, in the order `envelope` reads them.
pub(super) const ENVELOPE: &str = "id, event_type, tenant_id, actor_id, occurred_at, data";

/// The envelope of an outbox row selected as `ENVELOPE`.
pub(super) fn envelope(r: &tokio_postgres::Row) -> Envelope {
    Envelope {
        id: EventId(r.get(0)),
        event_type: r.get(1),
        tenant_id: r.get::<_, Option<uuid::Uuid>>(2).map(TenantId),
        actor_id: r.get::<_, Option<uuid::Uuid>>(3).map(UserId),
        occurred_at: r.get(4),
        // Read as text: the relay passes it on, each consumer decodes its own fields.
        data: Payload::from_raw(r.get::<_, Json<Box<RawValue>>>(5).0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_fifteen_seconds() {
        let ms = |f| backoff(f).as_millis() as u64;
        assert_eq!(
            [ms(1), ms(2), ms(3), ms(4), ms(5)],
            [250, 500, 1_000, 2_000, 4_000]
        );
        assert_eq!(ms(7), 15_000);
        assert_eq!(ms(u32::MAX), 15_000);
    }
}
