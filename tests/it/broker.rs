//! The in-process broker on a database (issue 22): failing handlers are retried with growing
//! backoff, then parked as dead letters in PostgreSQL that survive a restart and can be
//! replayed; a delivery in flight when the process died is delivered after the restart, once.
//! Events that queued up are applied in batches (issue 29): one transaction per run, each
//! event once, a failing one retried and dead-lettered on its own.

use crate::outbox::{Applier, start_relay, write_event};
use crate::support::{TestDb, eventually};
use async_trait::async_trait;
use domain::contract::{Kind, samples};
use domain::envelope::Envelope;
use domain::ids::{EventId, TenantId};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use storage::broker::{
    Broker, Handler, HandlerError, MemoryBroker, RetryPolicy, Subscription, deliveries,
};
use storage::inbox::{Inbox, Projection, Received};
use storage::{Schema, Scope, Tx, outbox};

/// Fails `failures` times, then applies; notes when each attempt came.
pub struct FailsThen {
    pub consumer: String,
    pub failures: AtomicUsize,
    pub attempts: Mutex<Vec<Instant>>,
    pub handled: Mutex<Vec<EventId>>,
}

impl FailsThen {
    pub fn new(failures: usize) -> Arc<FailsThen> {
        FailsThen::named(
            &format!("fails-{}", uuid::Uuid::now_v7().simple()),
            failures,
        )
    }

    pub fn named(consumer: &str, failures: usize) -> Arc<FailsThen> {
        Arc::new(FailsThen {
            consumer: consumer.to_string(),
            failures: AtomicUsize::new(failures),
            attempts: Mutex::new(Vec::new()),
            handled: Mutex::new(Vec::new()),
        })
    }

    pub fn subscription(self: &Arc<Self>) -> Subscription {
        Subscription {
            consumer: self.consumer.clone(),
            patterns: vec!["retry.#".into()],
            handler: self.clone(),
        }
    }

    pub fn handled(&self) -> Vec<EventId> {
        self.handled.lock().unwrap().clone()
    }
}

#[async_trait]
impl Handler for FailsThen {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        self.attempts.lock().unwrap().push(Instant::now());
        let left = self.failures.load(Ordering::SeqCst);
        if left > 0 {
            self.failures.store(left - 1, Ordering::SeqCst);
            return Err("downstream refused".into());
        }
        self.handled.lock().unwrap().push(event.id);
        Ok(())
    }
}

/// Starts handling and never finishes, like a process killed in the middle of a handler.
struct Stuck {
    started: AtomicBool,
}

#[async_trait]
impl Handler for Stuck {
    async fn handle(&self, _: &Envelope) -> Result<(), HandlerError> {
        self.started.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
        Ok(())
    }
}

/// Subscribes `consumer` to `pattern` on `broker` with a handler that never finishes.
async fn stuck_on(broker: &Arc<dyn Broker>, consumer: &str, pattern: &str) -> Arc<Stuck> {
    let stuck = Arc::new(Stuck {
        started: AtomicBool::new(false),
    });
    broker
        .subscribe(Subscription {
            consumer: consumer.to_string(),
            patterns: vec![pattern.into()],
            handler: stuck.clone(),
        })
        .await
        .unwrap();
    stuck
}

pub async fn durable(t: &TestDb, policy: RetryPolicy) -> Arc<dyn Broker> {
    Arc::new(MemoryBroker::durable(policy, t.db.clone()).await.unwrap())
}

/// Whether `consumer` comes to have exactly one dead letter within 10 s.
async fn parked_one(t: &TestDb, consumer: &str) -> bool {
    eventually(10, || async {
        deliveries::dead_letters(&t.db, Some(consumer))
            .await
            .unwrap()
            .len()
            == 1
    })
    .await
}

