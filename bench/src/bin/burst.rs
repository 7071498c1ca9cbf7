//! A sale's first seconds: N people with tokens hit one ticket type through the gateway at
//! once. Prints successes per second, latency, oversold and lost for the ticket-type actors
//! (group commit) and, in the same run, for a baseline taking the row lock per request.
//!
//! `cargo run --release -p bench --bin burst` (DATABASE_URL: an owner connection; the
//! database `bilet_bench` is used). REQUESTS, SEATS and CONCURRENCY tune the run.

use anyhow::Context;
use bench::run;
use chrono::{Duration, Utc};
use domain::config::{Config, Service, ServiceAddr, TicketingMode};
use domain::events::lifecycle::{Action, ParticipantsVisibility};
use domain::ids::{TenantId, UserId};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use storage::events::{catalog, registrations, ticket_types};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn config(db_url: &str, mode: TicketingMode) -> Config {
    let mut config = Config::default();
    for addr in config.services.values_mut() {
        *addr = ServiceAddr {
            listen: "127.0.0.1:0".into(),
            url: "http://127.0.0.1:0".into(),
        };
    }
    config.database.url = db_url.to_string();
    config.database.pool_size = 48;
    config.auth.jwt_secret = Some(domain::config::Secret::new(
        "bench-secret-bench-secret-bench",
    ));
    config.log.filter = "error".into();
    config.gateway.user_per_minute = u32::MAX;
    config.ticketing.mode = mode;
    config.data_dir = std::env::temp_dir().join("bilet-bench");
    config
}

struct Outcome {
    figures: bench::Figures,
    created: usize,
    sold_out: usize,
    errors: usize,
    rows: i64,
    sold_count: i32,
    seats: usize,
}

async fn burst(
    db_url: &str,
    mode: TicketingMode,
    requests: usize,
    seats: usize,
    concurrency: usize,
) -> anyhow::Result<Outcome> {
    let node = bilet::node::start(config(db_url, mode))
        .await
        .context("start the node")?;
    let gateway = format!("http://{}", node.addrs[&Service::Gateway]);
    let db = node.state.db.clone();
    let (tenant, organizer) = (TenantId::new(), UserId::new());
    let now = Utc::now();
    let event = catalog::create(
        &db,
        tenant,
        organizer,
        &catalog::NewEvent {
            title: "Burst".into(),
            description: String::new(),
            slug: None,
            group_id: None,
            participants_visibility: ParticipantsVisibility::Closed,
            starts_at: now + Duration::days(30),
            ends_at: None,
            timezone: "UTC".into(),
            location_type: None,
            location_address: None,
            location_url: None,
            cover_image_id: None,
            settings: serde_json::json!({}),
        },
        now,
    )
    .await?;
    let ticket_type = ticket_types::create(
        &db,
        tenant,
        organizer,
        event.id,
        &ticket_types::TicketFields {
            name: "Free".into(),
            description: String::new(),
            price_cents: 0,
            currency: "RUB".into(),
            quantity: seats as i32,
            reservation_minutes: None,
            prepayment_percent: 100,
            sales_start: None,
            sales_end: None,
            sort_order: 0,
            is_active: true,
        },
        now,
    )
    .await?;
    catalog::transition(&db, tenant, organizer, event.id, Action::Publish, now).await?;

    // Tokens are signed directly: the benchmark is about selling, not signing in.
    let tokens: Arc<Vec<String>> = Arc::new(
        (0..requests)
            .map(|_| {
                node.state
                    .tokens
                    .issue(UserId::new(), None, None, vec![], None, 0, Utc::now())
                    .map(|t| t.token)
            })
            .collect::<Result<_, _>>()?,
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()?;
    let url = Arc::new(format!(
        "{gateway}/api/v1/events/{}/registrations",
        event.id
    ));
    let body = Arc::new(serde_json::json!({"ticketTypeId": ticket_type.id}).to_string());
    let created = Arc::new(AtomicUsize::new(0));
    let sold_out = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let figures = {
        let (created, sold_out, errors) = (created.clone(), sold_out.clone(), errors.clone());
        run(requests, concurrency, move |i| {
            let (client, url, body, tokens) =
                (client.clone(), url.clone(), body.clone(), tokens.clone());
            let (created, sold_out, errors) = (created.clone(), sold_out.clone(), errors.clone());
            async move {
                let reply = client
                    .post(url.as_str())
                    .bearer_auth(&tokens[i])
                    .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
                    .header("Content-Type", "application/json")
                    .body(body.as_str().to_string())
                    .send()
                    .await;
                match reply.map(|r| r.status().as_u16()) {
                    Ok(201) => {
                        created.fetch_add(1, Ordering::Relaxed);
                        true
                    }
                    Ok(422) => {
                        sold_out.fetch_add(1, Ordering::Relaxed);
                        false
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        false
                    }
                }
            }
        })
        .await
    };
    let (sold_count, _, rows, _) = registrations::seat_audit(&db, ticket_type.id).await?;
    node.stop().await;
    Ok(Outcome {
        figures,
        created: created.load(Ordering::Relaxed),
        sold_out: sold_out.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        rows,
        sold_count,
        seats,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    bilet::logging::init(&std::env::var("RUST_LOG").unwrap_or_else(|_| "error".into()));
    let requests = env_or("REQUESTS", 20_000);
    let seats = env_or("SEATS", 15_000);
    let concurrency = env_or("CONCURRENCY", 256);
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let db_url = match admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/bilet_bench"),
        None => admin_url.clone(),
    };
    println!(
        "burst: {requests} registrations for {seats} free seats of one ticket type, {concurrency} concurrent, through the gateway\n"
    );
    println!(
        "| ticketing | successes/s | p50 ms | p95 ms | p99 ms | created | sold out | errors | rows | sold_count | oversold | lost |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (name, mode) in [
        ("actors, group commit", TicketingMode::Actors),
        ("baseline: row lock per request", TicketingMode::Direct),
    ] {
        let o = burst(&db_url, mode, requests, seats, concurrency).await?;
        let successes_per_second = o.created as f64 / o.figures.elapsed.as_secs_f64();
        let oversold = (o.rows - o.seats as i64).max(0);
        let lost = (o.created as i64 - o.rows).abs() + (i64::from(o.sold_count) - o.rows).abs();
        println!(
            "| {name} | {successes_per_second:.0} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} | {oversold} | {lost} |",
            bench::ms(o.figures.p50),
            bench::ms(o.figures.p95),
            bench::ms(o.figures.p99),
            o.created,
            o.sold_out,
            o.errors,
            o.rows,
            o.sold_count,
        );
    }
    Ok(())
}
