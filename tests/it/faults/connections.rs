//! The connection budget, as separate processes: a gateway and five events nodes against an
//! application role PostgreSQL limits to 60 connections. With every process pooling its
//! default 32 the pools could open far more: readiness warns, and a burst meets refused
//! connections — answered 503 and retried, never 500, every registration a client was told
//! about stored. With `database.max_connections` set, each process takes its share: no
//! warning, and the same burst stores everything again.

use crate::scenario::cluster::spawn_node;
use crate::support::{TestDb, eventually, free_port};
use chrono::Utc;
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use serde_json::json;
use std::collections::BTreeMap;
use std::process::Child;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

const SECRET: &str = "test-secret-test-secret-test-secret";
const EVENTS_NODES: usize = 5;
/// What PostgreSQL allows the installation's role.
const ROLE_LIMIT: i32 = 60;
/// The test's own pool (it reads the seat counts) is of the same role.
const TEST_POOL: u32 = 8;
/// Clients of a burst, all at once: twenty-five for each connection the role may open.
const CLIENTS: usize = 1500;
/// How long a client of a burst keeps trying.
const PATIENCE: Duration = Duration::from_secs(120);

struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts the six processes with `budget` as `database.max_connections` (0: none); returns them
/// and the gateway's address.
async fn start(t: &TestDb, budget: u32) -> (Processes, String) {
    let dir = std::env::temp_dir().join(format!("bilet-conns-{}", Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let gateway_port = free_port();
    let gateway = format!("http://127.0.0.1:{gateway_port}");
    let mut nodes = String::new();
    let mut urls = Vec::new();
    for i in 1..=EVENTS_NODES {
        let port = free_port();
        nodes.push_str(&format!(
            "[[nodes]]\nname = \"events-{i}\"\nservices = [\"events\"]\naddresses = {{ events = {{ listen = \"127.0.0.1:{port}\", url = \"http://127.0.0.1:{port}\" }} }}\n"
        ));
        urls.push(format!("http://127.0.0.1:{port}"));
    }
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        format!(
            r#"
mode = "development"
data_dir = "{dir}"
[database]
url = "{db}"
pool_size = 32
max_connections = {budget}
[broker]
url = "{amqp}"
exchange = "bilet.test-{exchange}"
[auth]
jwt_secret = "{SECRET}"
service_secret = "test-service-secret-test-service-secret"
[gateway]
user_per_minute = 1000000
public_per_minute = 1000000
[services.gateway]
listen = "127.0.0.1:{gateway_port}"
url = "{gateway}"
[services.events]
listen = "{first_listen}"
url = "{first}"
[[nodes]]
name = "gateway"
services = ["gateway"]
{nodes}
"#,
            dir = dir.display(),
            db = t.url,
            amqp = crate::support::amqp_url(),
            exchange = Uuid::now_v7().simple(),
            first_listen = urls[0].trim_start_matches("http://"),
            first = urls[0],
        ),
    )
    .unwrap();
    let mut processes = vec![spawn_node(&file, "gateway")];
    for i in 1..=EVENTS_NODES {
        processes.push(spawn_node(&file, &format!("events-{i}")));
    }
    for url in std::iter::once(&gateway).chain(&urls) {
        let ready = format!("{url}/health/ready");
        assert!(
            eventually(90, || async {
                reqwest::get(&ready)
                    .await
                    .is_ok_and(|r| r.status().is_success())
            })
            .await,
            "{url} becomes ready"
        );
    }
    (Processes(processes), gateway)
}

fn token(tenant: Option<TenantId>, roles: Vec<Role>) -> String {
    http::tokens::Tokens::new(SECRET)
        .issue(UserId::new(), None, tenant, roles, None, 0, Utc::now())
        .unwrap()
        .token
}

/// Ten published events with a type of `seats` each; their types.
async fn sales(http: &reqwest::Client, gateway: &str, seats: i64) -> Vec<(Uuid, Uuid)> {
    let organizer = token(Some(TenantId::new()), vec![Role::Owner]);
    let mut sales = Vec::new();
    for i in 0..10 {
        // An organizer's writes are not held through a busy moment: a 503 is retried, as the
        // front does (a refused connection right after the first processes' end, say).
        let post = |path: String, body: serde_json::Value| {
            let (organizer, url) = (&organizer, format!("{gateway}{path}"));
            async move {
                for _ in 0..50 {
                    let r = http
                        .post(&url)
                        .bearer_auth(organizer)
                        .header("X-Idempotency-Key", Uuid::new_v4().to_string())
                        .json(&body)
                        .send()
                        .await
                        .unwrap();
                    let status = r.status();
                    let answer: serde_json::Value = r.json().await.unwrap_or_default();
                    if status.as_u16() == 503 {
                        eprintln!("setup: {url} answered 503, retrying");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                    assert!(status.is_success(), "{status} {answer}");
                    return answer;
                }
                panic!("{url}: 503 for ten seconds");
            }
        };
        let event = post(
            "/api/v1/events".into(),
            json!({"title": format!("Budget {i}"), "startsAt": (Utc::now() + chrono::Duration::days(5)).to_rfc3339()}),
        )
        .await;
        let event: Uuid = event["id"].as_str().unwrap().parse().unwrap();
        let kind = post(
            format!("/api/v1/events/{event}/ticket-types"),
            json!({"name": "Free", "quantity": seats}),
        )
        .await;
        post(format!("/api/v1/events/{event}/publish"), json!({})).await;
        sales.push((event, kind["id"].as_str().unwrap().parse().unwrap()));
    }
    sales
}

/// An error with its causes: "error sending request" alone does not tell a refused
/// connection from a timeout.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        text.push_str(&format!(": {e}"));
        cause = e.source();
    }
    text
}

