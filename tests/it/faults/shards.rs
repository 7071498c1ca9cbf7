//! Ticketing across nodes, as separate processes: a gateway and three events nodes on
//! RabbitMQ, with registrations bursting over many events while an owner is killed with
//! SIGKILL, the killed node comes back and takes its share, an owner is paused with SIGSTOP
//! for longer than its lease, and an owner is stopped with SIGTERM and started again. During
//! each, clients see no error (the gateway holds their requests through the hand-over) and the
//! longest wait for an answer is printed. After each: every registration a client was told
//! about exists once, seat counts equal rows, nothing is oversold; at the end every
//! reservation expired exactly once and every event had exactly one reminder.

use crate::scenario::cluster::spawn_node;
use crate::support::{TestDb, eventually, free_port};
use chrono::Utc;
use domain::cluster::shard_of;
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};
use uuid::Uuid;

const SECRET: &str = "test-secret-test-secret-test-secret";
const NODES: [&str; 3] = ["events-1", "events-2", "events-3"];
const EVENTS: usize = 24;
const FREE_SEATS: i64 = 400;
const PAID_SEATS: i64 = 12;
const LEASE_MS: u64 = 2_000;

/// Answers 500 seen by the clients: a failure of the platform must never look like a bug.
static SERVER_ERRORS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// Errors the clients saw (a 503, any other 5xx, a refused or broken connection, a timeout)
/// in the current phase: a hand-over must show none.
static VISIBLE_ERRORS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
/// The longest a client waited for one answer in the current phase, in milliseconds.
static LONGEST_WAIT_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Prints what the clients saw during `phase` and starts counting afresh; no error may show.
fn seen_by_clients(phase: &str) {
    use std::sync::atomic::Ordering::Relaxed;
    let errors = VISIBLE_ERRORS.swap(0, Relaxed);
    let longest = LONGEST_WAIT_MS.swap(0, Relaxed);
    eprintln!("{phase}: client-visible errors {errors}, longest wait for an answer {longest} ms");
    assert_eq!(errors, 0, "{phase}: the hand-over showed errors to clients");
}

/// What a client was finally told.
#[derive(Clone, Debug, PartialEq)]
enum Answer {
    /// 201 (or a replayed 200) with this registration.
    Created(Uuid),
    /// A refusal (sold out): nothing was registered.
    Refused(u16, String),
    /// No answer within the deadline: the test fails on it.
    GaveUp,
}

/// One event of the test with its two ticket types.
#[derive(Clone, Debug)]
struct Sale {
    event: Uuid,
    free: Uuid,
    paid: Uuid,
}

/// The processes: a gateway and the events nodes, each with its own address.
struct Shards {
    file: PathBuf,
    gateway: String,
    /// Each events node's address.
    urls: BTreeMap<&'static str, String>,
    processes: BTreeMap<&'static str, Child>,
    http: reqwest::Client,
}

