//! What the sale benchmarks (`cluster`, `outside`) share: `bilet serve` processes and their
//! database, tokens signed directly, events put on sale through the gateway, CPU time from
//! `/proc`, and the audit of the sold-out ticket types afterwards.

use anyhow::Context;
use chrono::Utc;
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use uuid::Uuid;

/// The JWT secret of every benchmark cluster.toml: the benchmarks sign their tokens with it.
pub const SECRET: &str = "bench-secret-bench-secret-bench-secret";

/// The service secret of every benchmark cluster.toml.
pub const SERVICE_SECRET: &str = "bench-service-secret-bench-service-secret";

/// How many events, requests and seats per event a run uses: `EVENTS` and `REQUESTS` (with
/// these defaults) and the seats variable `seats_var` (three quarters of each event's requests
/// by default), checked so that every ticket type sells out.
pub fn shape(
    events: usize,
    requests: usize,
    seats_var: &str,
) -> anyhow::Result<(usize, usize, usize)> {
    let events = env_or("EVENTS", events);
    let requests = env_or("REQUESTS", requests);
    anyhow::ensure!(
        events > 0 && requests >= events,
        "REQUESTS must be at least EVENTS"
    );
    // Round-robin: each event gets at least this many requests, some one more.
    let per_event = requests / events;
    let seats = env_or(seats_var, per_event * 3 / 4);
    anyhow::ensure!(
        seats >= 1 && seats < per_event,
        "{seats_var} must be from 1 to {} (below the {per_event} requests each event gets): every type is to be sold out",
        per_event.saturating_sub(1)
    );
    Ok((events, requests, seats))
}

/// A whole number from the environment, or `default`.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A port nobody listens on right now, from 20,000–31,999: below the kernel's range for
/// outgoing connections (32,768–60,999 by default), where a port found free can be taken by a
/// client socket (wrk's, the node's pools') before the node binds it — one history run of 28
/// November failed to start on "address already in use" that way.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU16, Ordering};
    const FIRST: u16 = 20_000;
    const COUNT: u16 = 12_000;
    // Processes started together begin at different places; calls of one process go on.
    static NEXT: AtomicU16 = AtomicU16::new(0);
    let start = (std::process::id() % u32::from(COUNT)) as u16;
    for _ in 0..COUNT {
        let step = NEXT.fetch_add(1, Ordering::Relaxed) % COUNT;
        let port = FIRST + (start + step) % COUNT;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    18_000
}

/// The owner connection: `DATABASE_URL`, or the local PostgreSQL's `postgres` database.
pub fn admin_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The `bilet` binary: `BILET_BIN`, or the one next to the running benchmark.
pub fn bilet_bin() -> anyhow::Result<PathBuf> {
    match std::env::var("BILET_BIN") {
        Ok(bin) => Ok(PathBuf::from(bin)),
        Err(_) => std::env::current_exe()?
            .parent()
            .map(|d| d.join("bilet"))
            .context("no directory of the benchmark"),
    }
}

/// Recreates the database `name` through the owner connection `admin_url`; returns its URL.
pub async fn fresh_database(admin_url: &str, name: &str) -> anyhow::Result<String> {
    let (admin, connection) = tokio_postgres::connect(admin_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    // Two statements: a multi-statement string runs as one transaction, which DROP DATABASE refuses.
    admin
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .await?;
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await?;
    match admin_url.rsplit_once('/') {
        Some((base, _)) => Ok(format!("{base}/{name}")),
        None => anyhow::bail!("DATABASE_URL has no database"),
    }
}

/// Starts `bilet serve` as node `node` of the cluster.toml `file`, its output discarded. The
/// variables that would override the file (DATABASE_URL, BROKER_URL, REDIS_URL, JWT_SECRET,
/// `BILET__…` and the others `bilet` reads) are not passed on: the file alone says what runs.
pub fn serve(bin: &Path, file: &Path, node: &str) -> anyhow::Result<Child> {
    let mut command = Command::new(bin);
    command.args(["--config", file.to_str().unwrap_or_default(), "serve"]);
    for (variable, _) in domain::config::ENV_ALIASES {
        command.env_remove(variable);
    }
    for (variable, _) in std::env::vars_os() {
        if variable
            .to_str()
            .is_some_and(|v| v.starts_with(domain::config::ENV_PREFIX))
        {
            command.env_remove(variable);
        }
    }
    command
        .env("BILET_NODE", node)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("start {} (set BILET_BIN)", bin.display()))
}

