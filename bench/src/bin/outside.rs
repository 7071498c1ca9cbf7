//! Registrations from an outside load generator: wrk, with `bench/wrk/register.lua` and a file
//! of pre-signed requests, against one `bilet serve` process running every service (gateway,
//! identity, events, notifications, media, analytics; in-process broker). Every ticket type is
//! sold out by more requests than it has seats; prints successes per second, wrk's latency
//! percentiles, oversold, not sold out, lost and CPU per registration of bilet and PostgreSQL.
//!
//! `cargo build --release -p bilet --bin bilet -p bench --bin outside && target/release/outside`
//! (DATABASE_URL: an owner connection; the database `bilet_bench_outside` is recreated). EVENTS,
//! REQUESTS, SEATS, CONNECTIONS, DURATION, THREADS and TIMEOUT tune it; BILET_BIN, WRK and
//! WRK_SCRIPT name the programs. HISTORY=<n> first seeds the history of `n` registrations sold
//! before (`bench::history`), so the burst meets full tables instead of empty ones. Either way
//! the database is vacuumed and analyzed before the burst (`ANALYZE=0` skips it), as
//! autovacuum would have left it in production: a server run without autovacuum never gives a
//! fresh database statistics, while the history's seed does, so the two would be planned
//! apart; and the seed's long statements keep the old versions of the rows the node rewrites
//! meanwhile (its leases), which the burst would step over. STATEMENTS=1 prints what each
//! statement cost during the burst (`pg_stat_statements`, which the server must preload).
//! ROOM=1 opens every event's waiting room before the burst and has every request show its
//! person's admission (issue 33: the sale through the room against the sale without it).
//! IDLE=<s> leaves the node quiet that long before the burst (a fresh database after as long a
//! wait as a history's seed); RESTART=1 restarts the node after the seed. Besides wrk's
//! percentiles it prints the node's own histogram of the registrations it answered, so a wait
//! inside the node can be told from one before it (the socket, the machine's run queue).

use anyhow::Context;
use bench::backlog::Backlog;
use bench::node::Node;
use bench::sale::{
    PostgresProcesses, SECRET, Sales, admin_url, audit, bilet_bin, clock_ticks_per_second,
    cpu_ticks, env_or, fresh_database, sales, shape, token,
};
use bench::wrk::{
    REGISTER_RESULT, REGISTER_THREAD_DONE, REGISTER_TIMELINE, Wrk, answered_ids, printed, tenths,
};
use domain::events::waiting_room::admission;
use domain::ids::UserId;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use uuid::Uuid;

const DATABASE: &str = "bilet_bench_outside";

/// What one run is made of.
struct Setup {
    bin: PathBuf,
    wrk: Wrk,
    admin_url: String,
    events: usize,
    requests: usize,
    seats: usize,
    /// Registrations already sold before the burst (0: a fresh database).
    history: usize,
    /// Whether the database is vacuumed and analyzed before the burst (the history's seed
    /// always analyzes what it wrote).
    analyze: bool,
    /// Whether `pg_stat_statements` (preloaded by the server) is reset as wrk starts and its
    /// costliest statements printed after.
    statements: bool,
    /// Whether every event's waiting room is open and every request shows an admission (ROOM=1).
    room: bool,
    /// Seconds the node sits idle before the burst, after the history and the analysis
    /// (IDLE): a fresh database's burst after as long a wait as a history's seed.
    idle: u64,
    /// Whether the node is restarted after the history's seed (RESTART=1): a history's burst
    /// on a node that did not sit through the seed.
    restart: bool,
}

