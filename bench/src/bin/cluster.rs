//! Many events on sale at once, on one events node and on three (separate `bilet serve`
//! processes on this machine, a gateway in front, RabbitMQ between them): registrations per
//! second, latency, oversold and lost; then, on three nodes, the failover time after a kill -9
//! of the owner of an event.
//!
//! `cargo build --release --bin bilet -p bench --bin cluster && target/release/cluster`
//! (DATABASE_URL: an owner connection; the database `bilet_bench_cluster` is recreated for
//! each run). EVENTS, REQUESTS, CONCURRENCY and NODES (`1,3`) tune it; BILET_BIN names the
//! `bilet` binary.

use anyhow::Context;
use bench::run;
use chrono::Utc;
use domain::cluster::shard_of;
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

const SECRET: &str = "bench-secret-bench-secret-bench-secret";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(18_000)
}

/// A gateway and `n` events nodes as processes.
struct Processes {
    gateway: String,
    nodes: BTreeMap<String, (String, Child)>,
    file: PathBuf,
    bin: PathBuf,
}

impl Processes {
    fn start(bin: &Path, db_url: &str, amqp: &str, n: usize) -> anyhow::Result<Processes> {
        let dir =
            std::env::temp_dir().join(format!("bilet-bench-cluster-{}", Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir)?;
        let gateway_port = free_port();
        let gateway = format!("http://127.0.0.1:{gateway_port}");
        let mut nodes_toml = String::new();
        let mut urls = Vec::new();
        for i in 1..=n {
            let port = free_port();
            let url = format!("http://127.0.0.1:{port}");
            nodes_toml.push_str(&format!(
                "[[nodes]]\nname = \"events-{i}\"\nservices = [\"events\"]\naddresses = {{ events = {{ listen = \"127.0.0.1:{port}\", url = \"{url}\" }} }}\n"
            ));
            urls.push((format!("events-{i}"), url));
        }
        let file = dir.join("cluster.toml");
        std::fs::write(
            &file,
            format!(
                r#"
data_dir = "{dir}"
node = "gateway"
[log]
filter = "error"
[database]
url = "{db_url}"
pool_size = 48
[broker]
url = "{amqp}"
exchange = "bilet.bench-{exchange}"
[auth]
jwt_secret = "{SECRET}"
service_secret = "bench-service-secret-bench-service-secret"
[gateway]
user_per_minute = 4000000000
public_per_minute = 4000000000
[services.gateway]
listen = "127.0.0.1:{gateway_port}"
url = "{gateway}"
[services.events]
listen = "{first_listen}"
url = "{first}"
[[nodes]]
name = "gateway"
services = ["gateway"]
{nodes_toml}
"#,
                dir = dir.display(),
                exchange = Uuid::now_v7().simple(),
                first_listen = urls[0].1.trim_start_matches("http://"),
                first = urls[0].1,
            ),
        )?;
        let mut processes = Processes {
            gateway,
            nodes: BTreeMap::new(),
            file,
            bin: bin.to_path_buf(),
        };
        let gateway = processes.spawn("gateway")?;
        processes
            .nodes
            .insert("gateway".into(), (processes.gateway.clone(), gateway));
        for (name, url) in urls {
            let child = processes.spawn(&name)?;
            processes.nodes.insert(name, (url, child));
        }
        Ok(processes)
    }

    fn spawn(&self, node: &str) -> anyhow::Result<Child> {
        Command::new(&self.bin)
            .args(["--config", self.file.to_str().unwrap_or_default(), "serve"])
            .env("BILET_NODE", node)
            .env_remove("DATABASE_URL")
            .env_remove("BROKER_URL")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("start {} (set BILET_BIN)", self.bin.display()))
    }