/// Rows of `consumer` in `broker.deliveries`, dead letters included.
pub async fn rows(t: &TestDb, consumer: &str) -> i64 {
    t.owner()
        .await
        .query_one(
            "SELECT count(*) FROM broker.deliveries WHERE consumer = $1",
            &[&consumer],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_failing_handler_is_retried_with_growing_backoff_until_it_succeeds() {
    let t = TestDb::new().await;
    let broker = durable(
        &t,
        RetryPolicy {
            max_attempts: 5,
            base_delay: Duration::from_millis(100),
        },
    )
    .await;
    let handler = FailsThen::new(3);
    broker.subscribe(handler.subscription()).await.unwrap();
    let event = Envelope::new("retry.me", None, None, serde_json::json!({}));
    broker.publish(std::slice::from_ref(&event)).await.unwrap();

    assert!(eventually(10, || async { handler.handled() == vec![event.id] }).await);
    let times = handler.attempts.lock().unwrap().clone();
    assert_eq!(times.len(), 4, "three failures and the success");
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    for (gap, least) in gaps.iter().zip([100, 200, 400]) {
        assert!(
            *gap >= Duration::from_millis(least),
            "waits double from 100 ms: {gaps:?}"
        );
    }
    assert!(gaps[0] < gaps[1] && gaps[1] < gaps[2], "{gaps:?}");
    assert!(
        eventually(5, || async { rows(&t, &handler.consumer).await == 0 }).await,
        "the delivery is forgotten once handled"
    );
    assert!(broker.dead_letters(None).await.unwrap().is_empty());
}

#[tokio::test]
async fn dead_letters_are_kept_in_postgres_across_a_restart_and_replayed() {
    let t = TestDb::new().await;
    let policy = RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(50),
    };
    let first = durable(&t, policy).await;
    let broken = FailsThen::new(usize::MAX);
    let consumer = broken.consumer.clone();
    first.subscribe(broken.subscription()).await.unwrap();
    let event = Envelope::new("retry.never", None, None, serde_json::json!({"k": 1}));
    first.publish(std::slice::from_ref(&event)).await.unwrap();

    assert!(parked_one(&t, &consumer).await, "parked after max_attempts");
    assert_eq!(broken.attempts.lock().unwrap().len(), 3, "exactly N tries");
    let letters = deliveries::dead_letters(&t.db, Some(&consumer))
        .await
        .unwrap();
    assert_eq!(letters[0].attempts, 3);
    assert_eq!(letters[0].event.as_ref().map(|e| e.id), Some(event.id));
    assert_eq!(letters[0].reason.as_deref(), Some("downstream refused"));
    assert_eq!(first.dead_letters(None).await.unwrap().len(), 1);

    // The process goes away; a new one on the same database still has the dead letter and
    // does not retry it by itself.
    drop(first);
    let second = durable(&t, policy).await;
    let fixed = FailsThen::named(&consumer, 0);
    second.subscribe(fixed.subscription()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert!(fixed.handled().is_empty(), "dead letters wait for a replay");
    let letters = second.dead_letters(Some(&consumer)).await.unwrap();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].event.as_ref().map(|e| e.id), Some(event.id));

    // What `bilet dlq replay` does, from any process: the running bus takes it up.
    assert_eq!(deliveries::replay(&t.db, &consumer).await.unwrap(), 1);
    assert!(eventually(10, || async { fixed.handled() == vec![event.id] }).await);
    assert!(
        deliveries::dead_letters(&t.db, Some(&consumer))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(eventually(5, || async { rows(&t, &consumer).await == 0 }).await);
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(fixed.handled(), vec![event.id], "delivered once");
}

#[tokio::test]
async fn a_dead_letter_of_an_outbox_event_keeps_its_event_after_the_outbox_forgot_it() {
    let t = TestDb::new().await;
    let policy = RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(50),
    };
    let bus = durable(&t, policy).await;
    let broken = FailsThen::new(usize::MAX);
    let consumer = broken.consumer.clone();
    bus.subscribe(broken.subscription()).await.unwrap();
    let relay = start_relay(&t, bus.clone());
    let id = write_event(&t, "retry.from-outbox", true).await;
    assert!(parked_one(&t, &consumer).await, "parked after max_attempts");
    relay.stop().await;
    // The outbox forgets the event (its 7 days are over); the dead letter has its own copy.
    t.owner()
        .await
        .execute(
            "DELETE FROM event_service.outbox WHERE id = $1",
            &[&id.as_uuid()],
        )
        .await
        .unwrap();
    let letters = deliveries::dead_letters(&t.db, Some(&consumer))
        .await
        .unwrap();
    let event = letters[0].event.as_ref().expect("the dead letter's event");
    assert_eq!(
        (event.id, event.event_type.as_str()),
        (id, "retry.from-outbox")
    );
    assert_eq!(
        event.data.value(),
        serde_json::json!({"n": "retry.from-outbox"})
    );

    // Replayed, it reaches a consumer that works now, from the copy.
    drop(bus);
    let second = durable(&t, policy).await;
    let fixed = FailsThen::named(&consumer, 0);
    second.subscribe(fixed.subscription()).await.unwrap();
    assert_eq!(deliveries::replay(&t.db, &consumer).await.unwrap(), 1);
    assert!(eventually(10, || async { fixed.handled() == vec![id] }).await);
}

