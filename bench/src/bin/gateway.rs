//! What the gateway adds: the same authenticated read (`GET /api/v1/users/me`) sent straight
//! to the identity service (trusted headers), through the gateway in the same process (token
//! check, header stripping, rate-limit counting), and through a gateway forwarding over HTTP
//! to identity in another node.
//!
//! `cargo run --release -p bench --bin gateway` (DATABASE_URL: an owner connection; the
//! database `bilet_bench` is created on it). REQUESTS and CONCURRENCY tune the load.

use anyhow::Context;
use bench::{HEADER, run};
use domain::config::{Config, NodeConfig, Service, ServiceAddr};
use std::sync::Arc;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const SERVICE_SECRET: &str = "bench-service-secret-bench-service-secret";

fn config(db_url: &str) -> Config {
    let mut config = Config::default();
    for addr in config.services.values_mut() {
        *addr = ServiceAddr {
            listen: "127.0.0.1:0".into(),
            url: "http://127.0.0.1:0".into(),
        };
    }
    config.database.url = db_url.to_string();
    config.auth.jwt_secret = Some(domain::config::Secret::new(
        "bench-secret-bench-secret-bench",
    ));
    // Both nodes of the run share it: the forwarding gateway signs what identity verifies.
    config.auth.service_secret = Some(domain::config::Secret::new(SERVICE_SECRET));
    config.log.filter = "error".into();
    // The limiter still counts every request; its ceiling is lifted so the run measures the
    // work, not the refusals.
    config.gateway.user_per_minute = u32::MAX;
    config.data_dir = std::env::temp_dir().join("bilet-bench");
    config
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let total = env_or("REQUESTS", 20_000);
    let concurrency = env_or("CONCURRENCY", 32);
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let db_url = match admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/bilet_bench"),
        None => admin_url.clone(),
    };

    let node = bilet::node::start(config(&db_url))
        .await
        .context("start the node")?;
    let gateway = format!("http://{}", node.addrs[&Service::Gateway]);
    let identity = format!("http://{}", node.addrs[&Service::Identity]);

    // A second node that runs only a gateway and forwards identity's routes over HTTP.
    let mut forwarding = config(&db_url);
    forwarding.services.insert(
        Service::Identity,
        ServiceAddr {
            listen: "127.0.0.1:0".into(),
            url: identity.clone(),
        },
    );
    forwarding.nodes.push(NodeConfig {
        name: "gateway-only".into(),
        services: vec![Service::Gateway],
        addresses: Default::default(),
    });
    forwarding.node = "gateway-only".into();
    let forwarder = bilet::node::start(forwarding)
        .await
        .context("start the forwarding gateway")?;
    let remote = format!("http://{}", forwarder.addrs[&Service::Gateway]);

    // One user, created without paying for bcrypt, and a token for it.
    let email = format!("bench-{}@example.com", uuid::Uuid::now_v7().simple());
    let user = storage::identity::users::register(
        &node.state.db,
        &email,
        "$2b$04$benchbenchbenchbenchbeu",
        "Bench",
        "User",
        chrono::Utc::now(),
    )
    .await?;
    let token = node
        .state
        .tokens
        .issue(
            user.id,
            Some(email),
            None,
            vec![],
            None,
            0,
            chrono::Utc::now(),
        )?
        .token;

    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .build()?;
    let direct = {
        let (client, url, user) = (
            client.clone(),
            Arc::new(format!("{identity}/api/v1/users/me")),
            user.id.to_string(),
        );
        let trust = http::trust::Trust::new(SERVICE_SECRET.as_bytes());
        move |_| {
            let (client, url, user, trust) =
                (client.clone(), url.clone(), user.clone(), trust.clone());
            async move {
                // Signed as the gateway would: the service's own cost includes checking it.
                let Ok(parsed) = reqwest::Url::parse(url.as_str()) else {
                    return false;
                };
                let mut headers = reqwest::header::HeaderMap::new();
                if let Ok(value) = user.parse() {
                    headers.insert("x-user-id", value);
                }
                trust.sign(
                    Service::Gateway,
                    &reqwest::Method::GET,
                    &parsed,
                    &mut headers,
                );
                client
                    .get(parsed)
                    .headers(headers)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        }
    };
    let through = |base: String| {
        let (client, url, token) = (
            client.clone(),
            Arc::new(format!("{base}/api/v1/users/me")),
            token.clone(),
        );
        move |_| {
            let (client, url, token) = (client.clone(), url.clone(), token.clone());
            async move {
                client
                    .get(url.as_str())
                    .bearer_auth(token)
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        }
    };

    // Warm the pools and caches before measuring.
    run(2_000, concurrency, direct.clone()).await;
    run(2_000, concurrency, through(gateway.clone())).await;
    run(2_000, concurrency, through(remote.clone())).await;

    let d = run(total, concurrency, direct).await;
    let g = run(total, concurrency, through(gateway)).await;
    let f = run(total, concurrency, through(remote)).await;

    println!(
        "gateway overhead: {total} x GET /api/v1/users/me, {concurrency} concurrent, client on the same 2 cores\n"
    );
    println!("{HEADER}");
    println!("{}", d.row("identity directly (trusted headers)"));
    println!("{}", g.row("gateway, in process"));
    println!("{}", f.row("gateway forwarding over HTTP"));
    println!(
        "\nadded by the gateway in process: p50 {:+.2} ms, p99 {:+.2} ms; forwarding: p50 {:+.2} ms, p99 {:+.2} ms",
        bench::ms(g.p50) - bench::ms(d.p50),
        bench::ms(g.p99) - bench::ms(d.p99),
        bench::ms(f.p50) - bench::ms(d.p50),
        bench::ms(f.p99) - bench::ms(d.p99),
    );
    forwarder.stop().await;
    node.stop().await;
    Ok(())
}