fn setup() -> anyhow::Result<Setup> {
    let (events, requests, seats) = shape(1, 40_000, "SEATS")?;
    let threads = env_or("THREADS", 2);
    let connections = env_or("CONNECTIONS", 256);
    anyhow::ensure!(
        threads >= 1 && connections >= threads && requests >= threads,
        "THREADS must be at least 1 and at most CONNECTIONS and REQUESTS"
    );
    let wrk = Wrk {
        threads,
        connections,
        duration: env_or("DURATION", 120),
        timeout: env_or("TIMEOUT", 10),
        ..Wrk::with_script("register.lua", true)
    };
    Ok(Setup {
        bin: bilet_bin()?,
        wrk,
        admin_url: admin_url(),
        events,
        requests,
        seats,
        history: env_or("HISTORY", 0),
        analyze: env_or("ANALYZE", 1) != 0,
        statements: env_or("STATEMENTS", 0) != 0,
        room: env_or("ROOM", 0) != 0,
        idle: env_or("IDLE", 0) as u64,
        restart: env_or("RESTART", 0) != 0,
    })
}

/// One line per person, request *i* on event *i* mod events: path, a token signed for a new
/// user, a fresh idempotency key, the body, and with `room` the person's admission (valid for
/// half an hour); tab-separated, as `register.lua` reads them.
fn write_requests(path: &Path, sales: &Sales, requests: usize, room: bool) -> anyhow::Result<()> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let key = admission::key(SECRET.as_bytes());
    let until = chrono::Utc::now() + chrono::Duration::minutes(30);
    for i in 0..requests {
        let (event, ticket_type) = sales.types[i % sales.types.len()];
        let user = UserId::new();
        write!(
            out,
            "/api/v1/events/{event}/registrations\t{}\t{}\t{{\"ticketTypeId\":\"{ticket_type}\"}}",
            token(user, None, vec![])?,
            Uuid::new_v4(),
        )?;
        if room {
            write!(
                out,
                "\t{}",
                admission::sign(&key, event, user.as_uuid(), until)
            )?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// Opens a waiting room on every event of the sale, straight in the database (the sale's
/// organizer token is not kept): from then on every seat needs an admission.
async fn open_rooms(db: &tokio_postgres::Client, sales: &Sales) -> anyhow::Result<()> {
    let events: Vec<Uuid> = sales.types.iter().map(|(event, _)| *event).collect();
    db.execute(
        "INSERT INTO event_service.waiting_rooms (event_id, tenant_id, on_sale_at, admit_per_minute,
            admission_minutes, grace_minutes, created_at, updated_at)
         SELECT id, tenant_id, now() - interval '1 hour', 1000000, 30, 5, now(), now()
         FROM event_service.events WHERE id = ANY($1)",
        &[&events],
    )
    .await?;
    db.execute(
        "UPDATE event_service.events SET waiting_room = true WHERE id = ANY($1)",
        &[&events],
    )
    .await?;
    Ok(())
}

/// CPU ticks of `bilet serve`, of every PostgreSQL process, and of wrk.
#[derive(Clone, Default)]
struct Cpu {
    bilet: u64,
    postgres: u64,
    /// PostgreSQL's processes, for `postgres` by what each process is.
    postgres_processes: PostgresProcesses,
    /// `postgres` by what each process is (only in a difference of two samples).
    postgres_roles: std::collections::BTreeMap<String, u64>,
    wrk: u64,
    /// Microseconds in which every runnable task waited on the disk (`/proc/pressure/io`,
    /// "full"; 0 without pressure stall information): a WAL flush queued behind writeback.
    io_stalled_us: u64,
    /// The machine's ticks, all CPUs together, and those of them the hypervisor gave to
    /// another guest (`/proc/stat`, "steal"): on a virtual machine a run with much stolen is
    /// slower for reasons outside it, and not comparable with one without.
    machine: (u64, u64),
}

impl Cpu {
    fn sample(bilet: u32, wrk: Option<u32>) -> Cpu {
        let postgres_processes = PostgresProcesses::sample();
        Cpu {
            bilet: cpu_ticks(&bilet.to_string()).unwrap_or(0),
            postgres: postgres_processes.total(),
            postgres_processes,
            postgres_roles: Default::default(),
            wrk: wrk.and_then(|pid| cpu_ticks(&pid.to_string())).unwrap_or(0),
            io_stalled_us: io_stalled_us(),
            machine: machine_ticks(),
        }
    }

    fn since(self, before: &Cpu) -> Cpu {
        Cpu {
            bilet: self.bilet.saturating_sub(before.bilet),
            postgres: self.postgres.saturating_sub(before.postgres),
            postgres_roles: self.postgres_processes.since(&before.postgres_processes),
            postgres_processes: self.postgres_processes,
            wrk: self.wrk.saturating_sub(before.wrk),
            io_stalled_us: self.io_stalled_us.saturating_sub(before.io_stalled_us),
            machine: (
                self.machine.0.saturating_sub(before.machine.0),
                self.machine.1.saturating_sub(before.machine.1),
            ),
        }
    }
}

/// The machine's ticks (every field of `/proc/stat`'s "cpu" line but guest time, which user
/// time already counts) and its stolen ticks; (0, 0) where there is no such file.
fn machine_ticks() -> (u64, u64) {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return (0, 0);
    };
    let Some(cpu) = stat.lines().find(|l| l.starts_with("cpu ")) else {
        return (0, 0);
    };
    // user nice system idle iowait irq softirq steal guest guest_nice
    let fields: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let total = fields.iter().take(8).sum();
    (total, fields.get(7).copied().unwrap_or(0))
}