impl Shards {
    async fn start(t: &TestDb) -> Shards {
        let dir = std::env::temp_dir().join(format!("bilet-shards-{}", Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let gateway_port = free_port();
        let gateway = format!("http://127.0.0.1:{gateway_port}");
        let mut urls = BTreeMap::new();
        let mut nodes = String::new();
        for name in NODES {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}");
            nodes.push_str(&format!(
                "[[nodes]]\nname = \"{name}\"\nservices = [\"events\"]\naddresses = {{ events = {{ listen = \"127.0.0.1:{port}\", url = \"{url}\" }} }}\n"
            ));
            urls.insert(name, url);
        }
        let file = dir.join("cluster.toml");
        std::fs::write(
            &file,
            format!(
                r#"
data_dir = "{dir}"
node = "gateway"
[database]
url = "{db}"
[broker]
url = "{amqp}"
exchange = "bilet.test-{exchange}"
retry_base_ms = 200
relay_poll_ms = 200
[auth]
jwt_secret = "{SECRET}"
service_secret = "test-service-secret-test-service-secret"
bcrypt_cost = 4
[gateway]
user_per_minute = 1000000
public_per_minute = 1000000
forward_timeout_ms = 15000
[cluster]
renew_every_ms = 300
lease_ttl_ms = {LEASE_MS}
map_poll_ms = 500
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
                first_listen = urls["events-1"].trim_start_matches("http://"),
                first = urls["events-1"],
            ),
        )
        .unwrap();
        let mut shards = Shards {
            file,
            gateway,
            urls,
            processes: BTreeMap::new(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(20))
                .build()
                .unwrap(),
        };
        shards.spawn("gateway");
        for name in NODES {
            shards.spawn(name);
        }
        shards.wait_ready(&shards.gateway.clone()).await;
        for name in NODES {
            shards.wait_ready(&shards.urls[name].clone()).await;
        }
        shards
    }

    fn spawn(&mut self, node: &'static str) {
        let child = spawn_node(&self.file, node);
        self.processes.insert(node, child);
    }

    async fn wait_ready(&self, url: &str) {
        let url = format!("{url}/health/ready");
        assert!(
            eventually(90, || async {
                reqwest::get(&url)
                    .await
                    .is_ok_and(|r| r.status().is_success())
            })
            .await,
            "{url} becomes ready"
        );
    }

    fn kill(&mut self, node: &str) {
        if let Some(mut child) = self.processes.remove(node) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn signal(&self, node: &str, signal: &str) {
        let pid = self.processes[node].id().to_string();
        let status = std::process::Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {node}");
    }

    /// Which of the test's nodes owns each shard now (by the owner's address).
    async fn owners(&self, t: &TestDb) -> HashMap<u8, &'static str> {
        let by_address: HashMap<&str, &'static str> =
            self.urls.iter().map(|(n, u)| (u.as_str(), *n)).collect();
        storage::cluster::map(&t.db)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|s| {
                let (_, address) = s.owner?;
                Some((s.shard.0, *by_address.get(address.as_str())?))
            })
            .collect()
    }

    /// Waits until every shard is owned by exactly the nodes `members`.
    async fn settled(&self, t: &TestDb, members: &[&str], seconds: u64) -> bool {
        eventually(seconds, || async {
            let owners = self.owners(t).await;
            let mut who: Vec<&str> = owners.values().copied().collect();
            who.sort();
            who.dedup();
            owners.len() == 256 && who == members
        })
        .await
    }

    /// `bilet_cluster_fenced_commits_total` of a node (0 before the first).
    async fn fenced(&self, node: &str) -> u64 {
        let text = self
            .http
            .get(format!("{}/metrics", self.urls[node]))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("bilet_cluster_fenced_commits_total "))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0)
    }
}