#[tokio::test]
async fn a_delivery_whose_event_left_its_outbox_is_parked_saying_so() {
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let first = durable(&t, policy).await;
    let consumer = format!("gone-{}", uuid::Uuid::now_v7().simple());
    let stuck = stuck_on(&first, &consumer, "gone.#").await;
    let relay = start_relay(&t, first.clone());
    let id = write_event(&t, "gone.pending", true).await;
    assert!(eventually(10, || async { stuck.started.load(Ordering::SeqCst) }).await);
    relay.stop().await;
    drop(first);
    // The process died with the delivery unhandled, and the event has left the outbox since.
    t.owner()
        .await
        .execute(
            "DELETE FROM event_service.outbox WHERE id = $1",
            &[&id.as_uuid()],
        )
        .await
        .unwrap();

    let second = durable(&t, policy).await;
    let fixed = FailsThen::named(&consumer, 0);
    second
        .subscribe(Subscription {
            patterns: vec!["gone.#".into()],
            ..fixed.subscription()
        })
        .await
        .unwrap();
    assert!(
        parked_one(&t, &consumer).await,
        "parked, not lost and not retried for ever"
    );
    let letter = &deliveries::dead_letters(&t.db, Some(&consumer))
        .await
        .unwrap()[0];
    assert_eq!(
        (letter.event.is_none(), letter.reason.as_deref()),
        (
            true,
            Some("its event is no longer in its outbox (published more than 7 days ago)")
        )
    );
    assert!(fixed.handled().is_empty());
}

#[tokio::test]
async fn a_delivery_in_flight_at_a_crash_is_delivered_once_after_the_restart() {
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let applier = Applier::new(t.db.clone());
    let consumer = applier.consumer.clone();

    // The relay hands the event over and stamps it; the handler never finishes.
    let first = durable(&t, policy).await;
    let stuck = stuck_on(&first, &consumer, "crash.#").await;
    let relay = start_relay(&t, first.clone());
    let id = write_event(&t, "crash.pending", true).await;
    assert!(
        eventually(10, || async {
            stuck.started.load(Ordering::SeqCst)
                && outbox::backlog(&t.db, Schema::EventService).await.unwrap() == 0
        })
        .await,
        "published and being handled"
    );
    assert_eq!(
        rows(&t, &consumer).await,
        1,
        "recorded before it was confirmed"
    );
    // Recorded by its place in the outbox, not as a copy of the event.
    let recorded = t
        .owner()
        .await
        .query_one(
            "SELECT event IS NULL, source, event_ids FROM broker.deliveries WHERE consumer = $1",
            &[&consumer],
        )
        .await
        .unwrap();
    assert_eq!(
        (
            recorded.get::<_, bool>(0),
            recorded.get::<_, String>(1),
            recorded.get::<_, Vec<uuid::Uuid>>(2)
        ),
        (true, "event_service".to_string(), vec![id.as_uuid()])
    );

    // The process dies: its tasks stop and its owner lock goes with its connection.
    relay.stop().await;
    drop(first);

    let second = durable(&t, policy).await;
    second
        .subscribe(applier.subscription("crash.#"))
        .await
        .unwrap();
    let relay = start_relay(&t, second.clone());
    assert!(
        eventually(10, || async { applier.applied() == vec![id] }).await,
        "delivered after the restart"
    );
    assert!(eventually(5, || async { rows(&t, &consumer).await == 0 }).await);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(applier.applied(), vec![id]);
    assert_eq!(applier.deliveries.load(Ordering::SeqCst), 1, "exactly once");
    relay.stop().await;
}