/// Waits up to a minute for `{base}/health/ready` to answer 2xx.
pub async fn ready(client: &reqwest::Client, base: &str) -> anyhow::Result<()> {
    for _ in 0..600 {
        if client
            .get(format!("{base}/health/ready"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("{base}/health/ready did not answer 2xx within a minute")
}

/// An access token signed with `SECRET` (no sign-in, no bcrypt): the gateway takes it like
/// one identity issued.
pub fn token(user: UserId, tenant: Option<TenantId>, roles: Vec<Role>) -> anyhow::Result<String> {
    Ok(http::tokens::Tokens::new(SECRET)
        .issue(user, None, tenant, roles, None, 0, Utc::now())?
        .token)
}

/// POSTs `body` with `token`; the answer's JSON, or an error naming the status. A 503 is
/// tried again after the wait it names, with the same idempotency key (so once at most): a
/// cluster just started answers it while the gateway has not yet learnt an event's owner.
pub async fn post(
    client: &reqwest::Client,
    url: String,
    token: &str,
    body: serde_json::Value,
) -> anyhow::Result<serde_json::Value> {
    let key = Uuid::now_v7().to_string();
    for _ in 0..10 {
        let r = client
            .post(&url)
            .bearer_auth(token)
            .header("X-Idempotency-Key", &key)
            .json(&body)
            .send()
            .await?;
        let status = r.status();
        let answer: serde_json::Value = r.json().await.unwrap_or_default();
        if status == reqwest::StatusCode::SERVICE_UNAVAILABLE {
            let wait = answer["retryAfter"].as_u64().unwrap_or(1).clamp(1, 5);
            tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
            continue;
        }
        anyhow::ensure!(status.is_success(), "{url}: {status} {answer}");
        return Ok(answer);
    }
    anyhow::bail!("{url}: still 503 after 10 tries")
}

/// The `id` of an answer.
pub fn id_of(body: &serde_json::Value) -> anyhow::Result<Uuid> {
    Ok(body["id"].as_str().unwrap_or_default().parse()?)
}

/// The ticket types a burst sells out, (event, ticket type) of each published event, and, if
/// asked for, a spare one-seat type on the first event.
pub struct Sales {
    /// (event, ticket type), one per event, in the order the events were made.
    pub types: Vec<(Uuid, Uuid)>,
    /// A one-seat type of the first event, kept out of the burst.
    pub spare: Option<Uuid>,
}

impl Sales {
    /// The ticket types sold in the burst.
    pub fn type_ids(&self) -> Vec<Uuid> {
        self.types.iter().map(|(_, t)| *t).collect()
    }
}

/// Adds a free ticket type of `quantity` seats to `event`.
pub async fn ticket_type(
    client: &reqwest::Client,
    gateway: &str,
    organizer: &str,
    event: Uuid,
    name: &str,
    quantity: usize,
) -> anyhow::Result<Uuid> {
    let body = post(
        client,
        format!("{gateway}/api/v1/events/{event}/ticket-types"),
        organizer,
        serde_json::json!({"name": name, "quantity": quantity}),
    )
    .await?;
    id_of(&body)
}

/// `events` published events of one new organization, made through the gateway with an
/// owner's token, each with one free ticket type of `seats` seats (and, with `spare`, a
/// one-seat type more on the first).
pub async fn sales(
    client: &reqwest::Client,
    gateway: &str,
    events: usize,
    seats: usize,
    spare: bool,
) -> anyhow::Result<Sales> {
    let organizer = token(UserId::new(), Some(TenantId::new()), vec![Role::Owner])?;
    let starts = (Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let mut sales = Sales {
        types: Vec::with_capacity(events),
        spare: None,
    };
    for i in 0..events {
        let event = post(
            client,
            format!("{gateway}/api/v1/events"),
            &organizer,
            serde_json::json!({"title": format!("Sale {i}"), "startsAt": starts}),
        )
        .await?;
        let event = id_of(&event)?;
        let free = ticket_type(client, gateway, &organizer, event, "Free", seats).await?;
        if i == 0 && spare {
            sales.spare = Some(ticket_type(client, gateway, &organizer, event, "Spare", 1).await?);
        }
        post(
            client,
            format!("{gateway}/api/v1/events/{event}/publish"),
            &organizer,
            serde_json::json!({}),
        )
        .await?;
        sales.types.push((event, free));
    }
    Ok(sales)
}

/// User and system CPU ticks of a process (`self` or a pid), all its threads included.
pub fn cpu_ticks(pid: &str) -> Option<u64> {
    ticks(pid, false)
}

/// A process's user and system ticks, plus, with `children`, those of its children that
/// exited and were waited for.
fn ticks(pid: &str, children: bool) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) may hold spaces and parentheses: count from after its last ')',
    // where field 3 starts, so utime (14), stime (15), cutime (16) and cstime (17) are the
    // 12th to the 15th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let last = if children { 14 } else { 12 };
    (11..=last)
        .map(|i| fields.get(i)?.parse::<u64>().ok())
        .sum()
}

/// CPU ticks of every PostgreSQL process on this machine (postmaster, backends, background
/// workers): the database's share of the work, whichever connection did it. A backend that
/// exits between two samples (the node's pool replaces its connections every
/// `database.connection_lifetime_ms`) is counted through the postmaster, which waits for it;
/// on another machine this reads 0.
pub fn postgres_ticks() -> u64 {
    PostgresProcesses::sample().total()
}

/// PostgreSQL's processes at one moment, for `postgres_ticks` split by what each process is.
#[derive(Clone, Debug, Default)]
pub struct PostgresProcesses {
    /// Each live process (by pid): what it is ("client backends", "autovacuum workers", the
    /// background processes by name) and its ticks so far.
    live: std::collections::BTreeMap<String, (String, u64)>,
    /// The postmaster's own ticks and those of the children it waited for.
    postmaster: u64,
}

/// The part of `since` spent by processes that exited in between, and by the postmaster.
pub const EXITED: &str = "postmaster and processes that exited";

impl PostgresProcesses {
    pub fn sample() -> PostgresProcesses {
        let mut sample = PostgresProcesses::default();
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return sample;
        };
        for pid in dir
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|comm| comm.trim_end() == "postgres")
            })
        {
            let title = std::fs::read_to_string(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            match postgres_role(&title) {
                None => sample.postmaster += ticks(&pid, true).unwrap_or(0),
                Some(role) => {
                    if let Some(ticks) = ticks(&pid, false) {
                        sample.live.insert(pid, (role, ticks));
                    }
                }
            }
        }
        sample
    }

    /// Every process's ticks, the postmaster's count of those that exited included.
    pub fn total(&self) -> u64 {
        self.postmaster + self.live.values().map(|(_, ticks)| ticks).sum::<u64>()
    }

    /// Ticks from `before` to this sample by what each process is. A process that exited in
    /// between reaches the postmaster's count with every tick of its life, so the ticks it
    /// had at `before` come off that count (a pool's connection replaced during a burst is
    /// otherwise charged with everything it did before it).
    pub fn since(&self, before: &PostgresProcesses) -> std::collections::BTreeMap<String, u64> {
        let mut roles = std::collections::BTreeMap::new();
        for (pid, (role, ticks)) in &self.live {
            let was = match before.live.get(pid) {
                Some((_, was)) => *was,
                None => 0,
            };
            *roles.entry(role.clone()).or_insert(0) += ticks.saturating_sub(was);
        }
        let before_exited: u64 = before
            .live
            .iter()
            .filter(|(pid, _)| !self.live.contains_key(*pid))
            .map(|(_, (_, ticks))| ticks)
            .sum();
        roles.insert(
            EXITED.to_string(),
            self.postmaster
                .saturating_sub(before.postmaster)
                .saturating_sub(before_exited),
        );
        roles
    }
}

