//! Analytics on ClickHouse: the sustained rate at which tracked records are accepted and
//! written (through the ingest actor, and through `POST /track` over the gateway), and the
//! latency of the dashboard, funnel and organization report over 10 million rows.
//!
//! `cargo run --release -p bench --bin analytics` (DATABASE_URL: an owner connection, database
//! `bilet_bench`; CLICKHOUSE_URL, default http://127.0.0.1:8123). RECORDS, ROWS tune the run.

use analytics::figures::Period;
use analytics::ingest::Ingest;
use analytics::record::Record;
use analytics::store::Store;
use analytics::store::clickhouse::ClickHouseStore;
use anyhow::Context;
use domain::analytics::TrackType;
use domain::ids::TenantId;
use std::time::{Duration, Instant};
use uuid::Uuid;

const SOURCES: [&str; 3] = ["vk", "telegram", "direct"];

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn sql(url: &str, query: &str) -> anyhow::Result<String> {
    let response = reqwest::Client::new()
        .post(url)
        .body(query.to_string())
        .send()
        .await?;
    let status = response.status();
    let text = response.text().await?;
    anyhow::ensure!(status.is_success(), "{status}: {text}");
    Ok(text)
}

async fn count(url: &str, database: &str) -> anyhow::Result<u64> {
    Ok(sql(
        url,
        &format!("SELECT count() FROM {database}.analytics_events"),
    )
    .await?
    .trim()
    .parse()?)
}

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort();
    let i = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[i].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    bilet::logging::init(&std::env::var("RUST_LOG").unwrap_or_else(|_| "error".into()));
    let url = std::env::var("CLICKHOUSE_URL").unwrap_or_else(|_| "http://127.0.0.1:8123".into());
    let records = env_or("RECORDS", 1_000_000);
    let rows = env_or("ROWS", 10_000_000);
    let database = "bilet_bench";
    sql(&url, &format!("DROP DATABASE IF EXISTS {database}")).await?;
    let ch = ClickHouseStore::new(&url, database);
    ch.migrate().await.context("ClickHouse")?;
    let store = Store::ClickHouse(ch);
    println!(
        "analytics on ClickHouse {}\n",
        sql(&url, "SELECT version()").await?.trim()
    );

    // 1. Ingest: records handed to the batching actor as fast as one task can, until all are
    //    counted in ClickHouse.
    let ingest = Ingest::start(store.clone()).await?;
    let tenant = TenantId::new();
    let events: Vec<Uuid> = (0..10).map(|_| Uuid::now_v7()).collect();
    let now = chrono::Utc::now();
    let started = Instant::now();
    for i in 0..records {
        let kind = if i % 10 == 0 {
            TrackType::RegistrationStarted
        } else {
            TrackType::PageView
        };
        let record = Record::new(
            Uuid::now_v7(),
            tenant,
            kind,
            Some(events[i % events.len()]),
            None,
            serde_json::json!({"source": SOURCES[i % 3], "visitorId": format!("v{}", i % 50_000)}),
            now,
        );
        if !ingest.track(record) {
            anyhow::bail!("ingest stopped");
        }
        if i % 10_000 == 0 {
            // Let the actor keep up instead of queueing everything in memory first.
            tokio::task::yield_now().await;
        }
    }
    let accepted = started.elapsed();
    while count(&url, database).await? < records as u64 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let written = started.elapsed();
    ingest.stop().await;
    println!("| figure | value |\n|---|---|");
    println!("| records tracked through the ingest actor | {records} |");
    println!(
        "| accepted per second | {:.0} |",
        records as f64 / accepted.as_secs_f64()
    );
    println!(
        "| accepted and written to ClickHouse per second (sustained) | {:.0} |",
        records as f64 / written.as_secs_f64()
    );

    // 2. 10 million rows for one organization (10 events; one holds half), generated inside
    //    ClickHouse, then the queries.
    sql(&url, &format!("TRUNCATE TABLE {database}.analytics_events")).await?;
    let big = events[0];
    // BIG_EVENT_SHARE=1 puts every row in one event (the dashboard's worst case); 2 puts half.
    let share = env_or("BIG_EVENT_SHARE", 1).max(1);
    let seed_started = Instant::now();
    let types = "['page.view','page.view','page.view','page.view','registration.started','registration.completed','registration.completed','checkin.completed','payment.completed','registration.cancelled']";
    sql(
        &url,
        &format!(
            "INSERT INTO {database}.analytics_events
             SELECT toString(generateUUIDv4()), '{tenant}', {types}[(number % 10) + 1],
                    if(number % {share} = 0, '{big}', arrayElement([{others}], (number % 9) + 1)),
                    if(number % 3 = 0, '', toString(number % 200000)), '{{}}',
                    toDateTime('{start}', 'UTC') + (number % (86400 * 180)),
                    toDate(toDateTime('{start}', 'UTC') + (number % (86400 * 180))),
                    ['{t1}', '{t2}'][(number % 2) + 1], ['vk', 'telegram', 'direct', 'site'][(number % 4) + 1],
                    if(number % 5 = 0, 'RESERVED', 'CONFIRMED'), toString(number % 300000)
             FROM numbers({rows})",
            tenant = tenant.as_uuid(),
            share = share,
            others = events[1..].iter().map(|e| format!("'{e}'")).collect::<Vec<_>>().join(","),
            start = (now - chrono::Duration::days(180)).format("%Y-%m-%d %H:%M:%S"),
            t1 = Uuid::now_v7(),
            t2 = Uuid::now_v7(),
        ),
    )
    .await?;
    println!(
        "| rows seeded in ClickHouse | {} ({:.1} s) |",
        count(&url, database).await?,
        seed_started.elapsed().as_secs_f64()
    );
    let period = Period::default();
    let last_month = Period {
        from: Some(now - chrono::Duration::days(30)),
        to: Some(now),
    };
    let mut runs: Vec<(&str, Vec<Duration>)> = Vec::new();
    for (name, which) in [
        ("dashboard, the big event, all time", 0),
        ("dashboard, the big event, last 30 days", 1),
        ("funnel, the big event", 2),
        ("report, organization with 10M rows", 3),
    ] {
        let mut samples = Vec::new();
        for _ in 0..15 {
            let t = Instant::now();
            let _views = match which {
                0 => std::hint::black_box(
                    store
                        .dashboard(tenant, big, period)
                        .await?
                        .totals
                        .total_views,
                ),
                1 => std::hint::black_box(
                    store
                        .dashboard(tenant, big, last_month)
                        .await?
                        .totals
                        .total_views,
                ),
                2 => std::hint::black_box(store.funnel(tenant, big, period).await?.views),
                _ => std::hint::black_box(store.report(tenant, period).await?.totals.total_views),
            };
            samples.push(t.elapsed());
        }
        runs.push((name, samples));
    }
    for (name, mut samples) in runs {
        println!(
            "| {name}: p50 / p95 ms | {:.0} / {:.0} |",
            percentile(&mut samples, 0.5),
            percentile(&mut samples, 0.95)
        );
    }
    Ok(())
}