/// Writes `kinds` to the event service's outbox in one transaction, so one relay round
/// publishes them together.
async fn write_events(t: &TestDb, kinds: &[&str]) -> Vec<EventId> {
    let tx = t.db.begin(Scope::anonymous()).await.unwrap();
    let mut ids = Vec::new();
    for kind in kinds {
        let event = Envelope::new(*kind, None, None, serde_json::json!({"n": kind}));
        outbox::enqueue(&tx, Schema::EventService, &event)
            .await
            .unwrap();
        ids.push(event.id);
    }
    tx.commit().await.unwrap();
    ids
}

/// The events each row of `consumer` names, in the order of the rows.
async fn named(t: &TestDb, consumer: &str) -> Vec<Vec<uuid::Uuid>> {
    t.owner()
        .await
        .query(
            "SELECT event_ids FROM broker.deliveries WHERE consumer = $1 ORDER BY seq",
            &[&consumer],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test]
async fn a_publish_is_one_row_per_consumer_and_a_crash_delivers_each_of_its_events_once() {
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let applier = Applier::new(t.db.clone());
    let consumer = applier.consumer.clone();
    let first = durable(&t, policy).await;
    let stuck = stuck_on(&first, &consumer, "shared.#").await;
    let ids = write_events(&t, &["shared.a", "shared.b", "shared.c", "shared.d"]).await;
    let relay = start_relay(&t, first.clone());
    assert!(
        eventually(10, || async {
            stuck.started.load(Ordering::SeqCst)
                && outbox::backlog(&t.db, Schema::EventService).await.unwrap() == 0
        })
        .await
    );
    let in_order: Vec<uuid::Uuid> = ids.iter().map(|id| id.as_uuid()).collect();
    assert_eq!(
        named(&t, &consumer).await,
        vec![in_order],
        "one row, in order"
    );

    // The process dies with the first event in its handler: all four come again, once each.
    relay.stop().await;
    drop(first);
    let second = durable(&t, policy).await;
    second
        .subscribe(applier.subscription("shared.#"))
        .await
        .unwrap();
    assert!(eventually(10, || async { applier.applied() == ids }).await);
    assert!(eventually(5, || async { rows(&t, &consumer).await == 0 }).await);
}

/// Refuses the events of one kind, applies the others.
struct RefusesOne {
    bad: &'static str,
    handled: Mutex<Vec<EventId>>,
}

#[async_trait]
impl Handler for RefusesOne {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        if event.event_type == self.bad {
            return Err("downstream refused".into());
        }
        // Once, as an inbox would: a batch that failed is handled again one by one.
        let mut handled = self.handled.lock().unwrap();
        if !handled.contains(&event.id) {
            handled.push(event.id);
        }
        Ok(())
    }
}

