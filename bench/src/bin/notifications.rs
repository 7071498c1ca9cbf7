//! Fan-out of event.cancelled to every participant: how long the consumer takes to render
//! and queue the messages, and how long the send queue takes to drain them through a fake
//! Bot API while keeping the messenger's limits (checked from the fake's own clock).
//!
//! `cargo run --release -p bench --bin notifications` (DATABASE_URL: an owner connection; the
//! database `bilet_bench_notify` is dropped and created). PARTICIPANTS (10000), RATE (30 per
//! second) and CHAT_INTERVAL_MS (1000) tune the run; TOO_MANY (0) makes every n-th send a 429.

use anyhow::Context;
use axum::extract::{Request, State};
use axum::response::IntoResponse;
use domain::config::{Config, Service, ServiceAddr};
use domain::contract::DomainEvent;
use domain::contract::events::EventState;
use domain::envelope::Envelope;
use domain::events::lifecycle::EventStatus;
use domain::ids::{TenantId, UserId};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_postgres::NoTls;
use uuid::Uuid;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the fake Bot API saw: each accepted send's chat and arrival.
#[derive(Default)]
struct Seen {
    sends: Mutex<Vec<(i64, Instant)>>,
    refused: Mutex<usize>,
    every: usize,
    count: Mutex<usize>,
}

