//! A waiting room holding a crowd: VISITORS places in one event's room (written straight to the
//! database, as a day of joins would leave them), then wrk, with `bench/wrk/queue.lua`, reading
//! places with their passes (`GET /api/v1/events/{id}/queue`, `X-Queue-Place`) through the
//! gateway of one `bilet serve` running every service, for DURATION seconds, cycling through
//! READERS of the visitors. Prints what a waiting visitor costs (PostgreSQL's bytes of the
//! places table and its indexes per place; the node's memory before and after the reads),
//! reads per second, wrk's latency percentiles, and answers other than 200.
//!
//! With SALE seats (30,000; 0 for the reads alone), the crowd reads while a burst is sold
//! through admissions: the first SALE + SALE/3 places of the line are the buyers, let in as the
//! admitter would have (the room's cursor past them), each sending one registration with the
//! admission the node signs for them (`X-Admission`), by a second wrk (`register.lua`)
//! started SALE_AFTER seconds (10) into the reads. Then the reads are counted over the tenths
//! of a second in which the sale was answered, the sale's own rate is printed beside them, and
//! the ticket type is audited (sold exactly out, nothing lost).
//!
//! `cargo build --release -p bilet --bin bilet -p bench --bin queue && target/release/queue`
//! (DATABASE_URL: an owner connection; the database `bilet_bench_queue` is recreated).
//! VISITORS (1,000,000), READERS (10,000), CONNECTIONS (256, each wrk), THREADS (2, each wrk),
//! DURATION (45 with a sale, else 30) and TIMEOUT (10) tune it; BILET_BIN and WRK name the programs.

use anyhow::Context;
use bench::node::Node;
use bench::sale::{
    SECRET, admin_url, audit, bilet_bin, env_or, fresh_database, id_of, post, ticket_type, token,
};
use bench::wrk::{
    REGISTER_RESULT, REGISTER_THREAD_DONE, REGISTER_TIMELINE, Wrk, answered_ids, printed, tenths,
};
use chrono::{DateTime, Utc};
use domain::events::waiting_room::admission;
use domain::events::waiting_room::pass::{self, Pass};
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, Command};
use uuid::Uuid;

