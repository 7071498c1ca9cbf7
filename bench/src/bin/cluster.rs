//! Many events on sale at once, on one events node and on three (separate `bilet serve`
//! processes on this machine, a gateway in front, RabbitMQ between them), each ticket type sold
//! out by more requests than it has seats: registrations per second, latency, oversold, not sold
//! out and lost, CPU per registration of each kind of process, and how many of the events
//! each node held (the busiest node's share bounds the cluster's rate); then, on three nodes,
//! the failover time after a kill -9 of the owner of an event.
//!
//! `cargo build --release --bin bilet -p bench --bin cluster && target/release/cluster`
//! (DATABASE_URL: an owner connection; the database `bilet_bench_cluster` is recreated for
//! each run). EVENTS, REQUESTS, SEATS_PER_EVENT, CONCURRENCY, RATE, NODES (`1,3`) and
//! CPU_QUOTA (each events node's share of a core, through a cgroup v1 cpu cgroup) with
//! CPU_PERIOD_MS (the cgroup's accounting period, 100 ms) tune it;
//! BILET_BIN names the `bilet` binary.

use anyhow::Context;
use bench::sale::{
    Audit, SECRET, SERVICE_SECRET, Sales, admin_url, audit, bilet_bin, clock_ticks_per_second,
    cpu_ticks, env_or, free_port, fresh_database, id_of, postgres_ticks, ready, sales, serve,
    shape, token,
};
use bench::{open_loop, run};
use domain::cluster::shard_of;
use domain::ids::UserId;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Open-loop requests in flight at most; beyond it the scheduled ones wait, their latency
/// still counting. Each holds a connection: the file descriptor limit must be above it.
const IN_FLIGHT: usize = 4096;

/// Where the cgroup v1 cpu controller is mounted: `CPU_QUOTA` needs it.
const CPU_CGROUPS: &str = "/sys/fs/cgroup/cpu";

/// Microseconds of a CFS period unless `CPU_PERIOD_MS` says otherwise: the quota is a
/// fraction of it.
const CFS_PERIOD_US: u64 = 100_000;

/// The kernel's shortest CFS quota and period.
const CFS_MIN_US: u64 = 1_000;

/// A gateway and `n` events nodes as processes.
struct Processes {
    gateway: String,
    nodes: BTreeMap<String, (String, Child)>,
    file: PathBuf,
    bin: PathBuf,
    /// With `CPU_QUOTA`: each events node's share of a core, and the period it is counted over.
    quota: Option<Cap>,
    /// The cgroups made for the events nodes, removed once their processes are gone.
    cgroups: Vec<PathBuf>,
}

impl Processes {
    fn start(
        bin: &Path,
        db_url: &str,
        amqp: &str,
        n: usize,
        quota: Option<Cap>,
    ) -> anyhow::Result<Processes> {
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
# Every process together stays below this server's limit (Debian's 100): a node that takes
# over a killed one's shards opens connections, and past the limit its actors could not start.
max_connections = 90
[broker]
url = "{amqp}"
exchange = "bilet.bench-{exchange}"
[auth]
jwt_secret = "{SECRET}"
service_secret = "{SERVICE_SECRET}"
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
            quota,
            cgroups: Vec::new(),
        };
        // The gateway (and PostgreSQL) stay uncapped: only the events nodes get a quota.
        let gateway = serve(&processes.bin, &processes.file, "gateway")?;
        processes
            .nodes
            .insert("gateway".into(), (processes.gateway.clone(), gateway));
        for (name, url) in urls {
            let cgroup = match processes.quota {
                Some(quota) => Some(processes.cgroup(&name, quota)?),
                None => None,
            };
            let child = serve(&processes.bin, &processes.file, &name)?;
            let pid = child.id();
            processes.nodes.insert(name.clone(), (url, child));
            if let Some(cgroup) = cgroup {
                // cgroup.procs moves every thread of the process; `tasks` would move only the
                // one thread named, leaving any the runtime has already started uncapped.
                std::fs::write(cgroup.join("cgroup.procs"), pid.to_string())
                    .with_context(|| format!("put {name} (pid {pid}) into {}", cgroup.display()))?;
            }
        }
        Ok(processes)
    }

    /// Makes (or reuses) the cgroup `bilet-bench-<node>` capped at `cap`.
    fn cgroup(&mut self, node: &str, cap: Cap) -> anyhow::Result<PathBuf> {
        let cgroup = Path::new(CPU_CGROUPS).join(format!("bilet-bench-{node}"));
        std::fs::create_dir_all(&cgroup)
            .with_context(|| format!("mkdir {} (CPU_QUOTA needs root)", cgroup.display()))?;
        self.cgroups.push(cgroup.clone());
        let quota_us = ((cap.share * cap.period_us as f64).round() as u64).max(CFS_MIN_US);
        for (file, value) in [
            ("cpu.cfs_period_us", cap.period_us),
            ("cpu.cfs_quota_us", quota_us),
        ] {
            std::fs::write(cgroup.join(file), value.to_string())
                .with_context(|| format!("write {value} to {}/{file}", cgroup.display()))?;
        }
        Ok(cgroup)
    }

    /// CPU ticks used so far by the gateway, and by the events nodes together.
    fn ticks(&self) -> (u64, u64) {
        let (mut gateway, mut nodes) = (0, 0);
        for (name, (_, child)) in &self.nodes {
            let ticks = cpu_ticks(&child.id().to_string()).unwrap_or(0);
            if name == "gateway" {
                gateway += ticks;
            } else {
                nodes += ticks;
            }
        }
        (gateway, nodes)
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
        // Every process of a cgroup has been waited for: it is empty and can go (rmdir; the
        // kernel may take a moment to let go of an exited task).
        for cgroup in self.cgroups.drain(..) {
            let mut removed = std::fs::remove_dir(&cgroup);
            for _ in 0..50 {
                if removed.is_ok() || !cgroup.exists() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
                removed = std::fs::remove_dir(&cgroup);
            }
            if let Err(e) = removed
                && cgroup.exists()
            {
                eprintln!("could not remove {}: {e}", cgroup.display());
            }
        }
    }
}