/// The "full" line's total of `/proc/pressure/io`, or 0 where the kernel keeps none.
fn io_stalled_us() -> u64 {
    std::fs::read_to_string("/proc/pressure/io")
        .ok()
        .and_then(|pressure| {
            let full = pressure.lines().find(|l| l.starts_with("full"))?;
            full.split_whitespace()
                .find_map(|field| field.strip_prefix("total="))?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// What wrk and its script reported.
struct Report {
    /// wrk's own report, as printed.
    report: String,
    /// The script's figures (see `register.lua`).
    result: serde_json::Value,
    /// Answers in each tenth of a second of the burst (empty without the script's clock), and
    /// the first tenth's Unix time.
    tenths: (f64, Vec<u64>),
    /// CPU used from just before wrk started until its last thread had its last answer.
    cpu: Cpu,
    /// The CPU counters just before wrk started.
    started: Cpu,
}

impl Report {
    fn count(&self, name: &str) -> usize {
        self.result[name].as_u64().unwrap_or(0) as usize
    }

    fn number(&self, name: &str) -> f64 {
        self.result[name].as_f64().unwrap_or(-1.0)
    }

    /// Seconds from the first request sent to the last answer, or wrk's duration when the
    /// script had no clock.
    fn elapsed(&self) -> f64 {
        match self.number("elapsedS") {
            elapsed if elapsed > 0.0 => elapsed,
            _ => self.number("durationS"),
        }
    }
}

/// Runs wrk over the requests in `file`. Once every thread has printed that it had all its
/// answers, samples the CPU and interrupts wrk (as Ctrl-C would): it then prints its report and
/// the script's figures at once instead of idling to the end of DURATION.
fn run_wrk(setup: &Setup, gateway: &str, file: &Path, bilet: u32) -> anyhow::Result<Report> {
    let before = Cpu::sample(bilet, None);
    let mut child = setup.wrk.spawn(gateway, file)?;
    let pid = child.id();
    let stdout = child.stdout.take().context("no output of wrk")?;
    let mut report = String::new();
    let mut finished = 0;
    let mut after = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line.starts_with(REGISTER_THREAD_DONE) {
            finished += 1;
            if finished == setup.wrk.threads && after.is_none() {
                after = Some(Cpu::sample(bilet, Some(pid)));
                let _ = Command::new("kill")
                    .args(["-INT", &pid.to_string()])
                    .status();
            }
            continue;
        }
        report.push_str(&line);
        report.push('\n');
    }
    // Without every thread's last answer wrk ran until DURATION: sample as it ends.
    let after = after.unwrap_or_else(|| Cpu::sample(bilet, Some(pid)));
    let status = child.wait()?;
    anyhow::ensure!(status.success(), "wrk failed ({status}):\n{report}");
    let result = printed(&report, REGISTER_RESULT)?
        .with_context(|| format!("wrk printed no `{REGISTER_RESULT}` line:\n{report}"))?;
    let tenths = tenths(printed(&report, REGISTER_TIMELINE)?.as_ref());
    let report = report
        .lines()
        .filter(|l| !l.starts_with(REGISTER_RESULT) && !l.starts_with(REGISTER_TIMELINE))
        .collect::<Vec<_>>()
        .join("\n");
    Ok(Report {
        report,
        result,
        tenths,
        cpu: after.since(&before),
        started: before,
    })
}

/// When the burst slowed: the answers of each whole second, and the tenths of a second with the
/// fewest answers (the first and the last, partial, left out), each with its time of day to find
/// in PostgreSQL's log. With every connection waiting for its answer, a tenth with few answers
/// is one whose answers were slow: where the p99 came from.
fn timeline((from, tenths): &(f64, Vec<u64>)) -> Option<String> {
    if tenths.len() < 3 {
        return None;
    }
    let seconds: Vec<String> = tenths
        .chunks(10)
        .map(|second| second.iter().sum::<u64>().to_string())
        .collect();
    let inner = &tenths[1..tenths.len() - 1];
    let mut sorted = inner.to_vec();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    let mut slowest: Vec<(usize, u64)> = inner.iter().copied().enumerate().collect();
    slowest.sort_by_key(|&(at, n)| (n, at));
    let slowest: Vec<String> = slowest
        .iter()
        .take(8)
        .map(|&(at, n)| {
            let offset = (at + 1) as f64 / 10.0;
            let time = chrono::DateTime::from_timestamp_millis(((from + offset) * 1000.0) as i64)
                .map(|t| t.format("%H:%M:%S%.3f").to_string())
                .unwrap_or_default();
            format!("{offset:.1} s ({time}): {n}")
        })
        .collect();
    Some(format!(
        "answers each second from the first answer: {}\nanswers a tenth of a second: median {median}; the fewest (from the first answer; UTC): {}",
        seconds.join(" "),
        slowest.join(", ")
    ))
}

/// The tables holding the most old row versions as the burst starts, and their sizes: what a
/// burst's statements would step over.
/// The node's own histogram of the registration route's latency (`bilet_http_request_
/// duration_seconds`), by service: how long the answers wrk waited for were inside the node
/// (the gateway's figure holds the events service's, which answers through it).
struct Latencies(Vec<(String, f64, u64)>);

impl Latencies {
    async fn sample(client: &reqwest::Client, gateway: &str) -> anyhow::Result<Latencies> {
        let text = client
            .get(format!("{gateway}/metrics"))
            .send()
            .await?
            .text()
            .await?;
        let mut buckets = Vec::new();
        for line in text.lines() {
            let Some(labels) = line.strip_prefix("bilet_http_request_duration_seconds_bucket{")
            else {
                continue;
            };
            if !labels.contains("method=\"POST\"") || !labels.contains("/registrations\"") {
                continue;
            }
            let label = |name: &str| {
                labels
                    .split(&format!("{name}=\""))
                    .nth(1)
                    .and_then(|rest| rest.split('"').next())
                    .unwrap_or("")
                    .to_string()
            };
            let le = label("le").parse::<f64>().unwrap_or(f64::INFINITY);
            let count = line
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
            buckets.push((label("service"), le, count));
        }
        Ok(Latencies(buckets))
    }

    /// What was counted since `before`, a line per service: the share of answers over each
    /// bound from 25 ms up.
    fn since(&self, before: &Latencies) -> String {
        let mut services: Vec<&str> = self.0.iter().map(|(s, _, _)| s.as_str()).collect();
        services.dedup();
        let mut out = String::from(
            "the node's own latency of the registrations it answered (its histogram):",
        );
        for service in services {
            let count = |le: f64, of: &Latencies| {
                of.0.iter()
                    .find(|(s, l, _)| s == service && *l == le)
                    .map_or(0, |(_, _, n)| *n)
            };
            let all = count(f64::INFINITY, self) - count(f64::INFINITY, before);
            out.push_str(&format!("\n  {service}: {all} answers"));
            for le in [0.025, 0.05, 0.1, 0.25] {
                let over = all - (count(le, self) - count(le, before));
                out.push_str(&format!(
                    ", over {:.0} ms {over} ({:.2}%)",
                    le * 1000.0,
                    over as f64 * 100.0 / all.max(1) as f64
                ));
            }
        }
        out
    }
}

struct DeadRows(Vec<(String, i64, i64)>);

impl DeadRows {
    async fn sample(db: &tokio_postgres::Client) -> anyhow::Result<DeadRows> {
        let rows = db
            .query(
                "SELECT schemaname || '.' || relname, n_dead_tup,
                        pg_relation_size(relid) / current_setting('block_size')::int8
                   FROM pg_stat_user_tables ORDER BY n_dead_tup DESC LIMIT 5",
                &[],
            )
            .await
            .context("read pg_stat_user_tables")?;
        Ok(DeadRows(
            rows.iter()
                .map(|row| (row.get(0), row.get(1), row.get(2)))
                .collect(),
        ))
    }
}

impl std::fmt::Display for DeadRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "old row versions as the burst starts (table: dead rows, pages):"
        )?;
        for (table, dead, pages) in &self.0 {
            write!(f, " {table}: {dead}, {pages};")?;
        }
        Ok(())
    }
}

