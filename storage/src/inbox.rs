//! The consumer side of exactly-once, written once for every service. A service declares a
//! [`Projection`] (its name, the kinds it takes, what an event does to its tables); [`Inbox`]
//! decodes each delivery through the domain contract, claims the event id inside the
//! transaction that applies it and commits both together. A redelivered event finds its id
//! taken and changes nothing. Events that queued up together are claimed and applied in one
//! transaction per run of the same scope, so a backlog costs a commit per run, not per event.

use crate::broker::{Handler, HandlerError, Subscription};
use crate::db::{Database, DbError, Schema, Scope, Tx};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::contract::{ContractError, DomainEvent, Kind};
use domain::envelope::Envelope;
use domain::ids::EventId;
use std::collections::HashSet;
use std::sync::Arc;
use uuid::Uuid;

/// A delivered event: its envelope (id, time, tenant, actor) and its decoded payload.
pub struct Received<'a> {
    /// The envelope as it came off the broker.
    pub envelope: &'a Envelope,
    /// Its payload, read through the contract.
    pub event: DomainEvent,
}

/// What one service does with the events it takes.
#[async_trait]
pub trait Projection: Send + Sync + 'static {
    /// The consumer's name: it names the queue, the dead letters and the inbox rows.
    const NAME: &'static str;
    /// The schema whose `processed_events` keeps this consumer's claims.
    const SCHEMA: Schema;
    /// The kinds of event it subscribes to.
    const TAKES: &'static [Kind];
    /// What `apply` hands on to `committed`.
    type Done: Send;

    /// The scope of the transaction an event is applied in.
    fn scope(&self, _event: &Received<'_>) -> Result<Scope, HandlerError> {
        Ok(Scope::system())
    }

    /// Applies one claimed event inside `tx`; an error rolls the claim back and the broker
    /// delivers the event again.
    async fn apply(&self, tx: &Tx, event: &Received<'_>) -> Result<Self::Done, HandlerError>;

    /// Applies a whole run of claimed events of one scope with set-based statements, when the
    /// projection can; `None` leaves them to `apply`, one by one. On an error the run is rolled
    /// back and applied again event by event, so nothing it does may reach outside `tx` unless
    /// doing it twice is harmless.
    async fn apply_all(
        &self,
        _tx: &Tx,
        _events: &[&Received<'_>],
    ) -> Option<Result<Vec<Self::Done>, HandlerError>> {
        None
    }

    /// Whether `apply_all` takes `event`: a run of such events grows to SET_RUN events in one
    /// transaction instead of RUN, since it takes no savepoints.
    fn in_set(&self, _event: &Received<'_>) -> bool {
        false
    }

    /// Runs once the event and its claim have committed.
    fn committed(&self, _event: &Received<'_>, _done: Self::Done) {}
}

/// A projection behind the broker: decode, claim, apply, commit.
pub struct Inbox<P> {
    db: Database,
    projection: P,
}

impl<P: Projection> Inbox<P> {
    /// `projection` as a broker handler applying through `db` (tests call it directly).
    pub fn new(db: Database, projection: P) -> Inbox<P> {
        Inbox { db, projection }
    }

    /// The broker subscription of `projection`, applying through `db`.
    pub fn subscription(db: Database, projection: P) -> Subscription {
        Subscription {
            consumer: P::NAME.to_string(),
            patterns: P::TAKES.iter().map(|k| k.as_str().to_string()).collect(),
            handler: Arc::new(Inbox { db, projection }),
        }
    }

    /// The payload of `envelope` as this consumer reads it; `None` for a kind it does not
    /// take (a topic pattern can bring more than it asked for).
    pub fn decode(envelope: &Envelope) -> Result<Option<DomainEvent>, ContractError> {
        match envelope.decode() {
            Ok(event) if P::TAKES.contains(&event.kind()) => Ok(Some(event)),
            Ok(_) | Err(ContractError::Unknown(_)) => Ok(None),
            Err(malformed) => Err(malformed),
        }
    }
}

#[async_trait]
impl<P: Projection> Handler for Inbox<P> {
    async fn handle(&self, envelope: &Envelope) -> Result<(), HandlerError> {
        // A payload that does not read is a bad message: retried, then dead-lettered.
        let Some(event) = Self::decode(envelope)? else {
            return Ok(());
        };
        let received = Received { envelope, event };
        let tx = self.db.begin(self.projection.scope(&received)?).await?;
        // The claim's row stays locked until commit, so a concurrent second delivery of the
        // same event waits here and then finds it taken.
        if !claim(&tx, P::SCHEMA, P::NAME, envelope.id).await? {
            return Ok(());
        }
        let done = self.projection.apply(&tx, &received).await?;
        tx.commit().await?;
        self.projection.committed(&received, done);
        Ok(())
    }

    /// One transaction, one claim statement and one commit per run of events of the same
    /// scope. Any error sends the whole batch through `handle`, event by event: a malformed
    /// payload is dead-lettered there, and what a run committed is found claimed.
    async fn handle_batch(&self, envelopes: &[Envelope]) -> Result<(), HandlerError> {
        for run in self.runs(Self::receive(envelopes)?)? {
            self.apply_run(run).await?;
        }
        Ok(())
    }
}

/// Events a transaction applies at most. Each after the first is applied under a savepoint,
/// and PostgreSQL keeps 64 subtransactions of a transaction in shared memory: past that, every
/// other session's snapshots must look them up in pg_subtrans, which on an on-sale's load
/// costs more than the commits saved.
const RUN: usize = 64;

/// Events a transaction applies at most when the projection takes all of them at once
/// (`Projection::in_set`): a backlog is drained in commits of this many, not of RUN.
const SET_RUN: usize = 512;

/// Consecutive events applied in one transaction.
struct Run<'a> {
    scope: Scope,
    events: Vec<Received<'a>>,
    /// Every event of it is one `apply_all` takes.
    set: bool,
}

impl Run<'_> {
    /// Whether an event of `scope` (`set`: one `apply_all` takes) may join the run.
    fn takes(&self, scope: &Scope, set: bool) -> bool {
        let limit = if self.set && set { SET_RUN } else { RUN };
        self.scope == *scope && self.events.len() < limit
    }
}

