//! The outbox and the brokers: an event is published if and only if its transaction
//! committed; consumers apply each event once; failing handlers end in the dead-letter queue
//! and can be replayed. Each test runs against the in-process bus and the real RabbitMQ.

use crate::support::{TestDb, amqp_url, eventually};
use async_trait::async_trait;
use domain::envelope::Envelope;
use domain::ids::EventId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use storage::broker::{
    Broker, Handler, HandlerError, MemoryBroker, RabbitBroker, RetryPolicy, Subscription,
};
use storage::outbox::{self, Relay, RelayHandle};
use storage::{Schema, Scope, inbox};

pub const POLICY: RetryPolicy = RetryPolicy {
    max_attempts: 3,
    base_delay: Duration::from_millis(50),
};

/// A broker of each kind; RabbitMQ gets an exchange of its own so tests do not see each other.
pub fn brokers() -> Vec<(&'static str, Arc<dyn Broker>)> {
    let exchange = format!("bilet.test-{}", uuid::Uuid::now_v7().simple());
    vec![
        (
            "memory",
            Arc::new(MemoryBroker::new(POLICY)) as Arc<dyn Broker>,
        ),
        (
            "rabbitmq",
            Arc::new(RabbitBroker::new(&amqp_url(), &exchange, POLICY)) as Arc<dyn Broker>,
        ),
    ]
}

/// A consumer that applies each event at most once through the inbox and counts deliveries.
pub struct Applier {
    pub db: storage::Database,
    pub consumer: String,
    pub deliveries: AtomicUsize,
    pub applied: Mutex<Vec<EventId>>,
}

impl Applier {
    pub fn new(db: storage::Database) -> Arc<Applier> {
        Arc::new(Applier {
            db,
            consumer: format!("test-{}", uuid::Uuid::now_v7().simple()),
            deliveries: AtomicUsize::new(0),
            applied: Mutex::new(Vec::new()),
        })
    }

    pub fn applied(&self) -> Vec<EventId> {
        self.applied.lock().unwrap().clone()
    }

    pub fn subscription(self: &Arc<Self>, pattern: &str) -> Subscription {
        Subscription {
            consumer: self.consumer.clone(),
            patterns: vec![pattern.to_string()],
            handler: self.clone(),
        }
    }
}

#[async_trait]
impl Handler for Applier {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        self.deliveries.fetch_add(1, Ordering::SeqCst);
        let tx = self.db.begin(Scope::anonymous()).await?;
        if inbox::claim(&tx, Schema::EventService, &self.consumer, event.id).await? {
            tx.commit().await?;
            self.applied.lock().unwrap().push(event.id);
        }
        Ok(())
    }
}

pub fn start_relay(t: &TestDb, broker: Arc<dyn Broker>) -> RelayHandle {
    Relay::new(
        t.db.clone(),
        broker,
        vec![Schema::EventService],
        Duration::from_millis(200),
    )
    .start()
}

pub async fn write_event(t: &TestDb, kind: &str, commit: bool) -> EventId {
    let event = Envelope::new(kind, None, None, serde_json::json!({"n": kind}));
    let tx = t.db.begin(Scope::anonymous()).await.unwrap();
    outbox::enqueue(&tx, Schema::EventService, &event)
        .await
        .unwrap();
    if commit {
        tx.commit().await.unwrap();
    } else {
        tx.rollback().await.unwrap();
    }
    event.id
}

#[tokio::test]
async fn a_commit_wakes_this_processs_relay_and_a_rollback_does_not() {
    let t = TestDb::new().await;
    let broker: Arc<dyn Broker> = Arc::new(MemoryBroker::new(POLICY));
    let applier = Applier::new(t.db.clone());
    broker
        .subscribe(applier.subscription("test.#"))
        .await
        .unwrap();
    // Polling once a minute: only the doorbell can bring the event out quickly.
    let relay = Relay::new(
        t.db.clone(),
        broker.clone(),
        vec![Schema::EventService],
        Duration::from_secs(60),
    )
    .start();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ghost = write_event(&t, "test.ghost", false).await;
    let started = tokio::time::Instant::now();
    let first = write_event(&t, "test.first", true).await;
    assert!(
        eventually(5, || async { applier.applied().len() == 1 }).await,
        "published without waiting for the poll"
    );
    assert_eq!(applier.applied(), vec![first]);
    println!("published {:?} after its commit", started.elapsed());
    assert!(!applier.applied().contains(&ghost));
    relay.stop().await;
}

