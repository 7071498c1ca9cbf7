//! A waiting room holding a crowd: VISITORS places in one event's room (written straight to the
//! database, as a day of joins would leave them), then wrk, with `bench/wrk/queue.lua`, reading
//! places with their passes (`GET /api/v1/events/{id}/queue`, `X-Queue-Place`) through the
//! gateway of one `bilet serve` running every service, for DURATION seconds, cycling through
//! READERS of the visitors. Prints what a waiting visitor costs (PostgreSQL's bytes of the
//! places table and its indexes per place; the node's memory before and after the reads),
//! reads per second, wrk's latency percentiles, and answers other than 200.
//!
//! `cargo build --release -p bilet --bin bilet -p bench --bin queue && target/release/queue`
//! (DATABASE_URL: an owner connection; the database `bilet_bench_queue` is recreated).
//! VISITORS (1,000,000), READERS (10,000), CONNECTIONS (256), THREADS (2), DURATION (30) and
//! TIMEOUT (10) tune it; BILET_BIN and WRK name the programs.

use anyhow::Context;
use bench::node::Node;
use bench::sale::{
    SECRET, admin_url, bilet_bin, env_or, fresh_database, id_of, post, ticket_type, token,
};
use chrono::{DateTime, Utc};
use domain::events::waiting_room::pass::{self, Pass};
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Command, Stdio};
use uuid::Uuid;