/// How long after wrk's last answer everything downstream was done (the outbox published,
/// every delivery handled, every message settled), and the CPU from wrk's start until then.
struct Downstream {
    after: Option<Duration>,
    cpu: Cpu,
}

impl Downstream {
    /// Polls what is pending (reads of partial indexes and of the small deliveries table, so
    /// the polling costs next to nothing) for up to two minutes.
    async fn wait(db: &tokio_postgres::Client, bilet: u32, started: Cpu) -> anyhow::Result<Self> {
        let since = std::time::Instant::now();
        let limit = Duration::from_secs(120);
        let mut pending = Backlog::pending(db).await?;
        while pending && since.elapsed() < limit {
            tokio::time::sleep(Duration::from_millis(100)).await;
            pending = Backlog::pending(db).await?;
        }
        Ok(Downstream {
            after: (!pending).then(|| since.elapsed()),
            cpu: Cpu::sample(bilet, None).since(&started),
        })
    }

    fn describe(&self, per: impl Fn(u64) -> f64) -> String {
        let when = self.after.map_or_else(
            || "not done within 120 s of the last answer".to_string(),
            |d| format!("done {:.1} s after the last answer", d.as_secs_f64()),
        );
        format!(
            "downstream (outbox published, deliveries handled, messages settled): {when}; CPU from wrk's start until then, ms per registration: bilet {:.3}, PostgreSQL {:.3}",
            per(self.cpu.bilet),
            per(self.cpu.postgres)
        )
    }
}