#[tokio::test]
async fn a_failing_message_of_a_shared_row_gets_a_row_of_its_own_and_the_shared_row_goes() {
    let t = TestDb::new().await;
    // Parked at its first failure (straight from the shared row), or after a retry (from a
    // row of its own, split off at the first failure).
    for max_attempts in [1, 3] {
        let policy = RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(50),
        };
        let bus = durable(&t, policy).await;
        let consumer = format!("refuses-{}", uuid::Uuid::now_v7().simple());
        let handler = Arc::new(RefusesOne {
            bad: "split.bad",
            handled: Mutex::new(Vec::new()),
        });
        bus.subscribe(Subscription {
            consumer: consumer.clone(),
            patterns: vec!["split.#".into()],
            handler: handler.clone(),
        })
        .await
        .unwrap();
        let ids = write_events(&t, &["split.a", "split.bad", "split.c"]).await;
        let relay = start_relay(&t, bus.clone());
        assert!(parked_one(&t, &consumer).await, "{max_attempts} attempts");
        assert_eq!(*handler.handled.lock().unwrap(), vec![ids[0], ids[2]]);
        // Only the dead letter is left, naming the one event, with its copy.
        assert!(eventually(5, || async { rows(&t, &consumer).await == 1 }).await);
        assert_eq!(named(&t, &consumer).await, vec![vec![ids[1].as_uuid()]]);
        let letters = deliveries::dead_letters(&t.db, Some(&consumer))
            .await
            .unwrap();
        assert_eq!(
            (letters[0].attempts, letters[0].event.as_ref().map(|e| e.id)),
            (max_attempts, Some(ids[1]))
        );
        relay.stop().await;
        // Published: the next round of the loop starts from an empty outbox.
        assert_eq!(
            outbox::backlog(&t.db, Schema::EventService).await.unwrap(),
            0
        );
    }
}

#[tokio::test]
async fn a_running_bus_keeps_its_deliveries_from_another_bus() {
    // Two processes on one database: neither takes what the other holds.
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let busy = durable(&t, policy).await;
    let consumer = format!("shared-{}", uuid::Uuid::now_v7().simple());
    let stuck = stuck_on(&busy, &consumer, "#").await;
    busy.publish(&[Envelope::new("x.y", None, None, serde_json::json!({}))])
        .await
        .unwrap();
    assert!(eventually(5, || async { stuck.started.load(Ordering::SeqCst) }).await);

    let other = durable(&t, policy).await;
    let applier = Arc::new(Applier {
        consumer: consumer.clone(),
        ..Arc::into_inner(Applier::new(t.db.clone())).unwrap()
    });
    other.subscribe(applier.subscription("#")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(applier.deliveries.load(Ordering::SeqCst), 0);
    assert_eq!(rows(&t, &consumer).await, 1);
    drop(busy);
    assert!(eventually(10, || async { applier.applied().len() == 1 }).await);
}

/// A projection noting each event it applies in `event_service.ledger`, with the transaction
/// that applied it (to tell batches apart). It refuses the events it is told to, counts how
/// often each event reached `apply`, and holds the gated event until the gate opens.
#[derive(Clone, Default)]
pub struct Ledger {
    pub poisoned: Arc<Mutex<HashSet<EventId>>>,
    pub tries: Arc<Mutex<HashMap<EventId, usize>>>,
    pub committed: Arc<Mutex<Vec<EventId>>>,
    pub gate: Arc<Mutex<Option<EventId>>>,
}

/// The consumer name of `Ledger`, as `Projection::NAME`.
pub const LEDGER: &str = "ledger";

impl Ledger {
    /// A ledger on a table of its own in `t`'s database.
    pub async fn create(t: &TestDb) -> Ledger {
        let role = t.config.database.app_role_name();
        t.owner()
            .await
            .batch_execute(&format!(
                "CREATE TABLE event_service.ledger (
                     seq      BIGSERIAL PRIMARY KEY,
                     event_id UUID NOT NULL,
                     tx       BIGINT NOT NULL DEFAULT txid_current()
                 );
                 GRANT SELECT, INSERT ON event_service.ledger TO {role};
                 GRANT USAGE ON SEQUENCE event_service.ledger_seq_seq TO {role};"
            ))
            .await
            .unwrap();
        Ledger::default()
    }

    pub fn poison(&self, id: EventId) {
        self.poisoned.lock().unwrap().insert(id);
    }

    pub fn cure(&self) {
        self.poisoned.lock().unwrap().clear();
    }

    pub fn tries(&self, id: EventId) -> usize {
        self.tries.lock().unwrap().get(&id).copied().unwrap_or(0)
    }

    pub fn committed(&self) -> Vec<EventId> {
        self.committed.lock().unwrap().clone()
    }
}

#[async_trait]
impl Projection for Ledger {
    const NAME: &'static str = LEDGER;
    const SCHEMA: Schema = Schema::EventService;
    const TAKES: &'static [Kind] = &[Kind::UserUpdated, Kind::GroupCreated];
    type Done = EventId;