/// An events node's slice of the CPU: `share` of a core, counted over each `period_us`. A
/// node that has used its share waits out the rest of the period, so a long period makes a
/// capped node stall in long steps where a slow host would only be slow.
#[derive(Clone, Copy)]
struct Cap {
    share: f64,
    period_us: u64,
}

/// Each events node's cap, from `CPU_QUOTA` and `CPU_PERIOD_MS`; refused without the cgroup
/// v1 cpu controller (the benchmark mounts nothing).
fn cpu_quota() -> anyhow::Result<Option<Cap>> {
    let Ok(text) = std::env::var("CPU_QUOTA") else {
        return Ok(None);
    };
    let share: f64 = text
        .trim()
        .parse()
        .ok()
        .filter(|q: &f64| q.is_finite() && *q > 0.0)
        .with_context(|| {
            format!("CPU_QUOTA must be a share of a core above 0 (e.g. 0.2), not `{text}`")
        })?;
    let period_us = match std::env::var("CPU_PERIOD_MS") {
        Err(_) => CFS_PERIOD_US,
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .and_then(|ms| ms.checked_mul(1_000))
            .filter(|us| (CFS_MIN_US..=1_000_000).contains(us))
            .with_context(|| {
                format!("CPU_PERIOD_MS must be whole milliseconds from 1 to 1000, not `{text}`")
            })?,
    };
    anyhow::ensure!(
        share * period_us as f64 >= CFS_MIN_US as f64,
        "CPU_QUOTA {share} of a CPU_PERIOD_MS of {} ms is below the kernel's shortest quota (1 ms); lengthen the period",
        period_us / 1_000
    );
    anyhow::ensure!(
        Path::new(CPU_CGROUPS).join("cpu.cfs_quota_us").exists(),
        "CPU_QUOTA needs the cgroup v1 cpu controller at {CPU_CGROUPS} (with cpu.cfs_quota_us), which this machine does not have; unset CPU_QUOTA or run where it is mounted"
    );
    Ok(Some(Cap { share, period_us }))
}

/// CPU ticks used by each kind of process.
#[derive(Clone, Copy, Default)]
struct Cpu {
    gateway: u64,
    nodes: u64,
    postgres: u64,
    generator: u64,
}

impl Cpu {
    fn sample(processes: &Processes) -> Cpu {
        let (gateway, nodes) = processes.ticks();
        Cpu {
            gateway,
            nodes,
            postgres: postgres_ticks(),
            generator: cpu_ticks("self").unwrap_or(0),
        }
    }