/// What each statement cost PostgreSQL during the burst, from `pg_stat_statements`: the
/// server must preload it (`shared_preload_libraries`), which takes a restart.
struct Statements;

impl Statements {
    async fn reset(db: &tokio_postgres::Client) -> anyhow::Result<()> {
        db.batch_execute(
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()",
        )
        .await
        .context("reset pg_stat_statements (STATEMENTS=1 needs it preloaded)")
    }

    /// The statements that took the most time, per registration made.
    async fn top(db: &tokio_postgres::Client, created: usize) -> anyhow::Result<String> {
        let rows = db
            .query(
                "SELECT calls, total_exec_time + total_plan_time, shared_blks_hit + shared_blks_read,
                        rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 110)
                   FROM pg_stat_statements ORDER BY 2 DESC LIMIT 15",
                &[],
            )
            .await
            .context("read pg_stat_statements")?;
        let per = created.max(1) as f64;
        let mut out = String::from(
            "statements by time (calls; µs, buffers and rows per registration; the text):\n",
        );
        for row in rows {
            let (calls, ms, buffers, returned, text): (i64, f64, i64, i64, String) =
                (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
            out.push_str(&format!(
                "  {calls}; {:.1} µs, {:.1} buffers, {:.2} rows; {text}\n",
                ms * 1000.0 / per,
                buffers as f64 / per,
                returned as f64 / per
            ));
        }
        Ok(out)
    }
}