    fn scope(&self, received: &Received<'_>) -> Result<Scope, HandlerError> {
        Ok(received
            .envelope
            .tenant_id
            .map_or(Scope::system(), |t| Scope::tenant(t, None)))
    }

    async fn apply(&self, tx: &Tx, received: &Received<'_>) -> Result<EventId, HandlerError> {
        let id = received.envelope.id;
        *self.tries.lock().unwrap().entry(id).or_insert(0) += 1;
        while *self.gate.lock().unwrap() == Some(id) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tx.execute(
            "INSERT INTO event_service.ledger (event_id) VALUES ($1)",
            &[&id.as_uuid()],
        )
        .await?;
        if self.poisoned.lock().unwrap().contains(&id) {
            // After a write, so the test sees that a refused event leaves nothing behind.
            return Err(format!("poisoned {id}").into());
        }
        Ok(id)
    }

    fn committed(&self, _: &Received<'_>, done: EventId) {
        self.committed.lock().unwrap().push(done);
    }
}

/// An event `Ledger` takes, of `tenant`.
pub fn taken(tenant: Option<TenantId>) -> Envelope {
    Envelope::of(&samples::of(Kind::UserUpdated), tenant, None)
}

/// The ledger in the order it was written: each event and the transaction that applied it.
pub async fn ledger_rows(t: &TestDb) -> Vec<(EventId, i64)> {
    t.owner()
        .await
        .query(
            "SELECT event_id, tx FROM event_service.ledger ORDER BY seq",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (EventId(r.get(0)), r.get(1)))
        .collect()
}

pub async fn ledger_ids(t: &TestDb) -> Vec<EventId> {
    ledger_rows(t).await.into_iter().map(|(id, _)| id).collect()
}

/// How many transactions wrote the ledger.
pub fn transactions(ledger: &[(EventId, i64)]) -> usize {
    ledger
        .iter()
        .map(|(_, tx)| *tx)
        .collect::<HashSet<_>>()
        .len()
}

/// The events the ledger consumer has claimed.
pub async fn claimed(t: &TestDb) -> HashSet<EventId> {
    t.owner()
        .await
        .query(
            "SELECT event_id FROM event_service.processed_events WHERE consumer = $1",
            &[&LEDGER],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| EventId(r.get(0)))
        .collect()
}

fn ids(events: &[Envelope]) -> Vec<EventId> {
    events.iter().map(|e| e.id).collect()
}

#[tokio::test]
async fn an_inbox_applies_a_batch_once_per_event_in_a_transaction_per_run_of_a_scope() {
    let t = TestDb::new().await;
    let ledger = Ledger::create(&t).await;
    let inbox = Inbox::new(t.db.clone(), ledger.clone());
    let (a, b) = (Some(TenantId::new()), Some(TenantId::new()));
    let not_taken = Envelope::of(&samples::of(Kind::MailRequested), a, None);
    let events = vec![
        taken(a),
        taken(a),
        taken(b),
        taken(b),
        taken(b),
        taken(a),
        not_taken,
        taken(a),
    ];
    inbox.handle_batch(&events).await.unwrap();

    let mut applied = ids(&events);
    applied.remove(6);
    let written = ledger_rows(&t).await;
    assert_eq!(ledger_ids(&t).await, applied, "each once, in order");
    let txs: Vec<i64> = written.iter().map(|(_, tx)| *tx).collect();
    assert_eq!(transactions(&written), 3, "one per run of a scope: {txs:?}");
    assert!(txs[0] == txs[1] && txs[2] == txs[3] && txs[3] == txs[4] && txs[5] == txs[6]);
    assert_eq!(claimed(&t).await, applied.iter().copied().collect());
    assert_eq!(
        ledger.committed(),
        applied,
        "each announced after its commit"
    );
}