    /// The ticks used since `before`. A PostgreSQL process that exits in between takes its
    /// ticks with it and is missed (saturating keeps the difference from going below zero);
    /// the pools hold their connections for the whole run, so that is rare.
    fn since(self, before: Cpu) -> Cpu {
        Cpu {
            gateway: self.gateway.saturating_sub(before.gateway),
            nodes: self.nodes.saturating_sub(before.nodes),
            postgres: self.postgres.saturating_sub(before.postgres),
            generator: self.generator.saturating_sub(before.generator),
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

/// Waits until the shards stop moving: publishing the sale's events makes the members share
/// the shards out again by the events on sale in them, and the burst should meet the cluster
/// as an on-sale would, long after the publications. Stable means every shard held, by the
/// same owners, over a second (a few cluster rounds).
async fn placed(db: &tokio_postgres::Client) -> anyhow::Result<()> {
    let owners = || async {
        db.query(
            "SELECT shard, owner FROM event_service.shard_leases
             WHERE expires_at > clock_timestamp() ORDER BY shard",
            &[],
        )
        .await
        .map(|rows| {
            rows.iter()
                .map(|r| (r.get::<_, i16>(0), r.get::<_, Option<String>>(1)))
                .collect::<Vec<_>>()
        })
    };
    let mut last = owners().await?;
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = owners().await?;
        if now.len() == 256 && now == last {
            return Ok(());
        }
        last = now;
    }
    anyhow::bail!("the shards kept moving for a minute after the sale's events were published")
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

/// How the answers of a burst went.
#[derive(Default)]
struct Answers {
    created: AtomicUsize,
    sold_out: AtomicUsize,
    errors: AtomicUsize,
    /// The ids in the 201 answers, each to be found in the database afterwards.
    ids: Mutex<Vec<Uuid>>,
}

impl Answers {
    async fn created(&self, reply: reqwest::Response) {
        self.created.fetch_add(1, Ordering::Relaxed);
        let body: serde_json::Value = reply.json().await.unwrap_or_default();
        // An answer without a readable id matches no row: the audit counts it lost.
        if let Ok(id) = id_of(&body) {
            self.keep(id);
        }
    }

    fn keep(&self, id: Uuid) {
        if let Ok(mut ids) = self.ids.lock() {
            ids.push(id);
        }
    }

    /// Every request beyond the seats should be told "sold out"; any other refusal is an error.
    async fn refused(&self, reply: reqwest::Response) {
        let status = reply.status();
        let text = reply.text().await.unwrap_or_default();
        let body: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        if status.as_u16() == 422 && body["code"] == "sold_out" {
            self.sold_out.fetch_add(1, Ordering::Relaxed);
        } else {
            self.error(&format!("{status} {text}"));
        }
    }

    fn error(&self, what: &dyn std::fmt::Display) {
        // The first few failures are shown: an error count alone says nothing.
        if self.errors.fetch_add(1, Ordering::Relaxed) < 5 {
            eprintln!("error: {what}");
        }
    }
}

/// What each request of the run needs; cheap to clone.
#[derive(Clone)]
struct Load {
    client: reqwest::Client,
    gateway: Arc<str>,
    types: Arc<Vec<(Uuid, Uuid)>>,
    tokens: Arc<Vec<String>>,
    answers: Arc<Answers>,
}

impl Load {
    /// Request `i`: a new person on the `i`-th event in turn; true when a seat was taken.
    async fn register(self, i: usize) -> bool {
        let (event, ticket_type) = self.types[i % self.types.len()];
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
                self.answers.created(r).await;
                true
            }
            Ok(r) => {
                self.answers.refused(r).await;
                false
            }
            Err(e) => {
                self.answers.error(&e);
                false
            }
        }
    }
}

/// How the burst's requests are sent.
#[derive(Clone, Copy)]
enum Loop {
    /// This many workers, each sending its next request once the previous one is answered.
    Closed(usize),
    /// This many requests per second on a fixed schedule, answered or not.
    Open(f64),
}

impl Loop {
    fn label(self) -> String {
        match self {
            Loop::Closed(concurrency) => format!("closed-loop, {concurrency} concurrent"),
            Loop::Open(rate) => {
                format!("open-loop, {rate} requests/s scheduled, at most {IN_FLIGHT} in flight")
            }
        }
    }

    /// Connections the client keeps for reuse: as many as requests in flight.
    fn connections(self) -> usize {
        match self {
            Loop::Closed(concurrency) => concurrency,
            Loop::Open(_) => IN_FLIGHT,
        }
    }