impl<P: Projection> Inbox<P> {
    /// The events of `envelopes` this consumer takes, decoded, in order.
    fn receive(envelopes: &[Envelope]) -> Result<Vec<Received<'_>>, ContractError> {
        let mut received = Vec::with_capacity(envelopes.len());
        for envelope in envelopes {
            if let Some(event) = Self::decode(envelope)? {
                received.push(Received { envelope, event });
            }
        }
        Ok(received)
    }

    /// `received` cut where the scope changes (a transaction has one) and every RUN events,
    /// or SET_RUN while the projection takes them all at once.
    fn runs<'a>(&self, received: Vec<Received<'a>>) -> Result<Vec<Run<'a>>, HandlerError> {
        let mut runs: Vec<Run<'a>> = Vec::new();
        for event in received {
            let scope = self.projection.scope(&event)?;
            let set = self.projection.in_set(&event);
            match runs.last_mut() {
                Some(run) if run.takes(&scope, set) => {
                    run.set &= set;
                    run.events.push(event);
                }
                _ => runs.push(Run {
                    scope,
                    events: vec![event],
                    set,
                }),
            }
        }
        Ok(runs)
    }

    /// Claims the run's events at once and applies the ones not processed before: all in one
    /// go when the projection can, else in order, one by one (see `apply_each`).
    async fn apply_run(&self, run: Run<'_>) -> Result<(), HandlerError> {
        let (tx, unapplied) = self.claim(run.scope, &run.events).await?;
        if unapplied.is_empty() {
            // All processed before: a redelivery.
            return Ok(tx.rollback().await?);
        }
        if unapplied.len() > 1 {
            // Each claimed once, in the run's order.
            let mut fresh = unapplied.clone();
            let claimed: Vec<&Received<'_>> = run
                .events
                .iter()
                .filter(|r| fresh.remove(&r.envelope.id.as_uuid()))
                .collect();
            if let Some(done) = self.projection.apply_all(&tx, &claimed).await {
                let done = done?;
                tx.commit().await?;
                self.announce(claimed.into_iter().zip(done).collect());
                return Ok(());
            }
        }
        if run.events.len() <= RUN {
            return self.apply_each(tx, &run.events, unapplied).await;
        }
        // A long run the projection declined after all (one registration named twice, say):
        // RUN events a transaction, for the savepoints' sake.
        tx.rollback().await?;
        for events in run.events.chunks(RUN) {
            let (tx, unapplied) = self.claim(run.scope, events).await?;
            self.apply_each(tx, events, unapplied).await?;
        }
        Ok(())
    }

    /// A transaction of `scope` holding the claims of `events`, and those it claimed (the
    /// ones not processed before).
    async fn claim(
        &self,
        scope: Scope,
        events: &[Received<'_>],
    ) -> Result<(Tx, HashSet<Uuid>), HandlerError> {
        let tx = self.db.begin(scope).await?;
        let ids: Vec<Uuid> = events.iter().map(|r| r.envelope.id.as_uuid()).collect();
        let claimed = claim_all(&tx, P::SCHEMA, P::NAME, &ids).await?;
        Ok((tx, claimed))
    }

    /// Applies the claimed events of `events` in order, each under a savepoint. An event
    /// failing ends the run: what was applied before it is committed all the same, since its
    /// effects outside the database (a mail sent) must not happen twice; the failing event
    /// and those after it are left unclaimed.
    async fn apply_each(
        &self,
        tx: Tx,
        events: &[Received<'_>],
        mut unapplied: HashSet<Uuid>,
    ) -> Result<(), HandlerError> {
        let mut applied = Vec::with_capacity(unapplied.len());
        for received in events {
            let id = received.envelope.id.as_uuid();
            // Not claimed here: processed before, or a second copy earlier in this run.
            if !unapplied.remove(&id) {
                continue;
            }
            if !applied.is_empty() {
                tx.batch_execute(&format!("SAVEPOINT {SAVEPOINT}")).await?;
            }
            match self.projection.apply(&tx, received).await {
                Ok(done) => applied.push((received, done)),
                Err(error) if applied.is_empty() => return Err(error),
                Err(error) => {
                    unapplied.insert(id);
                    keep_applied(tx, P::SCHEMA, P::NAME, &unapplied).await?;
                    self.announce(applied);
                    return Err(error);
                }
            }
        }
        tx.commit().await?;
        self.announce(applied);
        Ok(())
    }

    fn announce(&self, applied: Vec<(&Received<'_>, P::Done)>) {
        for (received, done) in applied {
            self.projection.committed(received, done);
        }
    }
}

/// The savepoint before each event of a run but the first.
const SAVEPOINT: &str = "inbox_event";

/// Commits what a run applied before one of its events failed: that event's writes are undone
/// (back to the savepoint taken before it) and the claims of `unapplied` released.
async fn keep_applied(
    tx: Tx,
    schema: Schema,
    consumer: &str,
    unapplied: &HashSet<Uuid>,
) -> Result<(), DbError> {
    tx.batch_execute(&format!("ROLLBACK TO SAVEPOINT {SAVEPOINT}"))
        .await?;
    let unapplied: Vec<Uuid> = unapplied.iter().copied().collect();
    tx.execute(
        &format!(
            "DELETE FROM {}.processed_events WHERE consumer = $1 AND event_id = ANY($2::uuid[])",
            schema.name()
        ),
        &[&consumer, &unapplied],
    )
    .await?;
    tx.commit().await
}

/// Claims `event` for `consumer` within `tx`. Returns false when it was already processed,
/// in which case the caller must skip its work (and may simply drop the transaction).
pub async fn claim(
    tx: &Tx,
    schema: Schema,
    consumer: &str,
    event: EventId,
) -> Result<bool, DbError> {
    // Prepared once per connection: every event a consumer takes goes through it.
    let statement = tx
        .prepare_cached(&format!(
            "INSERT INTO {}.processed_events (consumer, event_id) VALUES ($1, $2)
             ON CONFLICT DO NOTHING",
            schema.name()
        ))
        .await?;
    let inserted = tx
        .execute(&statement, &[&consumer, &event.as_uuid()])
        .await?;
    Ok(inserted == 1)
}

/// Claims `events` for `consumer` within `tx` in one statement; returns those not processed
/// before (a repeated id is claimed once). Ids are inserted in sorted order, so transactions
/// claiming overlapping sets wait for each other instead of deadlocking.
pub async fn claim_all(
    tx: &Tx,
    schema: Schema,
    consumer: &str,
    events: &[Uuid],
) -> Result<HashSet<Uuid>, DbError> {
    let statement = tx
        .prepare_cached(&format!(
            "INSERT INTO {}.processed_events (consumer, event_id)
             SELECT $1::text, id FROM UNNEST($2::uuid[]) AS claimed (id) ORDER BY id
             ON CONFLICT DO NOTHING
             RETURNING event_id",
            schema.name()
        ))
        .await?;
    let rows = tx.query(&statement, &[&consumer, &events]).await?;
    rows.iter()
        .map(|row| row.try_get::<_, Uuid>(0).map_err(DbError::from))
        .collect()
}

/// How many claims one statement forgets: a day of an on-sale is millions of them, and one
/// statement deleting them all would hold its locks and bloat its WAL record for minutes.
const FORGET_SLICE: i64 = 10_000;

/// Forgets the claims of `schema` made before `before` (a redelivery that late does not
/// happen: brokers retry within minutes, and dead letters were never claimed), slice by slice,
/// so the table holds a bounded window of history rather than every event ever applied. An
/// event's id is a v7 id minted before it was claimed, so each slice reads only the range of
/// each consumer's claims below the floor of `before` in the primary key, not the whole table.
pub async fn forget_older_than(
    db: &Database,
    schema: Schema,
    before: DateTime<Utc>,
) -> Result<u64, DbError> {
    let client = db.client().await?;
    let s = schema.name();
    // The consumers, one primary-key probe each (the table has a handful of them).
    let consumers: Vec<String> = client
        .query(
            &format!(
                "WITH RECURSIVE c(consumer) AS (
                     SELECT min(consumer) FROM {s}.processed_events
                     UNION ALL
                     SELECT (SELECT min(consumer) FROM {s}.processed_events p WHERE p.consumer > c.consumer)
                       FROM c WHERE c.consumer IS NOT NULL)
                 SELECT consumer FROM c WHERE consumer IS NOT NULL"
            ),
            &[],
        )
        .await?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    let old = "consumer = ANY($1) AND event_id < $2 AND processed_at < $3";
    let sql = format!(
        "DELETE FROM {s}.processed_events WHERE ctid = ANY(ARRAY(
            SELECT ctid FROM {s}.processed_events WHERE {old} LIMIT $4))"
    );
    let left = format!("SELECT EXISTS (SELECT 1 FROM {s}.processed_events WHERE {old})");
    let floor = domain::ids::v7_floor(before);
    let mut forgotten = 0;
    loop {
        let n = client
            .execute(&sql, &[&consumers, &floor, &before, &FORGET_SLICE])
            .await?;
        forgotten += n;
        // A slice that deleted nothing may only have waited for another node cleaning the same
        // schema, which took those rows and has more to go: done only when none are left.
        if n > 0 {
            continue;
        }
        let any_left: bool = client
            .query_one(&left, &[&consumers, &floor, &before])
            .await?
            .try_get(0)?;
        if !any_left {
            return Ok(forgotten);
        }
    }
}