impl Drop for Shards {
    fn drop(&mut self) {
        for child in self.processes.values_mut() {
            // A paused process cannot die of SIGKILL until it runs again.
            let _ = std::process::Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn token(user: UserId, tenant: Option<TenantId>, roles: Vec<Role>) -> String {
    http::tokens::Tokens::new(SECRET)
        .issue(user, None, tenant, roles, None, 0, Utc::now())
        .unwrap()
        .token
}

async fn post(
    http: &reqwest::Client,
    url: String,
    token: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let r = http
        .post(&url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    assert!(status.is_success(), "{url}: {status} {body}");
    body
}

/// An organization's published events starting in 20 hours (their reminders are due at once),
/// each with a roomy free type and a small paid type whose reservations last a minute.
async fn sales(s: &Shards) -> Vec<Sale> {
    let organizer = token(UserId::new(), Some(TenantId::new()), vec![Role::Owner]);
    let base = &s.gateway;
    let mut sales = Vec::new();
    for i in 0..EVENTS {
        let starts = (Utc::now() + chrono::Duration::hours(20)).to_rfc3339();
        let event = post(
            &s.http,
            format!("{base}/api/v1/events"),
            &organizer,
            json!({"title": format!("Shard {i}"), "startsAt": starts}),
        )
        .await;
        let event: Uuid = event["id"].as_str().unwrap().parse().unwrap();
        let types = format!("{base}/api/v1/events/{event}/ticket-types");
        let free = post(
            &s.http,
            types.clone(),
            &organizer,
            json!({"name": "Free", "quantity": FREE_SEATS}),
        )
        .await;
        let paid = post(&s.http, types, &organizer, json!({"name": "Paid", "quantity": PAID_SEATS, "priceCents": 1000, "currency": "RUB", "reservationMinutes": 1})).await;
        post(
            &s.http,
            format!("{base}/api/v1/events/{event}/publish"),
            &organizer,
            json!({}),
        )
        .await;
        sales.push(Sale {
            event,
            free: free["id"].as_str().unwrap().parse().unwrap(),
            paid: paid["id"].as_str().unwrap().parse().unwrap(),
        });
    }
    sales
}

/// One client: its own account and idempotency key, retrying through failures of the platform
/// (refused connections, 5xx, 429) until it gets a real answer or `deadline` passes.
async fn client(
    http: reqwest::Client,
    base: String,
    event: Uuid,
    ticket_type: Uuid,
    deadline: Instant,
) -> Answer {
    let token = token(UserId::new(), None, vec![]);
    let key = Uuid::new_v4().to_string();
    use std::sync::atomic::Ordering::Relaxed;
    loop {
        let asked = Instant::now();
        let sent = http
            .post(format!("{base}/api/v1/events/{event}/registrations"))
            .bearer_auth(&token)
            .header("X-Idempotency-Key", &key)
            .json(&json!({"ticketTypeId": ticket_type, "firstName": "Shard", "lastName": "Test"}))
            .send()
            .await;
        let answered = match sent {
            Ok(r) => {
                let status = r.status().as_u16();
                Some((
                    status,
                    r.json::<serde_json::Value>().await.unwrap_or_default(),
                ))
            }
            Err(_) => None,
        };
        LONGEST_WAIT_MS.fetch_max(asked.elapsed().as_millis() as u64, Relaxed);
        match answered {
            Some((200 | 201, body)) => {
                return Answer::Created(body["id"].as_str().unwrap().parse().unwrap());
            }
            Some((429, _)) => {}
            Some((status @ 400..=499, body)) => {
                return Answer::Refused(status, body["code"].as_str().unwrap_or("").to_string());
            }
            Some((status, body)) => {
                if status == 500 {
                    SERVER_ERRORS.fetch_add(1, Relaxed);
                }
                VISIBLE_ERRORS.fetch_add(1, Relaxed);
                eprintln!("client saw {status}: {body}");
            }
            None => {
                VISIBLE_ERRORS.fetch_add(1, Relaxed);
                eprintln!("client saw no answer");
            }
        }
        if Instant::now() > deadline {
            return Answer::GaveUp;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `clients` clients over `sales` (one in six on the paid type), one every `spacing`.
fn burst(
    s: &Shards,
    sales: &[Sale],
    clients: usize,
    spacing: Duration,
) -> tokio::task::JoinHandle<Vec<Answer>> {
    let (http, base, sales) = (s.http.clone(), s.gateway.clone(), sales.to_vec());
    tokio::spawn(async move {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut tasks = Vec::new();
        for i in 0..clients {
            let sale = &sales[i % sales.len()];
            let ticket_type = if i % 6 == 5 { sale.paid } else { sale.free };
            tasks.push(tokio::spawn(client(
                http.clone(),
                base.clone(),
                sale.event,
                ticket_type,
                deadline,
            )));
            tokio::time::sleep(spacing).await;
        }
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(task.await.unwrap());
        }
        answers
    })
}

/// The events whose shard `node` owns.
async fn owned_by(s: &Shards, t: &TestDb, sales: &[Sale], node: &str) -> Vec<Sale> {
    let owners = s.owners(t).await;
    sales
        .iter()
        .filter(|sale| owners.get(&shard_of(sale.event).0) == Some(&node))
        .cloned()
        .collect()
}

/// The node owning the most of the events.
async fn busiest(s: &Shards, t: &TestDb, sales: &[Sale]) -> &'static str {
    let owners = s.owners(t).await;
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for sale in sales {
        if let Some(node) = owners.get(&shard_of(sale.event).0) {
            *counts.entry(node).or_default() += 1;
        }
    }
    counts.into_iter().max_by_key(|(_, n)| *n).unwrap().0
}

/// Every client was answered; every registration a client was told about exists, once per
/// client; seat counts equal rows and nothing is oversold.
async fn invariants(t: &TestDb, sales: &[Sale], answers: &[Answer], phase: &str) {
    assert!(
        !answers.contains(&Answer::GaveUp),
        "{phase}: a client got no answer"
    );
    for answer in answers {
        if let Answer::Refused(status, code) = answer {
            assert!(
                [409, 422].contains(status),
                "{phase}: only a sold-out type refuses: {status} {code}"
            );
        }
    }
    let created: Vec<Uuid> = answers
        .iter()
        .filter_map(|a| match a {
            Answer::Created(id) => Some(*id),
            _ => None,
        })
        .collect();
    let db = t.owner().await;
    let found: i64 = db
        .query_one(
            "SELECT count(DISTINCT id) FROM event_service.registrations WHERE id = ANY($1)",
            &[&created],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        found as usize,
        created.len(),
        "{phase}: every registration a client was told about exists"
    );
    let events: Vec<Uuid> = sales.iter().map(|s| s.event).collect();
    let twice: i64 = db
        .query_one(
            "SELECT count(*) FROM (SELECT user_id FROM event_service.registrations WHERE event_id = ANY($1)
             GROUP BY user_id HAVING count(*) > 1) d",
            &[&events],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        twice, 0,
        "{phase}: one registration per client, retries included"
    );
    for sale in sales {
        for (ticket_type, quantity) in [(sale.free, FREE_SEATS), (sale.paid, PAID_SEATS)] {
            let (sold, reserved, active, holding) =
                storage::events::registrations::seat_audit(&t.db, ticket_type)
                    .await
                    .unwrap();
            assert_eq!(
                (i64::from(sold), i64::from(reserved)),
                (active, holding),
                "{phase}: counts equal rows"
            );
            assert!(
                active + holding <= quantity,
                "{phase}: oversold {ticket_type}"
            );
        }
    }
}

/// A client per event, each retrying until registered: the time until the last of them is.
async fn time_to_register_again(s: &Shards, sales: &[Sale], since: Instant) -> Duration {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut tasks = Vec::new();
    for sale in sales {
        tasks.push(tokio::spawn(client(
            s.http.clone(),
            s.gateway.clone(),
            sale.event,
            sale.free,
            deadline,
        )));
    }
    let mut slowest = Duration::ZERO;
    for task in tasks {
        let answer = task.await.unwrap();
        assert!(
            matches!(answer, Answer::Created(_)),
            "registrations again: {answer:?}"
        );
        slowest = slowest.max(since.elapsed());
    }
    slowest
}

/// How often each subject (`field` of the payload) was announced as `kind` in the outbox.
async fn announcements(db: &tokio_postgres::Client, kind: &str, field: &str) -> Vec<(String, i64)> {
    db.query(
        "SELECT data->>$2, count(*) FROM event_service.outbox WHERE event_type = $1 GROUP BY 1",
        &[&kind, &field],
    )
    .await
    .unwrap()
    .iter()
    .map(|r| (r.get(0), r.get(1)))
    .collect()
}

#[tokio::test]
async fn owners_killed_paused_and_joining_lose_and_oversell_nothing() {
    let t = TestDb::new().await;
    let mut s = Shards::start(&t).await;
    assert!(
        s.settled(&t, &NODES, 20).await,
        "three nodes share the shards"
    );
    let sales = sales(&s).await;

    // kill -9 of the owner of the most events in the middle of a burst.
    let victim = busiest(&s, &t, &sales).await;
    let victims = owned_by(&s, &t, &sales, victim).await;
    let load = burst(&s, &sales, 600, Duration::from_millis(4));
    tokio::time::sleep(Duration::from_millis(800)).await;
    s.kill(victim);
    let killed = Instant::now();
    let back = time_to_register_again(&s, &victims, killed).await;
    eprintln!(
        "kill -9 of {victim}: its {} events took registrations again after {} ms",
        victims.len(),
        back.as_millis()
    );
    assert!(
        back < Duration::from_secs(5),
        "its events take registrations within 5 s: {back:?}"
    );
    let mut answers = load.await.unwrap();
    seen_by_clients("kill -9");
    invariants(&t, &sales, &answers, "after kill -9").await;

    // The killed node comes back as a new member and takes over its share.
    s.spawn(victim);
    s.wait_ready(&s.urls[victim].clone()).await;
    assert!(
        s.settled(&t, &NODES, 15).await,
        "the joining node takes its share"
    );
    let share = s
        .owners(&t)
        .await
        .values()
        .filter(|n| **n == victim)
        .count();
    eprintln!("{victim} joined again and owns {share} shards");
    assert!(
        (40..=130).contains(&share),
        "a fair share for the joiner: {share}"
    );
    let joined = owned_by(&s, &t, &sales, victim).await;
    let targets = if joined.is_empty() {
        sales.clone()
    } else {
        joined
    };
    let load = burst(&s, &targets, 200, Duration::from_millis(2));
    answers.extend(load.await.unwrap());
    seen_by_clients("after the join");
    invariants(&t, &sales, &answers, "after the join").await;

    // SIGSTOP of an owner for longer than its lease, in the middle of a burst.
    let paused = busiest(&s, &t, &sales).await;
    let before = s.fenced(paused).await;
    let targets = owned_by(&s, &t, &sales, paused).await;
    let load = burst(&s, &targets, 400, Duration::from_millis(2));
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.signal(paused, "STOP");
    let others: Vec<&str> = NODES.iter().copied().filter(|n| *n != paused).collect();
    assert!(
        s.settled(&t, &others, 20).await,
        "the others take the paused node's shards once its lease (and its open transaction) ran out"
    );
    s.signal(paused, "CONT");
    // Woken, it knows at once that its leases are past their trust (its round has a deadline),
    // so it begins no commit under them; one begun before the pause is refused and counted.
    tokio::time::sleep(Duration::from_millis(500)).await;
    eprintln!(
        "SIGSTOP of {paused}: fenced commits {} -> {}",
        before,
        s.fenced(paused).await
    );
    answers.extend(load.await.unwrap());
    seen_by_clients("SIGSTOP past the lease, then SIGCONT");
    invariants(&t, &sales, &answers, "after SIGSTOP").await;
    assert!(
        s.settled(&t, &NODES, 15).await,
        "the paused node takes its share again"
    );

    // SIGTERM of an owner mid-burst: it hands its shards over and keeps forwarding until the
    // gateway's map has moved, then exits; started again, it joins mid-burst.
    let leaving = busiest(&s, &t, &sales).await;
    let load = burst(&s, &sales, 600, Duration::from_millis(3));
    tokio::time::sleep(Duration::from_millis(500)).await;
    s.signal(leaving, "TERM");
    let mut process = s.processes.remove(leaving).unwrap();
    let exited = eventually(30, || {
        let done = process.try_wait().unwrap().is_some();
        async move { done }
    })
    .await;
    assert!(exited, "{leaving} exits after SIGTERM");
    let others: Vec<&str> = NODES.iter().copied().filter(|n| *n != leaving).collect();
    assert!(
        s.settled(&t, &others, 10).await,
        "the others own every shard"
    );
    s.spawn(leaving);
    answers.extend(load.await.unwrap());
    seen_by_clients("SIGTERM, then a join");
    invariants(&t, &sales, &answers, "after SIGTERM").await;
    s.wait_ready(&s.urls[leaving].clone()).await;
    assert!(
        s.settled(&t, &NODES, 15).await,
        "the stopped node takes its share again"
    );

    // Every reservation expires once (a minute after it was made, wherever its shard went),
    // and every event had one reminder.
    let db = t.owner().await;
    let events: Vec<Uuid> = sales.iter().map(|s| s.event).collect();
    assert!(
        eventually(120, || async {
            let held: i64 = db
                .query_one("SELECT count(*) FROM event_service.registrations WHERE event_id = ANY($1) AND status = 'RESERVED'", &[&events])
                .await
                .unwrap()
                .get(0);
            held == 0
        })
        .await,
        "every reservation expires"
    );
    let expired: i64 = db
        .query_one("SELECT count(*) FROM event_service.registrations WHERE event_id = ANY($1) AND status = 'EXPIRED'", &[&events])
        .await
        .unwrap()
        .get(0);
    assert!(expired > 0, "the paid types held reservations");
    let announced = announcements(&db, "reservation.expired", "registrationId").await;
    assert_eq!(
        announced.len() as i64,
        expired,
        "each expired reservation announced"
    );
    assert!(announced.iter().all(|(_, n)| *n == 1), "and announced once");
    let reminders = announcements(&db, "event.reminder", "eventId").await;
    assert_eq!(
        reminders.len(),
        EVENTS,
        "every event had its reminder: {reminders:?}"
    );
    assert!(
        reminders.iter().all(|(_, n)| *n == 1),
        "one reminder per event: {reminders:?}"
    );
    eprintln!(
        "{} clients answered: {} registered, {} refused (sold out); {expired} reservations expired once; {EVENTS} reminders",
        answers.len(),
        answers
            .iter()
            .filter(|a| matches!(a, Answer::Created(_)))
            .count(),
        answers
            .iter()
            .filter(|a| matches!(a, Answer::Refused(..)))
            .count(),
    );
    assert_eq!(
        SERVER_ERRORS.load(std::sync::atomic::Ordering::Relaxed),
        0,
        "outages answer 503 with Retry-After, never 500"
    );
}