    async fn send(self, requests: usize, load: Load) -> bench::Figures {
        match self {
            Loop::Closed(concurrency) => {
                run(requests, concurrency, move |i| load.clone().register(i)).await
            }
            Loop::Open(rate) => {
                open_loop(requests, rate, IN_FLIGHT, move |i| load.clone().register(i)).await
            }
        }
    }
}

struct Run {
    figures: bench::Figures,
    created: usize,
    sold_out: usize,
    errors: usize,
    audit: Audit,
    cpu: Cpu,
    failover: Option<(String, usize, Duration)>,
    /// How many of the sale's events each node held when the burst began, most first.
    spread: Vec<i64>,
}

const TABLE: &str = "| events nodes | successes/s | p50 ms | p95 ms | p99 ms | created | sold out | errors | rows | sold+reserved | seats | oversold | not sold out | miscounted | lost | events a node |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

const CPU_TABLE: &str = "| events nodes | gateway | events nodes | PostgreSQL | load generator | together |\n|---|---|---|---|---|---|";

impl Run {
    fn row(&self, nodes: usize) -> String {
        let a = &self.audit;
        format!(
            "| {nodes} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            self.created as f64 / self.figures.elapsed.as_secs_f64(),
            bench::ms(self.figures.p50),
            bench::ms(self.figures.p95),
            bench::ms(self.figures.p99),
            self.created,
            self.sold_out,
            self.errors,
            a.rows,
            a.counted,
            a.seats,
            a.oversold,
            a.not_sold_out,
            a.miscounted,
            a.lost,
            self.spread
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        )
    }