const DATABASE: &str = "bilet_bench_queue";
/// What the script's `done` prints before its figures, as JSON.
const RESULT: &str = "queue-result ";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let visitors = env_or("VISITORS", 1_000_000);
    let readers = env_or("READERS", 10_000).min(visitors).max(1);
    let connections = env_or("CONNECTIONS", 256);
    let threads = env_or("THREADS", 2);
    let duration = env_or("DURATION", 30);
    let timeout = env_or("TIMEOUT", 10);
    let wrk = std::env::var("WRK").unwrap_or_else(|_| "wrk".into());
    let script = std::env::var("WRK_SCRIPT").map_or_else(
        |_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("wrk/queue.lua"),
        std::path::PathBuf::from,
    );

    let db_url = fresh_database(&admin_url(), DATABASE).await?;
    let mut node = Node::start(&bilet_bin()?, &db_url, "queue")?;
    let client = reqwest::Client::new();
    node.ready(&client).await?;
    let gateway = node.gateway.clone();

    // One event on sale, its room open since an hour ago at one admission a minute: every
    // visitor read stays in line, which is what a crowd's refreshing costs.
    let tenant = TenantId::new();
    let organizer = token(UserId::new(), Some(tenant), vec![Role::Owner])?;
    let starts = (Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let event = id_of(
        &post(
            &client,
            format!("{gateway}/api/v1/events"),
            &organizer,
            serde_json::json!({"title": "Crowd", "startsAt": starts}),
        )
        .await?,
    )?;
    ticket_type(&client, &gateway, &organizer, event, "Stalls", 100_000).await?;
    post(
        &client,
        format!("{gateway}/api/v1/events/{event}/publish"),
        &organizer,
        serde_json::json!({}),
    )
    .await?;
    let on_sale_at = Utc::now() - chrono::Duration::hours(1);
    let opened = client
        .put(format!("{gateway}/api/v1/events/{event}/waiting-room"))
        .bearer_auth(&organizer)
        .json(&serde_json::json!({"onSaleAt": on_sale_at, "admitPerMinute": 1}))
        .send()
        .await?;
    anyhow::ensure!(
        opened.status().is_success(),
        "opening the room: {}",
        opened.status()
    );

    // The crowd, as its joins would have left it.
    let (db, connection) = tokio_postgres::connect(&db_url, tokio_postgres::NoTls).await?;
    tokio::spawn(connection);
    let seeded = std::time::Instant::now();
    db.execute(
        "INSERT INTO event_service.waiting_room_places (event_id, user_id, tenant_id, ordinal, early, joined_at)
         SELECT $1, gen_random_uuid(), $2, g, false, $3 FROM generate_series(1, $4::bigint) AS g",
        &[&event, &tenant.as_uuid(), &(on_sale_at + chrono::Duration::seconds(1)), &(visitors as i64)],
    )
    .await?;
    db.execute(
        "UPDATE event_service.waiting_rooms SET arrivals = $2 WHERE event_id = $1",
        &[&event, &(visitors as i64)],
    )
    .await?;
    db.batch_execute("ANALYZE event_service.waiting_room_places")
        .await?;
    let seeded = seeded.elapsed();
    let bytes: i64 = db
        .query_one(
            "SELECT pg_total_relation_size('event_service.waiting_room_places')",
            &[],
        )
        .await?
        .get(0);

    // READERS visitors spread over the line, each with a token and a pass.
    let step = (visitors / readers).max(1) as i64;
    let rows = db
        .query(
            "SELECT user_id, ordinal, joined_at FROM event_service.waiting_room_places
             WHERE event_id = $1 AND ordinal % $2 = 0 ORDER BY ordinal LIMIT $3",
            &[&event, &step, &(readers as i64)],
        )
        .await?;
    let key = pass::key(SECRET.as_bytes());
    let file = node.dir.join("visitors.tsv");
    {
        let mut out = BufWriter::new(std::fs::File::create(&file)?);
        for row in &rows {
            let user: Uuid = row.get(0);
            let joined_at: DateTime<Utc> = row.get(2);
            let said = Pass {
                ordinal: row.get(1),
                joined_at,
                undrawn: false,
            };
            writeln!(
                out,
                "/api/v1/events/{event}/queue\t{}\t{}",
                token(UserId(user), None, vec![])?,
                pass::sign(&key, event, user, &said)
            )?;
        }
    }

    let pid = node.child.id().to_string();
    let rss_before = rss_kib(&pid);
    let mut child = Command::new(&wrk)
        .arg(format!("-t{threads}"))
        .arg(format!("-c{connections}"))
        .arg(format!("-d{duration}s"))
        .arg(format!("--timeout={timeout}s"))
        .arg("--latency")
        .arg("-s")
        .arg(&script)
        .arg(&gateway)
        .arg("--")
        .arg(&file)
        .arg(threads.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("start {wrk} (set WRK)"))?;
    let stdout = child.stdout.take().context("no output of wrk")?;
    let mut report = String::new();
    for line in BufReader::new(stdout).lines() {
        report.push_str(&line?);
        report.push('\n');
    }
    let status = child.wait()?;
    anyhow::ensure!(status.success(), "wrk failed ({status}):\n{report}");
    let rss_after = rss_kib(&pid);
    let result: serde_json::Value = serde_json::from_str(
        report
            .lines()
            .find_map(|l| l.strip_prefix(RESULT))
            .with_context(|| format!("wrk printed no `{RESULT}` line:\n{report}"))?,
    )?;
    let ok = result["ok"].as_u64().unwrap_or(0);
    let seconds = result["durationS"].as_f64().unwrap_or(1.0).max(0.001);

    println!(
        "| visitors held | bytes per visitor (PostgreSQL) | readers | reads/s | p50 ms | p99 ms | not 200 | node RSS before → after (MiB) | seeded in |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {visitors} | {:.0} | {} | {:.0} | {} | {} | {} | {:.0} → {:.0} | {:.1} s |",
        bytes as f64 / visitors as f64,
        rows.len(),
        ok as f64 / seconds,
        result["p50Ms"],
        result["p99Ms"],
        result["other"].as_u64().unwrap_or(0)
            + ["connectErrors", "readErrors", "writeErrors", "timeouts"]
                .iter()
                .map(|k| result[k].as_u64().unwrap_or(0))
                .sum::<u64>(),
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        seeded.as_secs_f64()
    );
    Ok(())
}

/// The resident memory of a process, in KiB (0 when it cannot be read).
fn rss_kib(pid: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}