/// The events of the outbox, by id, as the owner sees them.
async fn stored(t: &TestDb, ids: &[EventId]) -> Vec<uuid::Uuid> {
    let ids: Vec<uuid::Uuid> = ids.iter().map(|id| id.as_uuid()).collect();
    let tx = t.db.begin(Scope::system()).await.unwrap();
    let rows = tx
        .query(
            "SELECT id FROM event_service.outbox WHERE id = ANY($1) ORDER BY seq",
            &[&ids],
        )
        .await
        .unwrap();
    tx.commit().await.unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test]
async fn a_commit_sent_behind_the_last_writes_keeps_them_all_or_none() {
    let t = TestDb::new().await;
    let first = Envelope::new("test.first", None, None, serde_json::json!({"n": 1}));
    let second = Envelope::new("test.second", None, None, serde_json::json!({"n": 2}));
    let third = Envelope::new("test.third", None, None, serde_json::json!({"n": 3}));

    // Prepared in an earlier round trip, as the seat transaction does, then written with the
    // commit behind: both rows are there.
    let tx = t.db.begin(Scope::anonymous()).await.unwrap();
    outbox::prepare_many(&tx, Schema::EventService)
        .await
        .unwrap();
    let pair = [first.clone(), second.clone()];
    let done = tx
        .commit_with(async |tx| {
            outbox::enqueue_many(tx, Schema::EventService, &pair)
                .await
                .map(|()| "written")
        })
        .await;
    assert_eq!(done.unwrap(), "written");
    assert_eq!(
        stored(&t, &[first.id, second.id]).await,
        vec![first.id.as_uuid(), second.id.as_uuid()]
    );

    // One of the last statements fails (the first event again: its id is taken): the commit
    // behind it is a rollback, so the third event, written beside it, is not stored either,
    // and the failure is what the caller learns.
    let tx = t.db.begin(Scope::anonymous()).await.unwrap();
    outbox::prepare_many(&tx, Schema::EventService)
        .await
        .unwrap();
    let (again, fresh) = ([first.clone()], [third.clone()]);
    let failed = tx
        .commit_with(async |tx| {
            let (a, b) = tokio::join!(
                outbox::enqueue_many(tx, Schema::EventService, &fresh),
                outbox::enqueue_many(tx, Schema::EventService, &again)
            );
            a.and(b)
        })
        .await;
    let error = failed.expect_err("a duplicate id fails the last writes");
    assert!(
        error.to_string().contains("duplicate key"),
        "the cause is kept: {error}"
    );
    assert!(
        stored(&t, &[third.id]).await.is_empty(),
        "nothing of it committed"
    );
    // The connection went back to the pool, and the transactions after it work.
    for _ in 0..8 {
        write_event(&t, "test.after", true).await;
    }
}

#[tokio::test]
async fn rolled_back_events_are_never_published_and_order_is_kept() {
    for (name, broker) in brokers() {
        let t = TestDb::new().await;
        let applier = Applier::new(t.db.clone());
        broker
            .subscribe(applier.subscription("test.#"))
            .await
            .unwrap();
        let relay = start_relay(&t, broker.clone());
        let first = write_event(&t, "test.first", true).await;
        let ghost = write_event(&t, "test.ghost", false).await;
        let last = write_event(&t, "test.last", true).await;
        assert!(
            eventually(20, || async { applier.applied().len() >= 2 }).await,
            "{name}: committed events arrive"
        );
        // Give a stray publication of the ghost time to show up before judging.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(applier.applied(), vec![first, last], "{name}");
        assert!(!applier.applied().contains(&ghost));
        assert_eq!(
            outbox::backlog(&t.db, Schema::EventService).await.unwrap(),
            0,
            "{name}: every row stamped"
        );
        relay.stop().await;
    }
}

#[tokio::test]
async fn duplicate_deliveries_are_applied_once() {
    for (name, broker) in brokers() {
        let t = TestDb::new().await;
        let applier = Applier::new(t.db.clone());
        broker
            .subscribe(applier.subscription("dup.*"))
            .await
            .unwrap();
        let event = Envelope::new("dup.event", None, None, serde_json::json!({}));
        broker
            .publish(&[event.clone(), event.clone()])
            .await
            .unwrap();
        broker.publish(std::slice::from_ref(&event)).await.unwrap();
        assert!(
            eventually(20, || async {
                applier.deliveries.load(Ordering::SeqCst) == 3
            })
            .await,
            "{name}"
        );
        assert_eq!(applier.applied(), vec![event.id], "{name}");
    }
}

/// Fails until told to succeed, counting its attempts.
struct Flaky {
    consumer: String,
    attempts: AtomicUsize,
    healthy: AtomicBool,
    handled: Mutex<Vec<EventId>>,
}