/// Blocks read from outside PostgreSQL's buffers and found in them, by table and by index,
/// from its statistics views: which relations a history makes the database read from the
/// operating system; and the WAL written (a page first changed since a checkpoint is written
/// whole into it).
struct BlockReads {
    relations: std::collections::HashMap<String, (i64, i64)>,
    wal_bytes: i64,
    /// Where the WAL stood when the counting began (for `pg_waldump -s`).
    wal_from: i64,
    /// Checkpoints begun, and the buffers checkpoints wrote: after each begins, the first
    /// change to every page writes the whole page into the WAL.
    checkpoints: (i64, i64),
    /// Dirty buffers written to make room, by the background writer and by backends: a
    /// working set beyond `shared_buffers`.
    evicted: (i64, i64),
}

impl BlockReads {
    async fn sample(db: &tokio_postgres::Client) -> anyhow::Result<BlockReads> {
        let rows = db
            .query(
                "SELECT schemaname || '.' || relname, coalesce(heap_blks_read, 0), coalesce(heap_blks_hit, 0)
                   FROM pg_statio_user_tables
                 UNION ALL
                 SELECT schemaname || '.' || indexrelname, coalesce(idx_blks_read, 0), coalesce(idx_blks_hit, 0)
                   FROM pg_statio_user_indexes",
                &[],
            )
            .await
            .context("read pg_statio")?;
        let wal_bytes = db
            .query_one("SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::int8", &[])
            .await
            .context("read the WAL position")?
            .get(0);
        let checkpoints = db
            .query_one(
                "SELECT checkpoints_timed + checkpoints_req, buffers_checkpoint, buffers_clean, buffers_backend
                   FROM pg_stat_bgwriter",
                &[],
            )
            .await
            .context("read pg_stat_bgwriter")?;
        Ok(BlockReads {
            checkpoints: (checkpoints.get(0), checkpoints.get(1)),
            evicted: (checkpoints.get(2), checkpoints.get(3)),
            relations: rows
                .iter()
                .map(|row| (row.get(0), (row.get(1), row.get(2))))
                .collect(),
            wal_bytes,
            wal_from: wal_bytes,
        })
    }

    fn since(&self, before: &BlockReads) -> BlockReads {
        BlockReads {
            relations: self
                .relations
                .iter()
                .map(|(name, (read, hit))| {
                    let (read0, hit0) = before.relations.get(name).copied().unwrap_or((0, 0));
                    (name.clone(), (read - read0, hit - hit0))
                })
                .collect(),
            wal_bytes: self.wal_bytes - before.wal_bytes,
            wal_from: before.wal_bytes,
            checkpoints: (
                self.checkpoints.0 - before.checkpoints.0,
                self.checkpoints.1 - before.checkpoints.1,
            ),
            evicted: (
                self.evicted.0 - before.evicted.0,
                self.evicted.1 - before.evicted.1,
            ),
        }
    }

    fn read(&self) -> i64 {
        self.relations.values().map(|(read, _)| read).sum()
    }

    fn hit(&self) -> i64 {
        self.relations.values().map(|(_, hit)| hit).sum()
    }

    /// The `n` relations read most from outside the buffers.
    fn top(&self, n: usize) -> Vec<(&str, i64, i64)> {
        self.most(n, |read, _| read)
    }

    /// The `n` relations whose blocks were visited most, in the buffers or not.
    fn busiest(&self, n: usize) -> Vec<(&str, i64, i64)> {
        self.most(n, |read, hit| read + hit)
    }