/// What a PostgreSQL process is, by its title ("postgres: 15/main: checkpointer"); `None`
/// for the postmaster (its command line).
fn postgres_role(title: &str) -> Option<String> {
    let rest = title.strip_prefix("postgres: ")?;
    // After the cluster's name (which Debian puts first), or the title itself.
    let what = rest.split_once(": ").map_or(rest, |(_, what)| what);
    const BACKGROUND: [&str; 7] = [
        "checkpointer",
        "background writer",
        "walwriter",
        "autovacuum launcher",
        "logical replication launcher",
        "archiver",
        "stats collector",
    ];
    Some(if what.starts_with("autovacuum worker") {
        "autovacuum workers".into()
    } else if let Some(name) = BACKGROUND.iter().find(|name| what.starts_with(*name)) {
        (*name).into()
    } else {
        "client backends".into()
    })
}

/// Clock ticks per second of the /proc figures (`getconf CLK_TCK`, 100 if that fails).
pub fn clock_ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|ticks| ticks.trim().parse().ok())
        .unwrap_or(100.0)
}

/// What the database holds for the sold-out ticket types after the burst.
#[derive(Debug, Default)]
pub struct Audit {
    /// Registrations in an active status.
    pub rows: i64,
    /// sold_count + reserved_count.
    pub counted: i64,
    /// The seats: every one should be taken, none twice.
    pub seats: i64,
    /// Active registrations beyond a type's seats, summed.
    pub oversold: i64,
    /// Types with fewer active registrations than seats.
    pub not_sold_out: i64,
    /// Types whose sold_count + reserved_count differs from their active registrations.
    pub miscounted: i64,
    /// 201 answers without their registration, and registrations without a 201 answer.
    pub lost: i64,
}