const DATABASE: &str = "bilet_bench_queue";
/// What `queue.lua`'s `done` prints before its figures, as JSON.
const RESULT: &str = "queue-result ";
/// The prefix of `queue.lua`'s reads a tenth of a second.
const TIMELINE: &str = "queue-timeline ";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let visitors = env_or("VISITORS", 1_000_000);
    let sale = env_or("SALE", 30_000);
    let buyers = sale + sale / 3;
    anyhow::ensure!(
        buyers < visitors,
        "SALE + SALE/3 buyers must leave visitors waiting behind them"
    );
    let readers = env_or("READERS", 10_000).min(visitors - buyers).max(1);
    let sale_after = env_or("SALE_AFTER", 10);
    let reads = Wrk {
        threads: env_or("THREADS", 2),
        connections: env_or("CONNECTIONS", 256),
        duration: env_or("DURATION", if sale > 0 { 45 } else { 30 }),
        timeout: env_or("TIMEOUT", 10),
        ..Wrk::with_script("queue.lua", true)
    };
    let selling = Wrk {
        script: Wrk::with_script("register.lua", false).script,
        ..reads.clone()
    };

    let db_url = fresh_database(&admin_url(), DATABASE).await?;
    let mut node = Node::start(&bilet_bin()?, &db_url, "queue")?;
    let client = reqwest::Client::new();
    node.ready(&client).await?;
    let gateway = node.gateway.clone();

    // One event on sale, its room open since an hour ago at one admission a minute: every
    // reader stays in line, which is what a crowd's refreshing costs.
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
    let seats = if sale > 0 { sale } else { 100_000 };
    let stalls = ticket_type(&client, &gateway, &organizer, event, "Stalls", seats).await?;
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

    // The crowd, as its joins would have left it, the buyers at its head let in.
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
        "UPDATE event_service.waiting_rooms
            SET arrivals = $2, admitted_through = $3, admitted_count = $3, admitted_until = now()
          WHERE event_id = $1",
        &[&event, &(visitors as i64), &(buyers as i64)],
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

    let file = node.dir.join("visitors.tsv");
    let readers = write_readers(&db, &file, event, buyers, visitors, readers).await?;
    let sold = node.dir.join("buyers.tsv");
    write_buyers(&db, &sold, event, stalls, buyers).await?;

    let pid = node.child.id().to_string();
    let rss_before = rss_kib(&pid);
    let reading = reads.spawn(&gateway, &file)?;
    let reading = std::thread::spawn(move || report_of(reading, None));
    let selling = if buyers > 0 {
        tokio::time::sleep(std::time::Duration::from_secs(sale_after as u64)).await;
        let child = selling.spawn(&gateway, &sold)?;
        let threads = selling.threads;
        Some(tokio::task::spawn_blocking(move || {
            report_of(child, Some(threads))
        }))
    } else {
        None
    };
    let selling = match selling {
        Some(task) => Some(task.await??),
        None => None,
    };
    let reading = reading
        .join()
        .map_err(|_| anyhow::anyhow!("the reads' thread panicked"))??;
    let rss_after = rss_kib(&pid);

    let result = printed(&reading, RESULT)?
        .with_context(|| format!("wrk printed no `{RESULT}` line:\n{reading}"))?;
    let ok = result["ok"].as_u64().unwrap_or(0);
    let seconds = result["durationS"].as_f64().unwrap_or(1.0).max(0.001);
    let not_ok = result["other"].as_u64().unwrap_or(0)
        + ["connectErrors", "readErrors", "writeErrors", "timeouts"]
            .iter()
            .map(|k| result[k].as_u64().unwrap_or(0))
            .sum::<u64>();
    println!(
        "| visitors held | bytes per visitor (PostgreSQL) | readers | reads/s | p50 ms | p99 ms | not 200 | node RSS before → after (MiB) | seeded in |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {visitors} | {:.0} | {readers} | {:.0} | {} | {} | {not_ok} | {:.0} → {:.0} | {:.1} s |",
        bytes as f64 / visitors as f64,
        ok as f64 / seconds,
        result["p50Ms"],
        result["p99Ms"],
        rss_before as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        seeded.as_secs_f64()
    );

    let Some(selling) = selling else {
        return Ok(());
    };
    let sale_result = printed(&selling, REGISTER_RESULT)?
        .with_context(|| format!("wrk printed no `{REGISTER_RESULT}` line:\n{selling}"))?;
    let count = |name: &str| sale_result[name].as_u64().unwrap_or(0) as usize;
    let created = count("created");
    let elapsed = sale_result["elapsedS"]
        .as_f64()
        .filter(|e| *e > 0.0)
        .unwrap_or(1.0);
    let ids = answered_ids(&sold, reads.threads)?;
    let audit = audit(&db, &[stalls], created, &ids).await?;
    let during = Overlap::of(
        tenths(printed(&reading, TIMELINE)?.as_ref()),
        tenths(printed(&selling, REGISTER_TIMELINE)?.as_ref()),
    );
    println!(
        "\n| seats | buyers | sale's successes/s | sale p50 ms | sale p99 ms | sold out | errors | oversold | lost | reads/s during the sale | reads/s before it |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    println!(
        "| {sale} | {buyers} | {:.0} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} |",
        created as f64 / elapsed,
        sale_result["p50Ms"],
        sale_result["p99Ms"],
        count("soldOut"),
        count("other") + buyers.saturating_sub(count("answered")),
        audit.oversold,
        audit.lost,
        during.during,
        during.before,
    );
    println!(
        "\nthe sale was answered over {:.1} s; every tenth of a second of it had {} to {} reads",
        during.seconds, during.fewest, during.most
    );
    anyhow::ensure!(
        during.covered,
        "the reads ended before the sale did: raise DURATION"
    );
    anyhow::ensure!(
        audit.faults() == 0,
        "the type was not sold exactly out with every registration answered: {audit:?}"
    );
    Ok(())
}

/// The reads counted over the tenths of a second in which the sale was answered.
struct Overlap {
    /// Reads a second over the sale's tenths (its first and last, partial, left out).
    during: f64,
    /// Reads a second from the reads' second second to the sale's first answer.
    before: f64,
    /// The sale's tenths counted, in seconds.
    seconds: f64,
    fewest: u64,
    most: u64,
    /// Whether the reads ran until the sale's last answer.
    covered: bool,
}

