//! A sustained sale rather than a burst: RATE registrations a second offered on schedule (open
//! loop: request *i* is sent at *i* / RATE seconds whether or not earlier ones have answered,
//! and its latency counts from then) for DURATION seconds to one `bilet serve` running the whole
//! platform, spread over EVENTS events with a seat for every request (the answers that are not
//! a registration are counted by status and error code). Then how long the outbox and every
//! consumer take to catch up (every announcement published and delivered, a
//! participant, a settled ticket message and an analytics record per registration), and the
//! node's memory before the load, at its peak, once drained, 10 s later, once its clients have
//! gone, a minute after that (its pools close connections idle for 30 s) and QUIET seconds after
//! that (the sale's actors stop after `ticketing.idle_seconds` without requests, 300 s).
//!
//! `cargo build --release -p bilet --bin bilet -p bench --bin sustained && target/release/sustained`
//! (DATABASE_URL: an owner connection; the database `bilet_bench_sustained` is recreated).
//! RATE (3,000), DURATION (60), EVENTS (64), DRAIN_LIMIT (300 s), QUIET (330 s); BILET_BIN names
//! `bilet`.

use bench::backlog::Backlog;
use bench::node::Node;
use bench::sale::{
    admin_url, audit, bilet_bin, clock_ticks_per_second, cpu_ticks, env_or, fresh_database,
    postgres_ticks, sales, token,
};
use domain::ids::UserId;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use uuid::Uuid;

const DATABASE: &str = "bilet_bench_sustained";

/// Open-loop requests in flight at most; beyond it the scheduled ones wait, their latency
/// still counting.
const IN_FLIGHT: usize = 4096;

/// The answers that were not a registration, by kind: the status and the error's `code`, or
/// what went wrong on the way (so an overload's timeouts are told from refusals).
#[derive(Default)]
struct Errors(Mutex<std::collections::BTreeMap<String, usize>>);

impl Errors {
    fn count(&self, kind: String) {
        if let Ok(mut kinds) = self.0.lock() {
            *kinds.entry(kind).or_default() += 1;
        }
    }

    /// A request that got no answer: timed out, not connected, or cut off on the way.
    fn transport(e: &reqwest::Error) -> String {
        let what = if e.is_timeout() {
            "timed out"
        } else if e.is_connect() {
            "could not connect"
        } else {
            "cut off"
        };
        format!("no answer: {what}")
    }

    fn total(&self) -> usize {
        self.0.lock().map_or(0, |kinds| kinds.values().sum())
    }

    fn by_kind(&self) -> Vec<(String, usize)> {
        self.0.lock().map_or_else(
            |_| Vec::new(),
            |kinds| kinds.iter().map(|(k, n)| (k.clone(), *n)).collect(),
        )
    }
}

/// The node's sessions open on PostgreSQL (its pools' and its own), or -1 when unreadable.
async fn node_connections(db: &tokio_postgres::Client) -> i64 {
    db.query_one(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'bilet'",
        &[],
    )
    .await
    .map_or(-1, |r| r.get(0))
}

/// Resident memory of a process, in kB (`VmRSS` of /proc/<pid>/status).
fn rss_kb(pid: u32) -> u64 {
    status_kb(pid, "VmRSS:")
}

/// A field of /proc/<pid>/status given in kB (0 when unreadable).
fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The process's largest resident mappings: (size of the mapping, resident), in MB.
fn largest_mappings(pid: u32) -> Vec<(u64, u64)> {
    let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut mappings = Vec::new();
    let mut size = 0u64;
    for line in smaps.lines() {
        let value = || {
            line.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        };
        if line.starts_with("Size:") {
            size = value().unwrap_or(0);
        } else if line.starts_with("Rss:") {
            mappings.push((size / 1024, value().unwrap_or(0) / 1024));
        }
    }
    mappings.sort_by_key(|(_, rss)| std::cmp::Reverse(*rss));
    mappings.truncate(6);
    mappings
}

