//! Faults that stop shared services; `make test` runs these alone, after the other tests.

use crate::outbox::{Applier, POLICY, counts, start_relay};
use crate::support::{TestDb, amqp_url, eventually};
use domain::envelope::Envelope;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::broker::{Broker, RabbitBroker};
use storage::{Schema, Scope, outbox};

fn rabbitmqctl(action: &str) {
    let status = std::process::Command::new("rabbitmqctl")
        .arg(action)
        .status()
        .expect("rabbitmqctl runs");
    assert!(status.success(), "rabbitmqctl {action}");
}

#[tokio::test]
async fn rabbitmq_stopped_for_30s_mid_stream_loses_and_duplicates_nothing() {
    let t = TestDb::new().await;
    let exchange = format!("bilet.test-{}", uuid::Uuid::now_v7().simple());
    let broker: Arc<dyn Broker> = Arc::new(RabbitBroker::new(&amqp_url(), &exchange, POLICY));
    let applier = Applier::new(t.db.clone());
    broker
        .subscribe(applier.subscription("stream.#"))
        .await
        .unwrap();
    let relay = start_relay(&t, broker.clone());

    // A steady stream of events for 45 s; RabbitMQ is down from second 5 to second 35.
    let total = 450;
    let mut written = Vec::new();
    let started = Instant::now();
    let mut stopped = false;
    let mut restarted = false;
    for i in 0..total {
        let event = Envelope::new("stream.tick", None, None, serde_json::json!({"i": i}));
        let tx = t.db.begin(Scope::anonymous()).await.unwrap();
        outbox::enqueue(&tx, Schema::EventService, &event)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        written.push(event.id);
        let elapsed = started.elapsed();
        if !stopped && elapsed > Duration::from_secs(5) {
            tokio::task::spawn_blocking(|| rabbitmqctl("stop_app"))
                .await
                .unwrap();
            stopped = true;
        }
        if stopped && !restarted && elapsed > Duration::from_secs(35) {
            tokio::task::spawn_blocking(|| rabbitmqctl("start_app"))
                .await
                .unwrap();
            restarted = true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if !restarted {
        tokio::task::spawn_blocking(|| rabbitmqctl("start_app"))
            .await
            .unwrap();
    }
    assert!(stopped, "the outage happened mid-stream");

    let arrived = eventually(90, || async { applier.applied().len() >= total }).await;
    let applied = applier.applied();
    assert!(arrived, "only {} of {total} events arrived", applied.len());
    let counts = counts(&applied);
    assert_eq!(counts.len(), total, "every event arrived");
    assert!(counts.values().all(|n| *n == 1), "no event applied twice");
    assert!(written.iter().all(|id| counts.contains_key(id)));
    assert_eq!(
        outbox::backlog(&t.db, Schema::EventService).await.unwrap(),
        0
    );
    relay.stop().await;
}
