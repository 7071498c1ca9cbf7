//! Faults that stop shared services; `make test` runs these alone, after the other tests.

mod cancellation;
mod cluster;
mod connections;
mod refunds;
mod shards;
mod waiting_room;

use crate::outbox::{Applier, POLICY, counts, start_relay};
use crate::support::{TestDb, amqp_url, eventually};
use domain::envelope::Envelope;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::broker::{Broker, RabbitBroker};
use storage::{Schema, Scope, outbox};

pub fn rabbitmqctl(action: &str) {
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

/// A published event of `tenant` with one paid ticket type of `quantity` seats.
pub(crate) async fn published_paid_event(
    t: &TestDb,
    tenant: domain::ids::TenantId,
    organizer: domain::ids::UserId,
    quantity: i32,
    price_cents: i64,
    reservation_minutes: Option<i32>,
) -> (
    storage::events::catalog::Event,
    storage::events::ticket_types::TicketType,
) {
    use storage::events::{catalog, ticket_types};
    let now = chrono::Utc::now();
    let event = catalog::create(
        &t.db,
        tenant,
        organizer,
        &catalog::NewEvent {
            title: "Crash".into(),
            description: String::new(),
            slug: None,
            group_id: None,
            participants_visibility: Default::default(),
            starts_at: now + chrono::Duration::days(5),
            ends_at: None,
            timezone: "UTC".into(),
            location_type: None,
            location_address: None,
            location_url: None,
            cover_image_id: None,
            settings: serde_json::json!({}),
        },
        now,
    )
    .await
    .unwrap();
    let ticket_type = ticket_types::create(
        &t.db,
        tenant,
        organizer,
        event.id,
        &ticket_types::TicketFields {
            name: "Paid".into(),
            description: String::new(),
            price_cents,
            currency: "RUB".into(),
            quantity,
            reservation_minutes,
            prepayment_percent: 100,
            sales_start: None,
            sales_end: None,
            sort_order: 0,
            is_active: true,
        },
        now,
    )
    .await
    .unwrap();
    catalog::transition(
        &t.db,
        tenant,
        organizer,
        event.id,
        domain::events::lifecycle::Action::Publish,
        now,
    )
    .await
    .unwrap();

    (event, ticket_type)
}

/// A `bilet serve` process on `port` for the whole platform, killed with SIGKILL when dropped.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(t: &TestDb, port: u16) -> Server {
    serve_with(t, port, "")
}

/// `serve`, with `database` added to the `[database]` section of its configuration.
fn serve_with(t: &TestDb, port: u16, database: &str) -> Server {
    let dir = std::env::temp_dir().join(format!("bilet-kill-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut services = String::new();
    for name in ["identity", "events", "notifications", "media", "analytics"] {
        services.push_str(&format!(
            "[services.{name}]\nlisten = \"127.0.0.1:0\"\nurl = \"http://127.0.0.1:0\"\n"
        ));
    }
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        format!(
            "data_dir = \"{}\"\n[database]\nurl = \"{}\"\n{database}\n[auth]\njwt_secret = \"test-secret-test-secret-test-secret\"\nservice_secret = \"test-service-secret-test-service-secret\"\n[gateway]\nuser_per_minute = 1000000\nqueue_joins_per_ip_per_minute = 1000000\n[services.gateway]\nlisten = \"127.0.0.1:{port}\"\nurl = \"http://127.0.0.1:{port}\"\n{services}",
            dir.display(),
            t.url
        ),
    )
    .unwrap();
    Server(
        std::process::Command::new(env!("CARGO_BIN_EXE_bilet"))
            .args(["--config", file.to_str().unwrap(), "serve"])
            .env_remove("DATABASE_URL")
            .env("RUST_LOG", "error")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    )
}

#[tokio::test]
async fn kill_9_mid_burst_loses_no_seat_and_reservations_still_expire() {
    use storage::events::registrations;
    let t = TestDb::new().await;
    let (tenant, organizer) = (domain::ids::TenantId::new(), domain::ids::UserId::new());
    let (event, ticket_type) =
        published_paid_event(&t, tenant, organizer, 150, 1000, Some(1)).await;

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut first = Some(serve(&t, port));
    assert!(
        eventually(60, || async {
            reqwest::get(format!("{base}/health/ready"))
                .await
                .is_ok_and(|r| r.status() == 200)
        })
        .await
    );

    let tokens = http::tokens::Tokens::new("test-secret-test-secret-test-secret");
    let client = reqwest::Client::new();
    let mut burst = Vec::new();
    for i in 0..400 {
        // A steady stream over about two seconds, so the kill lands in the middle of it.
        if i % 20 == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if first.is_some()
                && registrations::seat_audit(&t.db, ticket_type.id)
                    .await
                    .unwrap()
                    .3
                    >= 30
            {
                first = None; // SIGKILL in the middle of the burst
            }
        }
        let token = tokens
            .issue(
                domain::ids::UserId::new(),
                None,
                None,
                vec![],
                None,
                0,
                chrono::Utc::now(),
            )
            .unwrap()
            .token;
        let (client, url) = (
            client.clone(),
            format!("{base}/api/v1/events/{}/registrations", event.id),
        );
        let body = serde_json::json!({"ticketTypeId": ticket_type.id});
        burst.push(tokio::spawn(async move {
            let reply = client
                .post(url)
                .bearer_auth(token)
                .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
                .json(&body)
                .send()
                .await
                .ok()?;
            if reply.status() != 201 {
                return None;
            }
            let body: serde_json::Value = reply.json().await.ok()?;
            body["id"].as_str().map(str::to_string)
        }));
    }
    assert!(
        first.is_none(),
        "the kill happened while requests were still being sent"
    );
    let mut confirmed_to_clients = Vec::new();
    for task in burst {
        if let Ok(Some(id)) = task.await {
            confirmed_to_clients.push(id);
        }
    }

    let _second = serve(&t, port);
    assert!(
        eventually(60, || async {
            reqwest::get(format!("{base}/health/ready"))
                .await
                .is_ok_and(|r| r.status() == 200)
        })
        .await
    );
    let (sold, reserved, sold_rows, reserved_rows) =
        registrations::seat_audit(&t.db, ticket_type.id)
            .await
            .unwrap();
    println!(
        "after kill -9: {} answered 201 before the kill, rows reserved {reserved_rows}, counted {reserved}",
        confirmed_to_clients.len()
    );
    assert!(
        confirmed_to_clients.len() < 400,
        "the kill interrupted the burst"
    );
    assert!(
        !confirmed_to_clients.is_empty(),
        "some were confirmed before it"
    );
    assert_eq!(
        (i64::from(sold), i64::from(reserved)),
        (sold_rows, reserved_rows),
        "counts equal the rows"
    );
    assert!(reserved_rows <= 150, "no overselling");
    let owner = t.owner().await;
    for id in &confirmed_to_clients {
        let found: i64 = owner
            .query_one(
                "SELECT count(*) FROM event_service.registrations WHERE id = $1::text::uuid",
                &[id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(
            found, 1,
            "a registration confirmed to a client survives the crash"
        );
    }
    // Every reservation still runs out, expired by the restarted process.
    let all_expired = eventually(120, || async {
        registrations::seat_audit(&t.db, ticket_type.id)
            .await
            .unwrap()
            == (0, 0, 0, 0)
    })
    .await;
    assert!(
        all_expired,
        "no seat stuck: {:?}",
        registrations::seat_audit(&t.db, ticket_type.id)
            .await
            .unwrap()
    );
}