    fn most(&self, n: usize, by: impl Fn(i64, i64) -> i64) -> Vec<(&str, i64, i64)> {
        let mut all: Vec<_> = self
            .relations
            .iter()
            .map(|(name, (read, hit))| (name.as_str(), *read, *hit))
            .collect();
        all.sort_by_key(|(_, read, hit)| std::cmp::Reverse(by(*read, *hit)));
        all.truncate(n);
        all
    }
}

const TABLE: &str = "| history | events | requests | seats per event | successes/s | p50 ms | p90 ms | p99 ms | created | sold out | errors | oversold | not sold out | miscounted | lost | bilet CPU ms per registration | PostgreSQL CPU ms per registration | wrk CPU ms per registration |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let setup = setup()?;
    let db_url = fresh_database(&setup.admin_url, DATABASE).await?;
    let (db, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let durability = db
        .query_one(
            "SELECT current_setting('synchronous_commit'), current_setting('fsync')",
            &[],
        )
        .await?;
    let (synchronous_commit, fsync): (String, String) = (durability.get(0), durability.get(1));
    let mut node = Node::start(&setup.bin, &db_url, "outside")?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    node.ready(&client).await?;
    let sales = sales(&client, &node.gateway, setup.events, setup.seats, false).await?;
    if setup.history > 0 {
        // A connection of its own: the seeding changes its session's settings.
        let (seeder, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
        tokio::spawn(connection);
        bench::history::seed(&seeder, setup.history).await?;
    }
    if setup.analyze {
        // What autovacuum would have done by now: statistics of the sale's events and types,
        // and the old versions of the rows the node rewrites all along (its leases, a few
        // times a second) cleared, which the seed's long statements kept alive for minutes.
        db.batch_execute("VACUUM ANALYZE")
            .await
            .context("outside: VACUUM ANALYZE")?;
    }
    if setup.restart {
        drop(node);
        node = Node::start(&setup.bin, &db_url, "outside")?;
        node.ready(&client).await?;
        // The killed node's shard leases run out before the new one can take them.
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    if setup.idle > 0 {
        tokio::time::sleep(Duration::from_secs(setup.idle)).await;
    }
    println!("{}", DeadRows::sample(&db).await?);
    // Signed last, right before the run: the tokens are valid for 15 minutes.
    let file = node.dir.join("requests.tsv");
    if setup.room {
        open_rooms(&db, &sales).await?;
    }
    write_requests(&file, &sales, setup.requests, setup.room)?;
    println!(
        "outside: {} registrations sold before (HISTORY), then {} registrations (each a new person with a pre-signed token and a fresh idempotency key) spread round-robin over {} events on sale at once, {} seats each (every type sells out), sent by wrk ({} threads, {} connections) to one `bilet serve` running every service; PostgreSQL synchronous_commit = {synchronous_commit}, fsync = {fsync}\n",
        setup.history,
        setup.requests,
        setup.events,
        setup.seats,
        setup.wrk.threads,
        setup.wrk.connections
    );
    let bilet = node.child.id();
    let reads_before = BlockReads::sample(&db).await?;
    let latencies_before = Latencies::sample(&client, &node.gateway).await?;
    if setup.statements {
        Statements::reset(&db).await?;
    }
    let wrk = tokio::task::block_in_place(|| run_wrk(&setup, &node.gateway, &file, bilet))?;
    println!("{}\n", wrk.report);
    // What the registrations set off downstream (the relay, the consumers) is theirs too: part
    // of it falls after the last answer, more of it the faster the burst was.
    let latencies = Latencies::sample(&client, &node.gateway)
        .await?
        .since(&latencies_before);
    let downstream = Downstream::wait(&db, bilet, wrk.started.clone()).await?;
    // The statistics reach the shared counters within a second of a transaction's end.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let reads = BlockReads::sample(&db).await?.since(&reads_before);
    let created = wrk.count("created");
    let ids = answered_ids(&file, setup.wrk.threads)?;
    let audit = audit(&db, &sales.type_ids(), created, &ids).await?;
    drop(node);
    let (sold_out, other, answered) = (
        wrk.count("soldOut"),
        wrk.count("other"),
        wrk.count("answered"),
    );
    // Requests without an answer (never sent, or their connection broke) are errors too.
    let unanswered = setup.requests.saturating_sub(answered);
    let ticks_per_second = clock_ticks_per_second();
    let per = |ticks: u64| ticks as f64 * 1000.0 / ticks_per_second / created.max(1) as f64;
    println!("{TABLE}");
    println!(
        "| {} | {} | {} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {created} | {sold_out} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} |",
        setup.history,
        setup.events,
        setup.requests,
        setup.seats,
        created as f64 / wrk.elapsed(),
        wrk.number("p50Ms"),
        wrk.number("p90Ms"),
        wrk.number("p99Ms"),
        other + unanswered,
        audit.oversold,
        audit.not_sold_out,
        audit.miscounted,
        audit.lost,
        per(wrk.cpu.bilet),
        per(wrk.cpu.postgres),
        per(wrk.cpu.wrk),
    );
    println!(
        "\nfirst request to last answer {:.3} s (wrk's duration {:.3} s); answers: {answered} of {} requests ({unanswered} unanswered); active registrations {}, sold+reserved {}, seats {}; wrk socket errors: connect {}, read {}, write {}, over the {} s timeout (left out of the percentiles) {}; max latency {:.2} ms",
        wrk.elapsed(),
        wrk.number("durationS"),
        setup.requests,
        audit.rows,
        audit.counted,
        audit.seats,
        wrk.count("connectErrors"),
        wrk.count("readErrors"),
        wrk.count("writeErrors"),
        setup.wrk.timeout,
        wrk.count("timeouts"),
        wrk.number("maxMs"),
    );
    println!(
        "every runnable task waited on the disk for {:.0} ms of wrk's run (pressure stall information, io full)",
        wrk.cpu.io_stalled_us as f64 / 1000.0
    );
    let (machine, stolen) = wrk.cpu.machine;
    println!(
        "stolen by the hypervisor: {:.1}% of the machine's CPU time over wrk's run (/proc/stat)",
        100.0 * stolen as f64 / machine.max(1) as f64
    );
    println!(
        "PostgreSQL's CPU over wrk's run by process, ms per registration: {}",
        wrk.cpu
            .postgres_roles
            .iter()
            .filter(|(_, ticks)| **ticks > 0)
            .map(|(role, ticks)| format!("{role} {:.3}", per(*ticks)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("{latencies}");
    if let Some(timeline) = timeline(&wrk.tenths) {
        println!("\n{timeline}");
    }
    println!("\n{}", downstream.describe(per));
    let lsn = |at: i64| format!("{:X}/{:X}", at >> 32, at & 0xFFFF_FFFF);
    println!(
        "\nWAL written during the burst: {:.0} MB, {:.1} kB per registration (from {} to {})",
        reads.wal_bytes as f64 / 1e6,
        reads.wal_bytes as f64 / 1e3 / created.max(1) as f64,
        lsn(reads.wal_from),
        lsn(reads.wal_from + reads.wal_bytes),
    );
    println!(
        "checkpoints begun meanwhile: {}, buffers written by checkpoints: {} (PostgreSQL's log has their times); dirty buffers written to make room: {} by the background writer, {} by backends",
        reads.checkpoints.0, reads.checkpoints.1, reads.evicted.0, reads.evicted.1
    );
    println!(
        "blocks the burst read from outside PostgreSQL's buffers (of {} read in all, {} found in them), by table or index:",
        reads.read(),
        reads.hit()
    );
    for (relation, read, hit) in reads.top(10) {
        println!("  {relation}: {read} read, {hit} hit");
    }
    println!("the relations whose blocks the burst visited most:");
    for (relation, read, hit) in reads.busiest(15) {
        println!("  {relation}: {read} read, {hit} hit");
    }
    if setup.statements {
        println!("{}", Statements::top(&db, created).await?);
    }
    anyhow::ensure!(
        audit.faults() == 0,
        "not every ticket type was sold exactly out with every registration answered: see oversold, not sold out, miscounted and lost"
    );
    Ok(())
}