#[tokio::test]
async fn a_batch_applies_the_events_not_claimed_and_skips_the_others() {
    let t = TestDb::new().await;
    let ledger = Ledger::create(&t).await;
    let inbox = Inbox::new(t.db.clone(), ledger.clone());
    let events: Vec<Envelope> = (0..4).map(|_| taken(None)).collect();
    inbox.handle(&events[0]).await.unwrap();
    inbox
        .handle_batch(std::slice::from_ref(&events[2]))
        .await
        .unwrap();

    // Already claimed (alone and in a batch), twice in the same batch, new.
    let batch = [
        events[0].clone(),
        events[1].clone(),
        events[2].clone(),
        events[3].clone(),
        events[1].clone(),
    ];
    inbox.handle_batch(&batch).await.unwrap();
    inbox.handle_batch(&batch).await.unwrap();

    let all = ids(&events);
    assert_eq!(
        ledger_ids(&t).await,
        vec![all[0], all[2], all[1], all[3]],
        "each once"
    );
    assert!(
        all.iter().all(|id| ledger.tries(*id) == 1),
        "never applied again"
    );
    assert_eq!(claimed(&t).await, all.iter().copied().collect());
}

#[tokio::test]
async fn an_event_failing_in_a_batch_keeps_what_the_batch_applied_before_it() {
    let t = TestDb::new().await;
    let ledger = Ledger::create(&t).await;
    let inbox = Inbox::new(t.db.clone(), ledger.clone());
    let events: Vec<Envelope> = (0..6).map(|_| taken(None)).collect();
    let all = ids(&events);
    ledger.poison(all[3]);
    assert!(inbox.handle_batch(&events).await.is_err());

    // Committed without the refused event's write; it and those after it stay unclaimed.
    assert_eq!(ledger_ids(&t).await, all[..3]);
    assert_eq!(claimed(&t).await, all[..3].iter().copied().collect());
    assert_eq!(ledger.committed(), all[..3]);
    assert_eq!((ledger.tries(all[3]), ledger.tries(all[4])), (1, 0));

    // Failing at its first event, a batch commits nothing.
    let others: Vec<Envelope> = (0..2).map(|_| taken(None)).collect();
    ledger.poison(others[0].id);
    assert!(inbox.handle_batch(&others).await.is_err());
    assert_eq!(ledger_ids(&t).await, all[..3]);
    assert_eq!(claimed(&t).await.len(), 3);

    ledger.cure();
    inbox.handle_batch(&events).await.unwrap();
    assert_eq!(ledger_ids(&t).await, all, "the rest applied once, in order");
    assert_eq!(ledger.committed(), all);
    assert_eq!(
        ledger.tries(all[0]),
        1,
        "what was committed is not applied again"
    );
}

#[tokio::test]
async fn a_burst_with_a_failing_event_applies_the_rest_once_and_dead_letters_it() {
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let broker = durable(&t, policy).await;
    let ledger = Ledger::create(&t).await;
    broker
        .subscribe(Inbox::subscription(t.db.clone(), ledger.clone()))
        .await
        .unwrap();
    let events: Vec<Envelope> = (0..20).map(|_| taken(None)).collect();
    let bad = events[5].id;
    ledger.poison(bad);
    broker.publish(&events).await.unwrap();

    assert!(
        eventually(10, || async {
            broker.dead_letters(Some(LEDGER)).await.unwrap().len() == 1
        })
        .await,
        "the failing event is dead-lettered"
    );
    let letters = broker.dead_letters(Some(LEDGER)).await.unwrap();
    assert_eq!(letters[0].event.as_ref().map(|e| e.id), Some(bad));
    assert_eq!(letters[0].attempts, policy.max_attempts);
    assert_eq!(
        letters[0].reason.as_deref(),
        Some(format!("poisoned {bad}").as_str())
    );
    assert_eq!(
        ledger.tries(bad),
        policy.max_attempts as usize + 1,
        "the batch's try, then each attempt of its own"
    );

    let good: Vec<EventId> = ids(&events).into_iter().filter(|id| *id != bad).collect();
    assert!(eventually(5, || async { ledger_ids(&t).await.len() == good.len() }).await);
    let written = ledger_rows(&t).await;
    assert_eq!(ledger_ids(&t).await, good, "the others once each, in order");
    assert!(good.iter().all(|id| ledger.tries(*id) == 1));
    assert_eq!(claimed(&t).await, good.iter().copied().collect());
    assert!(
        transactions(&written) < good.len(),
        "the events before the failing one were applied together"
    );
    assert!(
        eventually(5, || async { rows(&t, LEDGER).await == 1 }).await,
        "only the dead letter is left"
    );
}