impl Audit {
    /// Everything that should be zero, summed.
    pub fn faults(&self) -> i64 {
        self.oversold + self.not_sold_out + self.miscounted + self.lost
    }
}

/// Checks each of `types` (active registrations equal to the seats, none beyond, counters
/// equal to the rows) and that the `created` 201 answers, whose registration ids are `ids`,
/// match the registrations of those types one to one.
pub async fn audit(
    db: &tokio_postgres::Client,
    types: &[Uuid],
    created: usize,
    ids: &[Uuid],
) -> anyhow::Result<Audit> {
    let mut audit = Audit::default();
    let per_type = db
        .query(
            "SELECT t.quantity::int8, (t.sold_count + t.reserved_count)::int8,
                    (SELECT count(*) FROM event_service.registrations r
                     WHERE r.ticket_type_id = t.id
                       AND r.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'))
             FROM event_service.ticket_types t WHERE t.id = ANY($1)",
            &[&types],
        )
        .await?;
    for row in per_type {
        let (seats, counted, rows): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        audit.seats += seats;
        audit.counted += counted;
        audit.rows += rows;
        audit.oversold += (rows - seats).max(0);
        audit.not_sold_out += i64::from(rows < seats);
        audit.miscounted += i64::from(counted != rows);
    }
    // Rows in any status: a registration without a 201 is lost to its buyer even if cancelled.
    let row = db
        .query_one(
            "SELECT (SELECT count(*) FROM event_service.registrations WHERE ticket_type_id = ANY($1)),
                    (SELECT count(*) FROM event_service.registrations
                     WHERE id = ANY($2) AND ticket_type_id = ANY($1))",
            &[&types, &ids],
        )
        .await?;
    let (all, answered): (i64, i64) = (row.get(0), row.get(1));
    audit.lost = (created as i64 - answered) + (all - answered);
    Ok(audit)
}