impl Overlap {
    fn of((reads_from, reads): (f64, Vec<u64>), (sale_from, sale): (f64, Vec<u64>)) -> Overlap {
        let tenth = |from: f64| (from * 10.0).round() as i64;
        let at = |t: i64| {
            usize::try_from(t - tenth(reads_from))
                .ok()
                .and_then(|i| reads.get(i).copied())
                .unwrap_or(0)
        };
        let sale_start = tenth(sale_from);
        let window: Vec<u64> = (1..sale.len().saturating_sub(1))
            .map(|i| at(sale_start + i as i64))
            .collect();
        let before: Vec<u64> = (tenth(reads_from) + 10..sale_start).map(at).collect();
        let per_second =
            |tenths: &[u64]| tenths.iter().sum::<u64>() as f64 * 10.0 / tenths.len().max(1) as f64;
        Overlap {
            during: per_second(&window),
            before: per_second(&before),
            seconds: window.len() as f64 / 10.0,
            fewest: window.iter().copied().min().unwrap_or(0),
            most: window.iter().copied().max().unwrap_or(0),
            covered: tenth(reads_from) + reads.len() as i64 >= sale_start + sale.len() as i64,
        }
    }
}

/// READERS visitors spread over the line behind the buyers, each with a token and a pass, one
/// a line of `file` as `queue.lua` reads them; returns how many.
async fn write_readers(
    db: &tokio_postgres::Client,
    file: &Path,
    event: Uuid,
    buyers: usize,
    visitors: usize,
    readers: usize,
) -> anyhow::Result<usize> {
    let step = ((visitors - buyers) / readers).max(1) as i64;
    let rows = db
        .query(
            "SELECT user_id, ordinal, joined_at FROM event_service.waiting_room_places
             WHERE event_id = $1 AND ordinal > $2 AND ordinal % $3 = 0 ORDER BY ordinal LIMIT $4",
            &[&event, &(buyers as i64), &step, &(readers as i64)],
        )
        .await?;
    let key = pass::key(SECRET.as_bytes());
    let mut out = BufWriter::new(std::fs::File::create(file)?);
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
    out.flush()?;
    Ok(rows.len())
}

/// The buyers (the first `buyers` places), each with a token, a fresh idempotency key, a
/// registration for `ticket_type` and the admission the node would sign for them, one a line
/// of `file` as `register.lua` reads them.
async fn write_buyers(
    db: &tokio_postgres::Client,
    file: &Path,
    event: Uuid,
    ticket_type: Uuid,
    buyers: usize,
) -> anyhow::Result<()> {
    let rows = db
        .query(
            "SELECT user_id FROM event_service.waiting_room_places
             WHERE event_id = $1 AND ordinal <= $2 ORDER BY ordinal",
            &[&event, &(buyers as i64)],
        )
        .await?;
    let key = admission::key(SECRET.as_bytes());
    let until = Utc::now() + chrono::Duration::minutes(30);
    let mut out = BufWriter::new(std::fs::File::create(file)?);
    for row in &rows {
        let user: Uuid = row.get(0);
        writeln!(
            out,
            "/api/v1/events/{event}/registrations\t{}\t{}\t{{\"ticketTypeId\":\"{ticket_type}\"}}\t{}",
            token(UserId(user), None, vec![])?,
            Uuid::new_v4(),
            admission::sign(&key, event, user, until)
        )?;
    }
    out.flush()?;
    Ok(())
}

/// Everything wrk printed. With `threads`, the run is `register.lua`'s: once each thread said
/// it had all its answers, wrk is interrupted (it then prints its report at once instead of
/// idling to the end of its duration).
fn report_of(mut child: Child, threads: Option<usize>) -> anyhow::Result<String> {
    let stdout = child.stdout.take().context("no output of wrk")?;
    let mut report = String::new();
    let mut finished = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if line.starts_with(REGISTER_THREAD_DONE) {
            finished += 1;
            if Some(finished) == threads {
                let _ = Command::new("kill")
                    .args(["-INT", &child.id().to_string()])
                    .status();
            }
            continue;
        }
        report.push_str(&line);
        report.push('\n');
    }
    let status = child.wait()?;
    anyhow::ensure!(status.success(), "wrk failed ({status}):\n{report}");
    Ok(report)
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