#[async_trait]
impl Handler for Flaky {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self.healthy.load(Ordering::SeqCst) {
            self.handled.lock().unwrap().push(event.id);
            Ok(())
        } else {
            Err("downstream refused".into())
        }
    }
}

#[tokio::test]
async fn failing_handler_dead_letters_after_max_attempts_and_replays() {
    for (name, broker) in brokers() {
        let flaky = Arc::new(Flaky {
            consumer: format!("flaky-{}", uuid::Uuid::now_v7().simple()),
            attempts: AtomicUsize::new(0),
            healthy: AtomicBool::new(false),
            handled: Mutex::new(Vec::new()),
        });
        broker
            .subscribe(Subscription {
                consumer: flaky.consumer.clone(),
                patterns: vec!["flaky.*".into()],
                handler: flaky.clone(),
            })
            .await
            .unwrap();
        let event = Envelope::new("flaky.event", None, None, serde_json::json!({"k": 1}));
        broker.publish(std::slice::from_ref(&event)).await.unwrap();
        let consumer = flaky.consumer.clone();
        assert!(
            eventually(20, || async {
                broker.dead_letters(Some(&consumer)).await.unwrap().len() == 1
            })
            .await,
            "{name}: message reaches the dead-letter queue"
        );
        assert_eq!(
            flaky.attempts.load(Ordering::SeqCst),
            POLICY.max_attempts as usize,
            "{name}: exactly N tries"
        );
        let letters = broker.dead_letters(Some(&consumer)).await.unwrap();
        assert_eq!(letters[0].attempts, POLICY.max_attempts, "{name}");
        assert_eq!(
            letters[0].event.as_ref().map(|e| e.id),
            Some(event.id),
            "{name}"
        );
        // Listing does not consume.
        assert_eq!(
            broker.dead_letters(Some(&consumer)).await.unwrap().len(),
            1,
            "{name}"
        );

        flaky.healthy.store(true, Ordering::SeqCst);
        assert_eq!(broker.replay(&consumer).await.unwrap(), 1, "{name}");
        assert!(
            eventually(20, || async { flaky.handled.lock().unwrap().len() == 1 }).await,
            "{name}: replayed"
        );
        assert_eq!(flaky.handled.lock().unwrap()[0], event.id);
        assert!(
            broker
                .dead_letters(Some(&consumer))
                .await
                .unwrap()
                .is_empty(),
            "{name}: queue emptied"
        );
    }
}

#[tokio::test]
async fn relay_publishes_events_committed_while_broker_was_unreachable() {
    // A broker at a closed port: publishing fails, rows stay pending, nothing is lost.
    let t = TestDb::new().await;
    let dead: Arc<dyn Broker> = Arc::new(RabbitBroker::new(
        "amqp://guest:guest@127.0.0.1:1/%2f",
        "bilet.none",
        POLICY,
    ));
    assert!(!dead.ready().await);
    let relay = start_relay(&t, dead);
    write_event(&t, "test.pending", true).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        outbox::backlog(&t.db, Schema::EventService).await.unwrap(),
        1
    );
    relay.stop().await;

    let memory: Arc<dyn Broker> = Arc::new(MemoryBroker::new(POLICY));
    let applier = Applier::new(t.db.clone());
    memory
        .subscribe(applier.subscription("test.#"))
        .await
        .unwrap();
    let relay = start_relay(&t, memory);
    assert!(eventually(10, || async { applier.applied().len() == 1 }).await);
    relay.stop().await;
}

/// Counts by id, to check exactly-once in the fault test.
pub fn counts(ids: &[EventId]) -> HashMap<EventId, usize> {
    let mut counts = HashMap::new();
    for id in ids {
        *counts.entry(*id).or_insert(0) += 1;
    }
    counts
}

/// A broker that refuses every publish until it is healthy, counting the attempts.
#[derive(Default)]
struct Outage {
    attempts: AtomicUsize,
    healthy: AtomicBool,
    published: Mutex<Vec<EventId>>,
}

#[async_trait]
impl Broker for Outage {
    async fn publish(&self, events: &[Envelope]) -> Result<(), storage::broker::PublishError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if !self.healthy.load(Ordering::SeqCst) {
            return Err(storage::broker::PublishError {
                confirmed: 0,
                reason: "broker down".into(),
                behind: false,
            });
        }
        self.published
            .lock()
            .unwrap()
            .extend(events.iter().map(|e| e.id));
        Ok(())
    }

    async fn subscribe(&self, _: Subscription) -> Result<(), storage::broker::BrokerError> {
        Ok(())
    }

    async fn ready(&self) -> bool {
        self.healthy.load(Ordering::SeqCst)
    }

    async fn dead_letters(
        &self,
        _: Option<&str>,
    ) -> Result<Vec<storage::broker::DeadLetter>, storage::broker::BrokerError> {
        Ok(Vec::new())
    }

    async fn replay(&self, _: &str) -> Result<usize, storage::broker::BrokerError> {
        Ok(0)
    }
}