#[tokio::test]
async fn a_malformed_event_in_a_burst_is_dead_lettered_and_the_rest_applied_in_order() {
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let broker = durable(&t, policy).await;
    let ledger = Ledger::create(&t).await;
    broker
        .subscribe(Inbox::subscription(t.db.clone(), ledger.clone()))
        .await
        .unwrap();
    let malformed = Envelope::new(
        Kind::UserUpdated.as_str(),
        None,
        None,
        serde_json::json!({"nonsense": true}),
    );
    let events = vec![
        taken(None),
        taken(None),
        malformed.clone(),
        taken(None),
        taken(None),
    ];
    broker.publish(&events).await.unwrap();

    assert!(
        eventually(10, || async {
            broker.dead_letters(Some(LEDGER)).await.unwrap().len() == 1
        })
        .await
    );
    let letters = broker.dead_letters(Some(LEDGER)).await.unwrap();
    assert_eq!(letters[0].event.as_ref().map(|e| e.id), Some(malformed.id));
    assert_eq!(letters[0].attempts, policy.max_attempts);
    let good: Vec<EventId> = ids(&events)
        .into_iter()
        .filter(|id| *id != malformed.id)
        .collect();
    assert!(eventually(5, || async { ledger_ids(&t).await == good }).await);
    assert!(good.iter().all(|id| ledger.tries(*id) == 1));
}

/// Waits at its gate before applying anything, and counts what it applied.
struct Gated {
    gate: tokio::sync::watch::Receiver<bool>,
    handled: AtomicUsize,
}

#[async_trait]
impl Handler for Gated {
    async fn handle(&self, _: &Envelope) -> Result<(), HandlerError> {
        let mut gate = self.gate.clone();
        gate.wait_for(|open| *open).await?;
        self.handled.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn a_consumer_that_falls_behind_holds_its_publisher_instead_of_filling_memory() {
    use storage::broker::QUEUE_BOUND;
    let broker = MemoryBroker::new(RetryPolicy {
        max_attempts: 3,
        base_delay: Duration::from_millis(10),
    });
    let (open, gate) = tokio::sync::watch::channel(false);
    let handler = Arc::new(Gated {
        gate,
        handled: AtomicUsize::new(0),
    });
    broker
        .subscribe(Subscription {
            consumer: "slow".into(),
            patterns: vec!["#".into()],
            handler: handler.clone(),
        })
        .await
        .unwrap();
    let event = || Envelope::new("queue.me", None, None, serde_json::json!({}));
    // The queue takes QUEUE_BOUND messages, the one its handler is stuck on included.
    let first: Vec<Envelope> = (0..QUEUE_BOUND).map(|_| event()).collect();
    for chunk in first.chunks(512) {
        broker.publish(chunk).await.unwrap();
    }
    // One more is not taken: after waiting a while for room, nothing of it is confirmed and
    // the publisher is told the consumer is behind (not that the broker failed).
    let started = Instant::now();
    let refused = broker.publish(&[event()]).await.unwrap_err();
    assert_eq!((refused.confirmed, refused.behind), (0, true), "{refused}");
    assert!(refused.reason.contains("slow"), "{refused}");
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_eq!(handler.handled.load(Ordering::SeqCst), 0);
    // Once the consumer moves, room comes back and every message is applied once.
    open.send(true).unwrap();
    broker.publish(&[event()]).await.unwrap();
    assert!(
        eventually(10, || async {
            handler.handled.load(Ordering::SeqCst) == QUEUE_BOUND + 1
        })
        .await,
        "handled {} of {}",
        handler.handled.load(Ordering::SeqCst),
        QUEUE_BOUND + 1
    );
}
