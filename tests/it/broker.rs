//! The in-process broker on a database (issue 22): failing handlers are retried with growing
//! backoff, then parked as dead letters in PostgreSQL that survive a restart and can be
//! replayed; a delivery in flight when the process died is delivered after the restart, once.

use crate::outbox::{Applier, start_relay, write_event};
use crate::support::{TestDb, eventually};
use async_trait::async_trait;
use domain::envelope::Envelope;
use domain::ids::EventId;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use storage::broker::{
    Broker, Handler, HandlerError, MemoryBroker, RetryPolicy, Subscription, deliveries,
};
use storage::{Schema, outbox};

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

pub async fn durable(t: &TestDb, policy: RetryPolicy) -> Arc<dyn Broker> {
    Arc::new(MemoryBroker::durable(policy, t.db.clone()).await.unwrap())
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

    assert!(
        eventually(10, || async {
            deliveries::dead_letters(&t.db, Some(&consumer))
                .await
                .unwrap()
                .len()
                == 1
        })
        .await,
        "parked after max_attempts"
    );
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
async fn a_delivery_in_flight_at_a_crash_is_delivered_once_after_the_restart() {
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let applier = Applier::new(t.db.clone());
    let consumer = applier.consumer.clone();

    // The relay hands the event over and stamps it; the handler never finishes.
    let first = durable(&t, policy).await;
    let stuck = Arc::new(Stuck {
        started: AtomicBool::new(false),
    });
    first
        .subscribe(Subscription {
            consumer: consumer.clone(),
            patterns: vec!["crash.#".into()],
            handler: stuck.clone(),
        })
        .await
        .unwrap();
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

#[tokio::test]
async fn a_running_bus_keeps_its_deliveries_from_another_bus() {
    // Two processes on one database: neither takes what the other holds.
    let t = TestDb::new().await;
    let policy = crate::outbox::POLICY;
    let busy = durable(&t, policy).await;
    let stuck = Arc::new(Stuck {
        started: AtomicBool::new(false),
    });
    let consumer = format!("shared-{}", uuid::Uuid::now_v7().simple());
    busy.subscribe(Subscription {
        consumer: consumer.clone(),
        patterns: vec!["#".into()],
        handler: stuck.clone(),
    })
    .await
    .unwrap();
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
