//! Faults against bilet running as one process per service (RabbitMQ, ClickHouse, Garage, a
//! fake Bot API): every service killed with SIGKILL under load and started again, RabbitMQ
//! down for a minute, PostgreSQL restarted, the S3 server down during uploads. Afterwards no
//! registration a client was told about is lost, no seat is stuck, every event reached
//! analytics and the notification service, and no message went out twice.

use crate::fake_telegram::FakeTelegram;
use crate::scenario::cluster::{Cluster, SERVICES};
use crate::scenario::{self, Outcome, Platform};
use crate::support::{TestDb, eventually, send};
use chrono::Utc;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

const SECRET: &str = "test-secret-test-secret-test-secret";

/// A registration a client got a 201 (or a replayed 201) for.
#[derive(Clone, Debug)]
struct Confirmed {
    id: String,
    /// Attempts that failed because part of the platform was down.
    failed_attempts: usize,
}

/// `clients` clients registering on `ticket_type`, each retrying with its own idempotency key
/// until it gets an answer that is not a failure of the platform (refused connections,
/// 502/503/504 while a process is down), for at most three minutes.
async fn load(
    base: String,
    event: String,
    ticket_type: String,
    clients: usize,
    spacing: Duration,
) -> Vec<Confirmed> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    let confirmed = Arc::new(Mutex::new(Vec::new()));
    let tokens = http::tokens::Tokens::new(SECRET);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    for worker in 0..clients {
        let (base, event, ticket_type, confirmed, http) = (
            base.clone(),
            event.clone(),
            ticket_type.clone(),
            confirmed.clone(),
            http.clone(),
        );
        let token = tokens
            .issue(
                domain::ids::UserId::new(),
                None,
                None,
                vec![],
                None,
                0,
                Utc::now(),
            )
            .unwrap()
            .token;
        tasks.push(tokio::spawn(async move {
            let key = uuid::Uuid::new_v4().to_string();
            // Spread the clients over the faults.
            tokio::time::sleep(spacing * worker as u32).await;
            let mut failed_attempts = 0;
            loop {
                let sent = http
                    .post(format!("{base}/api/v1/events/{event}/registrations"))
                    .bearer_auth(&token)
                    .header("X-Idempotency-Key", &key)
                    .json(&json!({"ticketTypeId": ticket_type, "firstName": "Load", "lastName": "Test"}))
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().as_u16() == 201 || r.status().as_u16() == 200 => {
                        let body: serde_json::Value = r.json().await.unwrap_or_default();
                        if let Some(id) = body["id"].as_str() {
                            confirmed.lock().await.push(Confirmed {
                                id: id.to_string(),
                                failed_attempts,
                            });
                            return;
                        }
                    }
                    Ok(r) if r.status().is_client_error() && r.status().as_u16() != 429 => {
                        panic!("a registration was refused: {} {}", r.status(), r.text().await.unwrap_or_default());
                    }
                    _ => {}
                }
                failed_attempts += 1;
                if tokio::time::Instant::now() > deadline {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    confirmed.lock().await.clone()
}

/// `load` on the roomy ticket type of the scenario's event, in the background.
fn start_load(
    p: &Platform,
    outcome: &Outcome,
    roomy: &str,
    clients: usize,
    spacing: Duration,
) -> tokio::task::JoinHandle<Vec<Confirmed>> {
    tokio::spawn(load(
        p.base.clone(),
        outcome.event.clone(),
        roomy.to_string(),
        clients,
        spacing,
    ))
}

/// The cluster with the scenario played through, and a roomy free ticket type for load.
async fn prepared(chat_base: i64) -> (TestDb, Cluster, Platform, Outcome, String) {
    let t = TestDb::new().await;
    let telegram = FakeTelegram::start().await;
    let cluster = Cluster::start(&t, &telegram).await;
    let platform = cluster.platform(&t, telegram).await;
    let outcome = scenario::run(&platform, chat_base).await;
    let roomy = send(
        platform
            .http
            .post(format!(
                "{}/api/v1/events/{}/ticket-types",
                platform.base, outcome.event
            ))
            .bearer_auth(&outcome.organizer.access)
            .json(&json!({"name": "Load", "quantity": 1000})),
    )
    .await;
    assert_eq!(roomy.status, 201, "{}", roomy.body);
    let roomy = roomy.body["id"].as_str().unwrap().to_string();
    (t, cluster, platform, outcome, roomy)
}

/// Every confirmed registration is there; every registration reached analytics and the
/// notification service once; seat counts equal rows; no chat got a message twice.
async fn nothing_lost(p: &Platform, outcome: &Outcome, roomy: &str, confirmed: &[Confirmed]) {
    let owner = tokio_postgres::connect(&p.owner_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(owner.1);
    let db = owner.0;
    let ids: Vec<uuid::Uuid> = confirmed.iter().map(|c| c.id.parse().unwrap()).collect();
    let found: i64 = db
        .query_one(
            "SELECT count(*) FROM event_service.registrations WHERE id = ANY($1) AND status = 'CONFIRMED'",
            &[&ids],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        found as usize,
        confirmed.len(),
        "every registration a client was told about exists"
    );
    let rows: i64 = db
        .query_one(
            "SELECT count(*) FROM event_service.registrations WHERE ticket_type_id = $1::text::uuid",
            &[&roomy],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        rows as usize,
        confirmed.len(),
        "one registration per client, retries included"
    );
    scenario::audit(p, outcome).await;
    let (sold, reserved, active, holding) =
        storage::events::registrations::seat_audit(&p.db, roomy.parse().unwrap())
            .await
            .unwrap();
    assert_eq!((sold as i64, reserved as i64), (active, holding));
    assert_eq!(reserved, 0, "no seat stuck reserved");

    // The scenario's four registrations and the load's, each announced once to each consumer.
    let total = 4 + confirmed.len() as i64;
    let dashboard = format!(
        "{}/api/v1/analytics/events/{}/dashboard",
        p.base, outcome.event
    );
    let mut seen = serde_json::Value::Null;
    for _ in 0..120 {
        seen = send(
            p.http
                .get(&dashboard)
                .bearer_auth(&outcome.organizer.access),
        )
        .await
        .body;
        if seen["totalRegistrations"] == total {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(
        seen["totalRegistrations"], total,
        "analytics got every registration once: {seen}"
    );
    let messages = || async {
        let row = db
            .query_one(
                "SELECT count(*), count(DISTINCT source_event_id) FROM notification_service.messages
                 WHERE kind = 'registration.confirmed'",
                &[],
            )
            .await
            .unwrap();
        (row.get::<_, i64>(0), row.get::<_, i64>(1))
    };
    let notified = eventually(60, || async { messages().await == (total, total) }).await;
    let (queued, registrations) = messages().await;
    assert!(
        notified,
        "one ticket message per registration: {queued} messages for {registrations} registrations, of {total}"
    );
    let stuck: i64 = db
        .query_one(
            "SELECT count(*) FROM notification_service.messages WHERE status IN ('QUEUED', 'SENDING')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stuck, 0, "the send queue drained");
    println!(
        "checked: {} confirmed registrations all present (one per client); seats sold {sold} = {active} rows, \
         reserved {reserved}; analytics counted {total} registrations; {total} ticket messages queued, \
         one per registration, none left in the queue; no chat got a message twice",
        confirmed.len()
    );
}

#[tokio::test]
async fn kill_9_of_every_service_under_load_loses_nothing() {
    let (_t, mut cluster, p, outcome, roomy) = prepared(14_000).await;
    let loader = start_load(&p, &outcome, &roomy, 400, Duration::from_millis(25));
    for service in SERVICES {
        tokio::time::sleep(Duration::from_millis(700)).await;
        println!("kill -9 {service}");
        cluster.restart(service).await;
    }
    let confirmed = loader.await.unwrap();
    println!(
        "{} registrations confirmed through the kills; {} attempts met a dead process and were retried",
        confirmed.len(),
        confirmed.iter().map(|c| c.failed_attempts).sum::<usize>()
    );
    assert_eq!(
        confirmed.len(),
        400,
        "every client got its registration in the end"
    );
    nothing_lost(&p, &outcome, &roomy, &confirmed).await;
}

#[tokio::test]
async fn rabbitmq_down_for_a_minute_under_load_delivers_every_event_once() {
    let (_t, _cluster, p, outcome, roomy) = prepared(15_000).await;
    let loader = start_load(&p, &outcome, &roomy, 200, Duration::from_millis(25));
    tokio::time::sleep(Duration::from_secs(2)).await;
    tokio::task::spawn_blocking(|| super::rabbitmqctl("stop_app"))
        .await
        .unwrap();
    println!("RabbitMQ stopped");
    tokio::time::sleep(Duration::from_secs(60)).await;
    tokio::task::spawn_blocking(|| super::rabbitmqctl("start_app"))
        .await
        .unwrap();
    println!("RabbitMQ started");
    let confirmed = loader.await.unwrap();
    println!(
        "{} registrations confirmed while RabbitMQ was down or coming back",
        confirmed.len()
    );
    assert_eq!(confirmed.len(), 200);
    nothing_lost(&p, &outcome, &roomy, &confirmed).await;
}

/// The PostgreSQL cluster serving port 5432, stopped for 8 seconds and started again.
fn restart_postgres() {
    let list = std::process::Command::new("pg_lsclusters")
        .arg("-h")
        .output()
        .expect("pg_lsclusters (Debian's postgresql-common)");
    let text = String::from_utf8_lossy(&list.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some("5432"))
        .expect("a cluster on 5432");
    let mut parts = line.split_whitespace();
    let (version, name) = (parts.next().unwrap(), parts.next().unwrap());
    let ctl = |action: &str| {
        let mut command = std::process::Command::new("pg_ctlcluster");
        command.args([version, name, action]);
        if action == "stop" {
            command.args(["--", "-m", "fast"]);
        }
        assert!(
            command.status().unwrap().success(),
            "pg_ctlcluster {action}"
        );
    };
    // Down for 8 s: longer than the retries a bad message gets (0.2 + 0.4 + 0.8 + 1.6 s).
    ctl("stop");
    std::thread::sleep(std::time::Duration::from_secs(8));
    ctl("start");
}

#[tokio::test]
async fn postgresql_restarted_under_load_loses_nothing() {
    let (_t, _cluster, p, outcome, roomy) = prepared(16_000).await;
    let loader = start_load(&p, &outcome, &roomy, 200, Duration::from_millis(25));
    tokio::time::sleep(Duration::from_secs(2)).await;
    println!("restarting PostgreSQL");
    // On the blocking pool: the clients keep running on this test's runtime meanwhile.
    tokio::task::spawn_blocking(restart_postgres).await.unwrap();
    let confirmed = loader.await.unwrap();
    println!(
        "{} registrations confirmed across the restart; {} attempts failed and were retried",
        confirmed.len(),
        confirmed.iter().map(|c| c.failed_attempts).sum::<usize>()
    );
    assert_eq!(confirmed.len(), 200);
    nothing_lost(&p, &outcome, &roomy, &confirmed).await;
}

fn garage(signal: &str) {
    let _ = std::process::Command::new("pkill")
        .args([signal, "-f", "garage.*server"])
        .status();
}

#[tokio::test]
async fn the_s3_server_down_during_uploads_refuses_cleanly_and_records_nothing() {
    let (_t, _cluster, p, outcome, _) = prepared(17_000).await;
    let token = &outcome.organizer.access;
    let upload = |bytes: Vec<u8>| {
        let boundary = "fault-boundary";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(&bytes);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        send(
            p.http
                .post(format!("{}/api/v1/media/upload", p.base))
                .bearer_auth(token)
                .header(
                    "content-type",
                    format!("multipart/form-data; boundary={boundary}"),
                )
                .body(body),
        )
    };
    let png = {
        let img = image::RgbImage::from_fn(64, 64, |x, y| image::Rgb([x as u8, y as u8, 7]));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        out.into_inner()
    };
    let before = upload(png.clone()).await;
    assert_eq!(before.status, 201, "{}", before.body);
    let owner = tokio_postgres::connect(&p.owner_url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(owner.1);
    let files = || async {
        owner
            .0
            .query_one("SELECT count(*) FROM media_service.files", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    let recorded = files().await;

    garage("-KILL");
    let down = upload(png.clone()).await;
    assert_eq!(
        (down.status, down.body["code"].as_str()),
        (503, Some("service_unavailable")),
        "{}",
        down.body
    );
    assert_eq!(files().await, recorded, "a refused upload records nothing");
    let status = std::process::Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/provision/garage.sh"
        ))
        .status()
        .unwrap();
    assert!(status.success(), "Garage starts again");
    let after = eventually(60, || async { upload(png.clone()).await.status == 201 }).await;
    assert!(after, "uploads work once the S3 server is back");
    // The file stored before the outage is still served.
    let id = before.body["id"].as_str().unwrap();
    let url = send(
        p.http
            .get(format!("{}/api/v1/media/{id}/url", p.base))
            .bearer_auth(token),
    )
    .await;
    assert_eq!(url.status, 200, "{}", url.body);
    let bytes = reqwest::get(url.body["url"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(bytes.status(), 200);
    assert_eq!(bytes.bytes().await.unwrap().as_ref(), png.as_slice());
}