async fn fake_api(State(seen): State<Arc<Seen>>, request: Request) -> axum::response::Response {
    let method = request
        .uri()
        .path()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if method == "getupdates" {
        tokio::time::sleep(Duration::from_secs(1)).await;
        return axum::Json(json!({"ok": true, "result": []})).into_response();
    }
    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let chat = value["chat_id"].as_i64().unwrap_or(0);
    let n = {
        let mut count = seen.count.lock().unwrap_or_else(|p| p.into_inner());
        *count += 1;
        *count
    };
    if seen.every > 0 && n % seen.every == 0 {
        *seen.refused.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        return (
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            axum::Json(json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": {"retry_after": 1}})),
        )
            .into_response();
    }
    seen.sends
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push((chat, Instant::now()));
    axum::Json(
        json!({"ok": true, "result": {"message_id": n, "date": 1_700_000_000,
        "chat": {"id": chat, "type": "private", "first_name": "P"}, "text": "ok"}}),
    )
    .into_response()
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    bilet::logging::init(&std::env::var("RUST_LOG").unwrap_or_else(|_| "error".into()));
    let participants = env_or("PARTICIPANTS", 10_000);
    let rate = env_or("RATE", 30) as u32;
    let chat_interval = env_or("CHAT_INTERVAL_MS", 1000) as u64;
    let too_many = env_or("TOO_MANY", 0);

    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let (admin, conn) = tokio_postgres::connect(&admin_url, NoTls).await?;
    tokio::spawn(conn);
    admin
        .batch_execute("DROP DATABASE IF EXISTS bilet_bench_notify WITH (FORCE)")
        .await?;
    let db_url = match admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/bilet_bench_notify"),
        None => admin_url.clone(),
    };

    let seen = Arc::new(Seen {
        every: too_many,
        ..Seen::default()
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let api_url = format!("http://{}", listener.local_addr()?);
    let app = axum::Router::new()
        .fallback(fake_api)
        .with_state(seen.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let mut config = Config::default();
    for addr in config.services.values_mut() {
        *addr = ServiceAddr {
            listen: "127.0.0.1:0".into(),
            url: "http://127.0.0.1:0".into(),
        };
    }
    config.database.url = db_url.clone();
    config.auth.jwt_secret = Some(domain::config::Secret::new(
        "bench-secret-bench-secret-bench",
    ));
    config.messenger.bot_token = Some(domain::config::Secret::new("1:BENCH"));
    config.messenger.api_url = api_url;
    config.messenger.poll_timeout_secs = 1;
    config.messenger.messages_per_second = rate;
    config.messenger.chat_interval_ms = chat_interval;
    config.data_dir = std::env::temp_dir().join("bilet-bench-notify");
    config.nodes = vec![domain::config::NodeConfig {
        name: "default".into(),
        services: vec![Service::Notifications],
        addresses: Default::default(),
    }];
    let node = bilet::node::start(config).await.context("start the node")?;

    // Participants as the projection keeps them (one linked chat each), seeded in one go.
    let (owner, conn) = tokio_postgres::connect(&db_url, NoTls).await?;
    tokio::spawn(conn);
    let tenant = TenantId::new();
    let event = Uuid::now_v7();
    let starts = chrono::Utc::now() + chrono::Duration::days(7);
    owner
        .execute(
            "INSERT INTO notification_service.participants
                (registration_id, tenant_id, event_id, user_id, first_name, confirmation_code, active, updated_at)
             SELECT gen_random_uuid(), $1, $2, gen_random_uuid(), 'P' || i, 'CODE' || i, true, now()
             FROM generate_series(1, $3::int) i",
            &[&tenant.as_uuid(), &event, &(participants as i32)],
        )
        .await?;
    owner
        .execute(
            "INSERT INTO notification_service.chats (user_id, chat_id, linked_at)
             SELECT user_id, 100000 + row_number() OVER (ORDER BY user_id), now()
             FROM notification_service.participants",
            &[],
        )
        .await?;

    println!(
        "fan-out of event.cancelled to {participants} participants; limits {rate}/s overall, one per {chat_interval} ms per chat{}\n",
        if too_many > 0 {
            format!(", every {too_many}th send answered 429 retry_after 1")
        } else {
            String::new()
        }
    );
    let cancelled = Envelope::of(
        &DomainEvent::EventCancelled(EventState {
            event_id: event,
            tenant_id: tenant,
            organizer_id: UserId::new(),
            group_id: None,
            title: "Bench".into(),
            slug: "bench".into(),
            status: EventStatus::Cancelled,
            starts_at: starts,
            ends_at: None,
            timezone: "UTC".into(),
            location_type: None,
            location_address: Some("Main st. 1".into()),
            location_url: None,
            cover_image_id: None,
        }),
        Some(tenant),
        None,
    );
    let started = Instant::now();
    node.state
        .broker
        .publish(std::slice::from_ref(&cancelled))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    // Queued: every message written by the consumer.
    loop {
        let n: i64 = owner
            .query_one(
                "SELECT count(*) FROM notification_service.messages WHERE kind = 'event.cancelled'",
                &[],
            )
            .await?
            .get(0);
        if n as usize >= participants {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let queued = started.elapsed();
    let mut last_report = Instant::now();
    loop {
        let sent = seen.sends.lock().unwrap_or_else(|p| p.into_inner()).len();
        if sent >= participants {
            break;
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            println!(
                "  … {sent} sent after {:.0} s",
                started.elapsed().as_secs_f64()
            );
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let drained = started.elapsed();
    // Let the last attempts land in the send log.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let sends = seen.sends.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let first = sends.first().map(|s| s.1).unwrap_or(started);
    let last = sends.last().map(|s| s.1).unwrap_or(started);
    // The busiest second: the most sends inside any one-second window.
    let mut busiest = 0;
    let mut j = 0;
    for i in 0..sends.len() {
        while sends[i].1.duration_since(sends[j].1) >= Duration::from_secs(1) {
            j += 1;
        }
        busiest = busiest.max(i - j + 1);
    }
    let mut per_chat: HashMap<i64, usize> = HashMap::new();
    for (chat, _) in &sends {
        *per_chat.entry(*chat).or_default() += 1;
    }
    let status: Vec<(String, i64)> = owner
        .query(
            "SELECT status, count(*) FROM notification_service.messages GROUP BY status ORDER BY status",
            &[],
        )
        .await?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let log: i64 = owner
        .query_one("SELECT count(*) FROM notification_service.send_log", &[])
        .await?
        .get(0);
    println!("| figure | value |\n|---|---|");
    println!(
        "| messages rendered and queued by the consumer | {:.2} s |",
        queued.as_secs_f64()
    );
    println!(
        "| drained (event published → last send accepted) | {:.1} s |",
        drained.as_secs_f64()
    );
    println!(
        "| sending rate, first → last send | {:.2}/s |",
        (sends.len().saturating_sub(1)) as f64
            / last.duration_since(first).as_secs_f64().max(0.001)
    );
    println!("| most sends in any one second | {busiest} (limit {rate}) |");
    println!(
        "| chats sent to more than once | {} |",
        per_chat.values().filter(|n| **n > 1).count()
    );
    println!(
        "| 429 answers | {} |",
        *seen.refused.lock().unwrap_or_else(|p| p.into_inner())
    );
    println!("| messages by status | {status:?} |");
    println!("| send log rows | {log} |");
    node.stop().await;
    Ok(())
}