#[tokio::test]
async fn relay_backs_off_during_an_outage_however_often_it_is_rung() {
    let t = TestDb::new().await;
    let broker = Arc::new(Outage::default());
    let relay = start_relay(&t, broker.clone());
    // Three seconds of commits, each ringing the relay, while the broker refuses everything.
    let started = tokio::time::Instant::now();
    let mut written = 0;
    while started.elapsed() < Duration::from_secs(3) {
        write_event(&t, "test.outage", true).await;
        written += 1;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let attempts = broker.attempts.load(Ordering::SeqCst);
    // Backoff of 250 ms, 500 ms, 1 s, 2 s: about four tries, where waking on every commit
    // would make one per commit (some sixty).
    assert!(
        (2..=6).contains(&attempts),
        "{attempts} publish attempts during 3 s of outage ({written} commits)"
    );

    // Back up: everything goes out at the end of the current backoff.
    broker.healthy.store(true, Ordering::SeqCst);
    assert!(
        eventually(10, || async {
            broker.published.lock().unwrap().len() == written
        })
        .await,
        "the backlog is published once the broker is back"
    );
    // A success resets the backoff: in the next outage the first retry comes after 250 ms
    // again, not after the seconds the outage above had grown it to.
    broker.healthy.store(false, Ordering::SeqCst);
    let before = broker.attempts.load(Ordering::SeqCst);
    write_event(&t, "test.again", true).await;
    assert!(
        eventually(2, || async {
            broker.attempts.load(Ordering::SeqCst) >= before + 2
        })
        .await,
        "a quick first retry after the backoff was reset"
    );
    relay.stop().await;
}

#[tokio::test]
async fn a_burst_is_applied_in_batches_in_order_and_its_failing_event_dead_lettered() {
    use crate::broker::{LEDGER, Ledger, claimed, ledger_ids, ledger_rows, taken, transactions};
    for (name, broker) in brokers() {
        let t = TestDb::new().await;
        let ledger = Ledger::create(&t).await;
        broker
            .subscribe(inbox::Inbox::subscription(t.db.clone(), ledger.clone()))
            .await
            .unwrap();
        // More than a transaction's run and than a batch; the first event is held until the
        // whole burst is queued, so the rest cannot trickle in one by one.
        let events: Vec<Envelope> = (0..300).map(|_| taken(None)).collect();
        let bad = events[200].id;
        ledger.poison(bad);
        *ledger.gate.lock().unwrap() = Some(events[0].id);
        broker.publish(&events).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        *ledger.gate.lock().unwrap() = None;

        let good: Vec<EventId> = events
            .iter()
            .map(|e| e.id)
            .filter(|id| *id != bad)
            .collect();
        assert!(
            eventually(30, || async {
                ledger_ids(&t).await.len() >= good.len()
                    && broker.dead_letters(Some(LEDGER)).await.unwrap().len() == 1
            })
            .await,
            "{name}: applied and dead-lettered"
        );
        let written = ledger_rows(&t).await;
        assert_eq!(ledger_ids(&t).await, good, "{name}: once each, in order");
        assert!(
            good.iter().all(|id| ledger.tries(*id) == 1),
            "{name}: nothing applied twice"
        );
        assert_eq!(claimed(&t).await, good.iter().copied().collect(), "{name}");
        assert!(
            transactions(&written) < good.len() / 2,
            "{name}: {} transactions for {} events",
            transactions(&written),
            good.len()
        );
        println!(
            "{name}: {} events in {} transactions",
            good.len(),
            transactions(&written)
        );
        let letters = broker.dead_letters(Some(LEDGER)).await.unwrap();
        assert_eq!(letters[0].event.as_ref().map(|e| e.id), Some(bad), "{name}");
        assert_eq!(letters[0].attempts, POLICY.max_attempts, "{name}");
        // Its try in the batch counts no attempt.
        let tries = ledger.tries(bad);
        assert!(
            tries == POLICY.max_attempts as usize + 1
                || (name == "rabbitmq" && tries == POLICY.max_attempts as usize),
            "{name}: {tries} tries"
        );
        println!("{name}: the failing event was tried {tries} times");
    }
}