/// The sockets a process holds open.
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(Result::ok)
                .filter(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"))
                })
                .count()
        })
        .unwrap_or(0)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let rate = env_or("RATE", 3000);
    let duration = env_or("DURATION", 60);
    let events = env_or("EVENTS", 64).max(1);
    let drain_limit = Duration::from_secs(env_or("DRAIN_LIMIT", 300) as u64);
    let quiet = env_or("QUIET", 330) as u64;
    let per_event = (rate * duration).div_ceil(events);
    let total = per_event * events;
    let bin = bilet_bin()?;
    let db_url = fresh_database(&admin_url(), DATABASE).await?;
    let (db, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let mut node = Node::start(&bin, &db_url, "sustained")?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(IN_FLIGHT)
        .build()?;
    node.ready(&client).await?;
    let sales = sales(&client, &node.gateway, events, per_event, false).await?;
    // Signed before the clock starts, as wrk's requests are: the generator only sends.
    let requests: Arc<Vec<(String, String, String)>> = Arc::new(
        (0..total)
            .map(|i| {
                let (event, ticket_type) = sales.types[i % events];
                Ok((
                    format!("{}/api/v1/events/{event}/registrations", node.gateway),
                    token(UserId::new(), None, vec![])?,
                    format!("{{\"ticketTypeId\":\"{ticket_type}\"}}"),
                ))
            })
            .collect::<anyhow::Result<_>>()?,
    );
    println!(
        "sustained: {rate} registrations a second offered (open loop) for {duration} s, {total} in all over {events} events of {per_event} seats (a seat for each), to one `bilet serve` running every service; then the drain of the outbox and every consumer\n"
    );
    let pid = node.child.id();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_start = rss_kb(pid);
    let anonymous_start = status_kb(pid, "RssAnon:");
    let peak = Arc::new(AtomicU64::new(rss_start));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        tokio::spawn(async move {
            while sampling.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    let ticks = clock_ticks_per_second();
    let (bilet_before, postgres_before) = (cpu_ticks(&pid.to_string()), postgres_ticks());
    let created = Arc::new(AtomicUsize::new(0));
    let ids = Arc::new(Mutex::new(Vec::with_capacity(total)));
    let errors = Arc::new(Errors::default());
    let figures = {
        let (client, requests) = (client.clone(), requests.clone());
        let (created, ids, errors) = (created.clone(), ids.clone(), errors.clone());
        bench::open_loop(total, rate as f64, IN_FLIGHT, move |i| {
            let (client, requests) = (client.clone(), requests.clone());
            let (created, ids, errors) = (created.clone(), ids.clone(), errors.clone());
            async move {
                let (url, token, body) = &requests[i];
                let answer = client
                    .post(url)
                    .bearer_auth(token)
                    .header("content-type", "application/json")
                    .header("x-idempotency-key", Uuid::new_v4().to_string())
                    .body(body.clone())
                    .send()
                    .await;
                let answer = match answer {
                    Ok(answer) => answer,
                    Err(e) => {
                        errors.count(Errors::transport(&e));
                        return false;
                    }
                };
                let status = answer.status();
                if status != reqwest::StatusCode::CREATED {
                    let body = answer.json::<serde_json::Value>().await.ok();
                    let code = body
                        .as_ref()
                        .and_then(|b| b["code"].as_str())
                        .unwrap_or("-");
                    errors.count(format!("{} {code}", status.as_u16()));
                    return false;
                }
                let Ok(body) = answer.json::<serde_json::Value>().await else {
                    errors.count("201 without a readable body".into());
                    return false;
                };
                if let Ok(id) = bench::sale::id_of(&body)
                    && let Ok(mut ids) = ids.lock()
                {
                    ids.push(id);
                }
                created.fetch_add(1, Ordering::Relaxed);
                true
            }
        })
        .await
    };
    let load_ended = Instant::now();
    let (bilet_after, postgres_after) = (cpu_ticks(&pid.to_string()), postgres_ticks());
    let rss_loaded = rss_kb(pid);
    let mut backlog = Backlog::read(&db).await?;
    let backlog_at_end = format!("{backlog:?}");
    // Once a second a look at what is pending; the whole tables are counted only when
    // nothing is, to confirm every registration went all the way.
    while !backlog.drained() && load_ended.elapsed() < drain_limit {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if !Backlog::pending(&db).await? {
            backlog = Backlog::read(&db).await?;
        }
    }
    let drained = backlog.drained().then(|| load_ended.elapsed());
    if drained.is_none() {
        backlog = Backlog::read(&db).await?;
    }
    let rss_drained = rss_kb(pid);
    tokio::time::sleep(Duration::from_secs(10)).await;
    let rss_settled = rss_kb(pid);
    let sockets_settled = sockets(pid);
    // The generator's idle keep-alive connections hold the node's per-connection buffers:
    // what the node keeps once its clients have gone is the figure that can be compared.
    drop(client);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss_alone = rss_kb(pid);
    let sockets_alone = sockets(pid);
    let mut quiet_minute = Vec::new();
    for _ in 0..12 {
        tokio::time::sleep(Duration::from_secs(5)).await;
        quiet_minute.push((
            rss_kb(pid) / 1024,
            status_kb(pid, "RssAnon:") / 1024,
            status_kb(pid, "RssFile:") / 1024,
        ));
    }
    let rss_minute = rss_kb(pid);
    let anonymous_minute = status_kb(pid, "RssAnon:");
    let mappings_minute = largest_mappings(pid);
    let connections_minute = node_connections(&db).await;
    let threads_alone = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .map(|t| t.trim().to_string())
        })
        .unwrap_or_default();
    // Then every 30 s until QUIET seconds after the minute: what stays once the actors the sale
    // started have stopped too.
    let mut quiet_after = Vec::new();
    for _ in 0..quiet.div_ceil(30) {
        tokio::time::sleep(Duration::from_secs(30)).await;
        quiet_after.push((rss_kb(pid) / 1024, status_kb(pid, "RssAnon:") / 1024));
    }
    let rss_quiet = rss_kb(pid);
    sampling.store(false, Ordering::Relaxed);
    let _ = sampler.await;
    let created = created.load(Ordering::Relaxed);
    let ids = ids.lock().map(|ids| ids.clone()).unwrap_or_default();
    let audit = audit(&db, &sales.type_ids(), created, &ids).await?;
    drop(node);

    let per = |before: Option<u64>, after: Option<u64>| match (before, after) {
        (Some(b), Some(a)) => a.saturating_sub(b) as f64 * 1000.0 / ticks / created.max(1) as f64,
        _ => -1.0,
    };
    let mb = |kb: u64| kb as f64 / 1024.0;
    println!(
        "| offered/s | seconds | successes/s | p50 ms | p95 ms | p99 ms | created | errors | oversold | not sold out | miscounted | lost | bilet CPU ms/reg | PostgreSQL CPU ms/reg | drained after s | RSS MB: start, peak, end of load, drained, +10 s, clients gone, +60 s, +60+QUIET s |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    println!(
        "| {rate} | {:.1} | {:.0} | {:.2} | {:.2} | {:.2} | {created} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {} | {:.0}, {:.0}, {:.0}, {:.0}, {:.0}, {:.0}, {:.0}, {:.0} |",
        figures.elapsed.as_secs_f64(),
        figures.per_second(),
        bench::ms(figures.p50),
        bench::ms(figures.p95),
        bench::ms(figures.p99),
        errors.total(),
        audit.oversold,
        audit.not_sold_out,
        audit.miscounted,
        audit.lost,
        per(bilet_before, bilet_after),
        per(Some(postgres_before), Some(postgres_after)),
        drained.map_or_else(
            || format!("not within {} s", drain_limit.as_secs()),
            |d| format!("{:.1}", d.as_secs_f64())
        ),
        mb(rss_start),
        mb(peak.load(Ordering::Relaxed)),
        mb(rss_loaded),
        mb(rss_drained),
        mb(rss_settled),
        mb(rss_alone),
        mb(rss_minute),
        mb(rss_quiet),
    );
    println!(
        "\nsockets the node held 10 s after the drain: {sockets_settled}; once its clients had gone: {sockets_alone} (threads then: {threads_alone}); a minute later its PostgreSQL connections: {connections_minute}, its anonymous memory (heap): {} MB (at the start: {} MB), its largest mappings (size, resident MB): {mappings_minute:?}; resident MB every 5 s of that minute (all, anonymous, of files: the program's own pages it has read since): {quiet_minute:?}; then every 30 s for {quiet} s (all, anonymous): {quiet_after:?}",
        anonymous_minute / 1024,
        anonymous_start / 1024
    );
    if errors.total() > 0 {
        println!("\nerrors by kind: {:?}", errors.by_kind());
    }
    println!("\nbacklog when the load ended: {backlog_at_end}\nbacklog at the end: {backlog:?}");
    anyhow::ensure!(
        audit.faults() == 0 && drained.is_some(),
        "a registration was lost, oversold or miscounted, or the consumers did not catch up"
    );
    Ok(())
}