    /// Milliseconds of CPU per created registration.
    fn cpu_row(&self, nodes: usize, ticks_per_second: f64) -> String {
        let per =
            |ticks: u64| ticks as f64 * 1000.0 / ticks_per_second / self.created.max(1) as f64;
        let c = self.cpu;
        format!(
            "| {nodes} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} |",
            per(c.gateway),
            per(c.nodes),
            per(c.postgres),
            per(c.generator),
            per(c.gateway + c.nodes + c.postgres + c.generator),
        )
    }
}

/// What every run shares.
struct Setup {
    bin: PathBuf,
    admin_url: String,
    amqp: String,
    events: usize,
    requests: usize,
    seats: usize,
    /// With `CPU_QUOTA`: each events node's cap.
    cpu_quota: Option<Cap>,
}

/// Kills the owner of the first event; returns it, how many events it owned and the time until
/// the first event took a registration again.
async fn failover(
    db: &tokio_postgres::Client,
    processes: &mut Processes,
    client: &reqwest::Client,
    sales: &Sales,
) -> anyhow::Result<(String, usize, Duration)> {
    let event = sales.types[0].0;
    // The owner of the first event dies; its events wait for the lease to run out.
    let owner: String = db
        .query_one(
            "SELECT m.node FROM event_service.shard_leases l JOIN event_service.members m ON m.node = l.owner WHERE l.shard = $1",
            &[&shard_of(event).as_i16()],
        )
        .await?
        .get(0);
    let name = owner
        .rsplit_once('-')
        .map(|(n, _)| n.to_string())
        .unwrap_or(owner.clone());
    let affected = db
        .query("SELECT e.id FROM event_service.events e JOIN event_service.shard_leases l ON l.shard = e.shard WHERE l.owner = $1", &[&owner])
        .await?
        .len();
    processes.kill(&name);
    let killed = Instant::now();
    let spare = sales.spare.context("no spare ticket type")?;
    until_registered(client, &processes.gateway, event, spare).await?;
    Ok((name, affected, killed.elapsed()))
}

/// Sends the requests, each a new person; returns the figures, the answers and the CPU used
/// meanwhile (the tokens are signed before, so their cost is not the burst's).
async fn burst(
    setup: &Setup,
    mode: Loop,
    processes: &Processes,
    client: &reqwest::Client,
    sales: &Sales,
) -> anyhow::Result<(bench::Figures, Arc<Answers>, Cpu)> {
    let tokens: Vec<String> = (0..setup.requests)
        .map(|_| token(UserId::new(), None, vec![]))
        .collect::<anyhow::Result<_>>()?;
    let answers = Arc::new(Answers::default());
    let load = Load {
        client: client.clone(),
        gateway: processes.gateway.clone().into(),
        types: Arc::new(sales.types.clone()),
        tokens: Arc::new(tokens),
        answers: answers.clone(),
    };
    let before = Cpu::sample(processes);
    let figures = mode.send(setup.requests, load).await;
    let cpu = Cpu::sample(processes).since(before);
    Ok((figures, answers, cpu))
}

async fn one(setup: &Setup, nodes: usize, mode: Loop) -> anyhow::Result<Run> {
    let db_url = fresh_database(&setup.admin_url, "bilet_bench_cluster").await?;
    let mut processes = Processes::start(&setup.bin, &db_url, &setup.amqp, nodes, setup.cpu_quota)?;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(mode.connections())
        .timeout(Duration::from_secs(30))
        .build()?;
    ready(&client, &processes.gateway).await?;
    let (db, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    settled(&db, nodes as i64).await?;
    let sales = sales(&client, &processes.gateway, setup.events, setup.seats, true).await?;
    placed(&db).await?;
    let spread = spread(&db, &sales).await?;
    let (figures, answers, cpu) = burst(setup, mode, &processes, &client, &sales).await?;
    let created = answers.created.load(Ordering::Relaxed);
    let ids = answers
        .ids
        .lock()
        .map(|ids| ids.clone())
        .unwrap_or_default();
    let audit = audit(&db, &sales.type_ids(), created, &ids).await?;
    // One failover a cluster size is enough: it is timed after the closed-loop burst only.
    let failover = match mode {
        Loop::Closed(_) if nodes > 1 => Some(failover(&db, &mut processes, &client, &sales).await?),
        _ => None,
    };
    drop(processes);
    Ok(Run {
        figures,
        created,
        sold_out: answers.sold_out.load(Ordering::Relaxed),
        errors: answers.errors.load(Ordering::Relaxed),
        audit,
        cpu,
        failover,
        spread,
    })
}

/// How many of the sale's events each node holds (by the leases of their shards), most first:
/// a node holding more of them than its share sells its part last, and bounds the cluster's
/// rate.
async fn spread(db: &tokio_postgres::Client, sales: &Sales) -> anyhow::Result<Vec<i64>> {
    let events: Vec<Uuid> = sales.types.iter().map(|(event, _)| *event).collect();
    Ok(db
        .query(
            "SELECT count(*) FROM event_service.events e
             JOIN event_service.shard_leases l ON l.shard = e.shard
             WHERE e.id = ANY($1) GROUP BY l.owner ORDER BY 1 DESC",
            &[&events],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

fn setup() -> anyhow::Result<Setup> {
    let (events, requests, seats) = shape(64, 20_000, "SEATS_PER_EVENT")?;
    Ok(Setup {
        bin: bilet_bin()?,
        admin_url: admin_url(),
        amqp: std::env::var("BROKER_URL")
            .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into()),
        events,
        requests,
        seats,
        cpu_quota: cpu_quota()?,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let setup = setup()?;
    let concurrency = env_or("CONCURRENCY", 256);
    // RATE=<requests per second> adds an open-loop run after the closed-loop one.
    let rate = std::env::var("RATE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|rate| *rate > 0.0);
    // NODES=1 (or 1,3): which cluster sizes to run.
    let sizes: Vec<usize> = std::env::var("NODES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1, 3]);
    let ticks_per_second = clock_ticks_per_second();
    println!(
        "cluster: {} registrations spread round-robin over {} events on sale at once, {} seats each (every type sells out), through one gateway; events nodes are separate processes on this machine",
        setup.requests, setup.events, setup.seats
    );
    if let Some(cap) = setup.cpu_quota {
        println!(
            "each events node capped at {} of a core counted over {} ms (cgroup v1 cpu, {CPU_CGROUPS}/bilet-bench-<node>); the gateway and PostgreSQL uncapped",
            cap.share,
            cap.period_us / 1_000
        );
    }
    let mut failovers = Vec::new();
    let mut faults = 0;
    for mode in std::iter::once(Loop::Closed(concurrency)).chain(rate.map(Loop::Open)) {
        println!("\n{}:\n\n{TABLE}", mode.label());
        let mut cpu = Vec::new();
        for &nodes in &sizes {
            let r = one(&setup, nodes, mode).await?;
            println!("{}", r.row(nodes));
            cpu.push(r.cpu_row(nodes, ticks_per_second));
            faults += r.audit.faults();
            failovers.extend(r.failover);
        }
        println!(
            "\nCPU ms per created registration, {}:\n\n{CPU_TABLE}",
            mode.label()
        );
        for row in cpu {
            println!("{row}");
        }
    }
    for (node, affected, took) in failovers {
        println!(
            "\nfailover: kill -9 of {node}, owner of {affected} events: the first of them took a registration again after {:.0} ms (lease 2,000 ms, renewal every 300 ms)",
            bench::ms(took)
        );
    }
    anyhow::ensure!(
        faults == 0,
        "not every ticket type was sold exactly out with every registration answered: see oversold, not sold out, miscounted and lost"
    );
    Ok(())
}