/// The 503 answers a burst met, by what was asked and what they said.
type Unavailable = BTreeMap<String, usize>;

fn count(unavailable: &Mutex<Unavailable>, asked: &str, body: &str) {
    let said: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
    let said = format!("{asked}: {} {}", said["message"], said["details"]);
    *unavailable.lock().unwrap().entry(said).or_default() += 1;
}

/// `clients` clients over `sales`, each retrying (same key) through 503 and refused
/// connections: the registrations they were told about, the 503 they met and how many 500.
async fn burst(
    http: &reqwest::Client,
    gateway: &str,
    sales: &[(Uuid, Uuid)],
    clients: usize,
) -> (Vec<Uuid>, Unavailable, usize) {
    let (unavailable, failed) = (Mutex::new(BTreeMap::new()), AtomicUsize::new(0));
    let registered = AtomicUsize::new(0);
    let deadline = Instant::now() + PATIENCE;
    let answers = futures_util::future::join_all((0..clients).map(|i| {
        let (event, ticket_type) = sales[i % sales.len()];
        let (unavailable, failed, registered) = (&unavailable, &failed, &registered);
        let token = token(None, vec![]);
        let key = Uuid::new_v4().to_string();
        async move {
            // A person opens the event's page first: reads take pool connections of their own.
            loop {
                let page = http
                    .get(format!("{gateway}/api/v1/events/{event}/ticket-types"))
                    .send()
                    .await;
                let (status, body) = match page {
                    Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
                    Err(e) => (0, chain(&e)),
                };
                match status {
                    200 => break,
                    0 => {}
                    503 => count(unavailable, "read", &body),
                    500..=599 => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        eprintln!("{status} on a read: {body}");
                    }
                    other => panic!("unexpected {other} on a read: {body}"),
                }
                assert!(
                    Instant::now() < deadline,
                    "a client of event {event} got no page in {PATIENCE:?} ({} clients registered by then); its last answer: {status}: {body}",
                    registered.load(Ordering::Relaxed)
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            loop {
                let sent = http
                    .post(format!("{gateway}/api/v1/events/{event}/registrations"))
                    .bearer_auth(&token)
                    .header("X-Idempotency-Key", &key)
                    .json(&json!({"ticketTypeId": ticket_type, "firstName": "Pool", "lastName": "Test"}))
                    .send()
                    .await;
                let (status, body) = match sent {
                    Ok(r) => (r.status().as_u16(), r.json().await.unwrap_or_default()),
                    Err(e) => (0, json!(chain(&e))),
                };
                let last = format!("{status}: {body}");
                match status {
                    200 | 201 => {
                        registered.fetch_add(1, Ordering::Relaxed);
                        return body["id"].as_str().and_then(|id| id.parse().ok());
                    }
                    // Refused or cut connections: sent again.
                    0 => {}
                    503 => count(unavailable, "registration", &body.to_string()),
                    500..=599 => {
                        failed.fetch_add(1, Ordering::Relaxed);
                        eprintln!("{last}");
                    }
                    other => panic!("unexpected {other}: {body}"),
                }
                // What the others got by then tells a stuck client from a stuck burst.
                assert!(
                    Instant::now() < deadline,
                    "a client of event {event} got no registration in {PATIENCE:?} ({} of {clients} did); its last answer: {last}",
                    registered.load(Ordering::Relaxed)
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }))
    .await;
    (
        answers.into_iter().flatten().collect(),
        unavailable.into_inner().unwrap(),
        failed.into_inner(),
    )
}

async fn readiness(http: &reqwest::Client, gateway: &str) -> serde_json::Value {
    http.get(format!("{gateway}/health/ready"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn stored(t: &TestDb, created: &[Uuid], sales: &[(Uuid, Uuid)]) {
    let db = t.owner().await;
    let found: i64 = db
        .query_one(
            "SELECT count(*) FROM event_service.registrations WHERE id = ANY($1)",
            &[&created],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(found as usize, created.len(), "every 201 is stored");
    for (_, ticket_type) in sales {
        let (sold, reserved, active, holding) =
            storage::events::registrations::seat_audit(&t.db, *ticket_type)
                .await
                .unwrap();
        assert_eq!((i64::from(sold), i64::from(reserved)), (active, holding));
    }
}

#[tokio::test]
async fn six_processes_against_sixty_connections_answer_no_500_and_store_every_201() {
    let test_start = Instant::now();
    let mut t = TestDb::new().await;
    t.config.database.pool_size = TEST_POOL as usize;
    t.db = storage::Database::connect(&t.config.database).unwrap();
    let role = t.config.database.app_role_name();
    t.owner()
        .await
        .batch_execute(&format!(
            "ALTER ROLE \"{role}\" CONNECTION LIMIT {ROLE_LIMIT}"
        ))
        .await
        .unwrap();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();

    // Every process pools 32: together they could open far more than 60.
    let (processes, gateway) = start(&t, 0).await;
    let ready = readiness(&http, &gateway).await;
    let warning = ready["warnings"]["connections"]
        .as_str()
        .unwrap_or_default();
    assert!(
        warning.contains("231") && warning.contains(&ROLE_LIMIT.to_string()),
        "readiness warns: {ready}"
    );
    let sales_a = sales(&http, &gateway, 200).await;
    let begun = Instant::now();
    let (created, unavailable, failed) = burst(&http, &gateway, &sales_a, CLIENTS).await;
    eprintln!(
        "pools of 32 each, {:.1} s after the test's start: {} registered in {:.1} s, 503 answers (retried) {unavailable:?}, {failed} answers 5xx other than 503",
        (begun - test_start).as_secs_f64(),
        created.len(),
        begun.elapsed().as_secs_f64()
    );
    assert_eq!(failed, 0, "no 500 without a connection");
    assert_eq!(created.len(), CLIENTS);
    // Their pools hold the role's every connection: the counts are read once they are gone.
    drop(processes);
    stored(&t, &created, &sales_a).await;
    // Killed, they did not withdraw from the peers: forget them rather than wait 15 s; and
    // let their cluster memberships run out, so no gateway sends a write to a dead address.
    t.owner()
        .await
        .batch_execute("DELETE FROM platform.peers")
        .await
        .unwrap();
    assert!(
        eventually(10, || async {
            storage::cluster::live_members(&t.db, Duration::from_secs(2))
                .await
                .is_ok_and(|m| m.is_empty())
        })
        .await
    );

    // The budget set once: each process takes its share, together within the limit.
    let (processes, gateway) = start(&t, ROLE_LIMIT as u32 - TEST_POOL).await;
    let ready = readiness(&http, &gateway).await;
    assert!(ready.get("warnings").is_none(), "no warning: {ready}");
    let sales_b = sales(&http, &gateway, 200).await;
    let begun = Instant::now();
    let (created, unavailable, failed) = burst(&http, &gateway, &sales_b, CLIENTS).await;
    eprintln!(
        "with database.max_connections = {}, {:.1} s after the test's start: {} registered in {:.1} s, 503 answers (retried) {unavailable:?}, {failed} other 5xx",
        ROLE_LIMIT as u32 - TEST_POOL,
        (begun - test_start).as_secs_f64(),
        created.len(),
        begun.elapsed().as_secs_f64()
    );
    assert_eq!(failed, 0, "no 500 without a connection");
    assert_eq!(created.len(), CLIENTS);
    stored(&t, &created, &sales_b).await;
    drop(processes);
}