    fn kill(&mut self, node: &str) {
        if let Some((_, mut child)) = self.nodes.remove(node) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Processes {
    fn drop(&mut self) {
        for (_, child) in self.nodes.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits until every shard has an owner among `n` live members.
async fn settled(db: &tokio_postgres::Client, n: i64) -> anyhow::Result<()> {
    for _ in 0..600 {
        let row = db
            .query_one(
                "SELECT count(*) FILTER (WHERE l.expires_at > clock_timestamp()),
                        count(DISTINCT l.owner) FILTER (WHERE l.expires_at > clock_timestamp())
                 FROM event_service.shard_leases l",
                &[],
            )
            .await;
        if let Ok(row) = row
            && row.get::<_, i64>(0) == 256
            && row.get::<_, i64>(1) == n
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the shards were not shared among {n} nodes within a minute")
}

fn token(user: UserId, tenant: Option<TenantId>, roles: Vec<Role>) -> anyhow::Result<String> {
    Ok(http::tokens::Tokens::new(SECRET)
        .issue(user, None, tenant, roles, None, 0, Utc::now())?
        .token)
}

async fn post(
    client: &reqwest::Client,
    url: String,
    token: &str,
    body: serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let r = client
        .post(&url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .await?;
    let status = r.status();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    anyhow::ensure!(status.is_success(), "{url}: {status} {body}");
    Ok(body)
}

/// Published events, each with one roomy free ticket type.
async fn sales(
    client: &reqwest::Client,
    gateway: &str,
    events: usize,
    seats: usize,
) -> anyhow::Result<Vec<(Uuid, Uuid)>> {
    let organizer = token(UserId::new(), Some(TenantId::new()), vec![Role::Owner])?;
    let starts = (Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let mut sales = Vec::new();
    for i in 0..events {
        let event = post(
            client,
            format!("{gateway}/api/v1/events"),
            &organizer,
            serde_json::json!({"title": format!("Sale {i}"), "startsAt": starts}),
        )
        .await?;
        let event: Uuid = event["id"].as_str().unwrap_or_default().parse()?;
        let free = post(
            client,
            format!("{gateway}/api/v1/events/{event}/ticket-types"),
            &organizer,
            serde_json::json!({"name": "Free", "quantity": seats}),
        )
        .await?;
        post(
            client,
            format!("{gateway}/api/v1/events/{event}/publish"),
            &organizer,
            serde_json::json!({}),
        )
        .await?;
        sales.push((event, free["id"].as_str().unwrap_or_default().parse()?));
    }
    Ok(sales)
}

/// Retries a registration on `event` every 20 ms until one is created.
async fn until_registered(
    client: &reqwest::Client,
    gateway: &str,
    event: Uuid,
    ticket_type: Uuid,
) -> anyhow::Result<()> {
    let token = token(UserId::new(), None, vec![])?;
    let key = Uuid::new_v4().to_string();
    for _ in 0..3000 {
        let sent = client
            .post(format!("{gateway}/api/v1/events/{event}/registrations"))
            .bearer_auth(&token)
            .header("X-Idempotency-Key", &key)
            .json(&serde_json::json!({"ticketTypeId": ticket_type}))
            .send()
            .await;
        if sent.is_ok_and(|r| r.status().as_u16() == 201 || r.status().as_u16() == 200) {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    anyhow::bail!("no registration within a minute")
}

/// What each request of the run needs; cheap to clone.
#[derive(Clone)]
struct Load {
    client: reqwest::Client,
    gateway: Arc<str>,
    sales: Arc<Vec<(Uuid, Uuid)>>,
    tokens: Arc<Vec<String>>,
    created: Arc<AtomicUsize>,
    errors: Arc<AtomicUsize>,
}

impl Load {
    /// Request `i`: a new person on the `i`-th event in turn.
    async fn register(self, i: usize) -> bool {
        let (event, ticket_type) = self.sales[i % self.sales.len()];
        let reply = self
            .client
            .post(format!(
                "{}/api/v1/events/{event}/registrations",
                self.gateway
            ))
            .bearer_auth(&self.tokens[i])
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .json(&serde_json::json!({"ticketTypeId": ticket_type}))
            .send()
            .await;
        match reply {
            Ok(r) if r.status().as_u16() == 201 => {
                self.created.fetch_add(1, Ordering::Relaxed);
                true
            }
            other => {
                // The first few failures are shown: an error count alone says nothing.
                if self.errors.fetch_add(1, Ordering::Relaxed) < 5 {
                    match other {
                        Ok(r) => eprintln!(
                            "error: {} {}",
                            r.status(),
                            r.text().await.unwrap_or_default()
                        ),
                        Err(e) => eprintln!("error: {e}"),
                    }
                }
                false
            }
        }
    }
}

struct Run {
    figures: bench::Figures,
    created: usize,
    errors: usize,
    rows: i64,
    counted: i64,
    oversold: i64,
    failover: Option<(String, usize, Duration)>,
}

async fn one(
    bin: &Path,
    admin_url: &str,
    amqp: &str,
    nodes: usize,
    events: usize,
    requests: usize,
    concurrency: usize,
) -> anyhow::Result<Run> {
    let (admin, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    // Two statements: a multi-statement string runs as one transaction, which DROP DATABASE refuses.
    admin
        .batch_execute("DROP DATABASE IF EXISTS bilet_bench_cluster WITH (FORCE)")
        .await?;
    admin
        .batch_execute("CREATE DATABASE bilet_bench_cluster")
        .await?;
    let db_url = match admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/bilet_bench_cluster"),
        None => anyhow::bail!("DATABASE_URL has no database"),
    };
    let mut processes = Processes::start(bin, &db_url, amqp, nodes)?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .timeout(Duration::from_secs(30))
        .build()?;
    for _ in 0..600 {
        if client
            .get(format!("{}/health/ready", processes.gateway))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (db, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    settled(&db, nodes as i64).await?;
    let seats = requests;
    let sales = Arc::new(sales(&client, &processes.gateway, events, seats).await?);
    let tokens: Arc<Vec<String>> = Arc::new(
        (0..requests)
            .map(|_| token(UserId::new(), None, vec![]))
            .collect::<anyhow::Result<_>>()?,
    );
    let created = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let load = Load {
        client: client.clone(),
        gateway: processes.gateway.clone().into(),
        sales: sales.clone(),
        tokens,
        created: created.clone(),
        errors: errors.clone(),
    };
    let figures = run(requests, concurrency, move |i| load.clone().register(i)).await;
    let ids: Vec<Uuid> = sales.iter().map(|(e, _)| *e).collect();
    let row = db
        .query_one(
            "SELECT (SELECT count(*) FROM event_service.registrations WHERE event_id = ANY($1)),
                    (SELECT COALESCE(sum(sold_count), 0)::int8 FROM event_service.ticket_types WHERE event_id = ANY($1)),
                    (SELECT COALESCE(sum(GREATEST(0, (SELECT count(*) FROM event_service.registrations r
                         WHERE r.ticket_type_id = t.id) - t.quantity)), 0)::int8
                     FROM event_service.ticket_types t WHERE t.event_id = ANY($1))",
            &[&ids],
        )
        .await?;
    let failover = if nodes > 1 {
        // The owner of the first event dies; its events wait for the lease to run out.
        let owner: String = db
            .query_one(
                "SELECT m.node FROM event_service.shard_leases l JOIN event_service.members m ON m.node = l.owner WHERE l.shard = $1",
                &[&shard_of(sales[0].0).as_i16()],
            )
            .await?
            .get(0);
        let name = owner
            .rsplit_once('-')
            .map(|(n, _)| n.to_string())
            .unwrap_or(owner.clone());
        let affected = {
            let rows = db
                .query("SELECT e.id FROM event_service.events e JOIN event_service.shard_leases l ON l.shard = e.shard WHERE l.owner = $1", &[&owner])
                .await?;
            rows.len()
        };
        processes.kill(&name);
        let killed = Instant::now();
        until_registered(&client, &processes.gateway, sales[0].0, sales[0].1).await?;
        Some((name, affected, killed.elapsed()))
    } else {
        None
    };
    drop(processes);
    Ok(Run {
        figures,
        created: created.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        rows: row.get(0),
        counted: row.get(1),
        oversold: row.get(2),
        failover,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let events = env_or("EVENTS", 64);
    let requests = env_or("REQUESTS", 20_000);
    let concurrency = env_or("CONCURRENCY", 256);
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let amqp = std::env::var("BROKER_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
    let bin = match std::env::var("BILET_BIN") {
        Ok(bin) => PathBuf::from(bin),
        Err(_) => std::env::current_exe()?
            .parent()
            .map(|d| d.join("bilet"))
            .context("no directory of the benchmark")?,
    };
    println!(
        "cluster: {requests} registrations spread over {events} events on sale at once, {concurrency} concurrent, through one gateway; events nodes are separate processes on this machine\n"
    );
    println!(
        "| events nodes | successes/s | p50 ms | p95 ms | p99 ms | created | errors | rows | sold_count | oversold | lost |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut failovers = Vec::new();
    // NODES=1 (or 1,3): which cluster sizes to run.
    let sizes: Vec<usize> = std::env::var("NODES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 3]);
    for nodes in sizes {
        let r = one(
            &bin,
            &admin_url,
            &amqp,
            nodes,
            events,
            requests,
            concurrency,
        )
        .await?;
        let per_second = r.created as f64 / r.figures.elapsed.as_secs_f64();
        let oversold = r.oversold;
        let lost = (r.created as i64 - r.rows).abs() + (r.counted - r.rows).abs();
        println!(
            "| {nodes} | {per_second:.0} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {oversold} | {lost} |",
            bench::ms(r.figures.p50),
            bench::ms(r.figures.p95),
            bench::ms(r.figures.p99),
            r.created,
            r.errors,
            r.rows,
            r.counted,
        );
        failovers.extend(r.failover);
    }
    for (node, affected, took) in failovers {
        println!(
            "\nfailover: kill -9 of {node}, owner of {affected} events: the first of them took a registration again after {:.0} ms (lease 2,000 ms, renewal every 300 ms)",
            bench::ms(took)
        );
    }
    Ok(())
}
