//! Media: uploads of a 5 MB JPEG through the gateway. Prints uploads per second (time to the
//! 201 answer, with the original stored) and the time from upload to READY (all four variants
//! made and stored by the worker), with the local store, or with the S3 server when
//! STORAGE_ENDPOINT (and the other STORAGE_* variables) are set.
//!
//! `cargo run --release -p bench --bin media` (DATABASE_URL: an owner connection; the database
//! `bilet_bench` is used). UPLOADS and CONCURRENCY tune the run.

use anyhow::Context;
use domain::config::{Config, Secret, ServiceAddr};
use domain::ids::UserId;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use std::io::Cursor;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A photo-like JPEG just under 5 MB (noise does not compress, so size follows pixels).
fn five_megabyte_jpeg() -> Vec<u8> {
    let mut side = 4000u32;
    loop {
        let mut seed = 0x2545F491u32;
        let img = RgbImage::from_fn(side, side * 3 / 4, |x, y| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            let noise = (seed % 64) as u8;
            Rgb([
                (x % 200) as u8 + noise / 2,
                (y % 180) as u8 + noise / 3,
                noise * 2,
            ])
        });
        let mut out = Cursor::new(Vec::new());
        DynamicImage::ImageRgb8(img)
            .write_to(&mut out, ImageFormat::Jpeg)
            .expect("encode");
        let bytes = out.into_inner();
        if bytes.len() <= domain::media::MAX_IMAGE_BYTES {
            return bytes;
        }
        side -= 100;
    }
}

fn multipart(bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "bilet-bench-7f3a";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"photo.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    bilet::logging::init(&std::env::var("RUST_LOG").unwrap_or_else(|_| "error".into()));
    let uploads = env_or("UPLOADS", 40);
    let concurrency = env_or("CONCURRENCY", 4);
    let admin_url = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    let db_url = match admin_url.rsplit_once('/') {
        Some((base, _)) => format!("{base}/bilet_bench"),
        None => admin_url.clone(),
    };
    let mut config = Config::default();
    for addr in config.services.values_mut() {
        *addr = ServiceAddr {
            listen: "127.0.0.1:0".into(),
            url: "http://127.0.0.1:0".into(),
        };
    }
    config.database.url = db_url;
    config.auth.jwt_secret = Some(Secret::new("bench-secret-bench-secret-bench"));
    config.log.filter = "error".into();
    config.gateway.upload_per_minute = u32::MAX;
    config.data_dir = std::env::temp_dir().join("bilet-bench-media");
    if let Ok(endpoint) = std::env::var("STORAGE_ENDPOINT") {
        config.storage.endpoint = Some(endpoint);
        config.storage.access_key = std::env::var("STORAGE_ACCESS_KEY").ok().map(Secret::new);
        config.storage.secret_key = std::env::var("STORAGE_SECRET_KEY").ok().map(Secret::new);
        config.storage.bucket = std::env::var("STORAGE_BUCKET").unwrap_or(config.storage.bucket);
        config.storage.region = std::env::var("STORAGE_REGION").unwrap_or(config.storage.region);
    }
    let store = if config.storage.endpoint.is_some() {
        "S3 (Garage)"
    } else {
        "local directory"
    };
    let node = bilet::node::start(config).await.context("start the node")?;
    let gateway = format!("http://{}", node.addrs[&domain::config::Service::Gateway]);
    let token = node
        .state
        .tokens
        .issue(
            UserId::new(),
            None,
            None,
            vec![],
            None,
            0,
            chrono::Utc::now(),
        )?
        .token;
    let jpeg = five_megabyte_jpeg();
    let (content_type, body) = multipart(&jpeg);
    let (body, token) = (Arc::new(body), Arc::new(token));
    let client = reqwest::Client::new();
    println!(
        "media: {uploads} uploads of a {:.2} MB JPEG ({}×{}), {concurrency} concurrent, {store}\n",
        jpeg.len() as f64 / 1_048_576.0,
        image::load_from_memory(&jpeg)?.width(),
        image::load_from_memory(&jpeg)?.height()
    );

    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    let ids = Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    for _ in 0..concurrency {
        let (client, body, token, ids, next, gateway, content_type) = (
            client.clone(),
            body.clone(),
            token.clone(),
            ids.clone(),
            next.clone(),
            gateway.clone(),
            content_type.clone(),
        );
        tasks.spawn(async move {
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < uploads {
                let sent = Instant::now();
                let reply = client
                    .post(format!("{gateway}/api/v1/media/upload"))
                    .bearer_auth(token.as_str())
                    .header("Content-Type", content_type.as_str())
                    .body(body.as_ref().clone())
                    .send()
                    .await;
                if let Ok(r) = reply
                    && r.status().as_u16() == 201
                    && let Ok(v) = r.json::<serde_json::Value>().await
                    && let Some(id) = v["id"].as_str()
                {
                    ids.lock()
                        .await
                        .push((id.to_string(), sent, Instant::now()));
                }
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let upload_time = started.elapsed();
    let accepted = ids.lock().await.clone();

    // Time to READY: poll every file until its variants are stored.
    let mut to_ready = Vec::new();
    let mut answered = Vec::new();
    for (id, sent, answered_at) in &accepted {
        answered.push(*answered_at - *sent);
        loop {
            let file: serde_json::Value = client
                .get(format!("{gateway}/api/v1/media/{id}"))
                .bearer_auth(token.as_str())
                .send()
                .await?
                .json()
                .await?;
            if file["status"] == "READY" {
                let updated = chrono::DateTime::parse_from_rfc3339(
                    file["updatedAt"].as_str().unwrap_or_default(),
                )?;
                let created = chrono::DateTime::parse_from_rfc3339(
                    file["createdAt"].as_str().unwrap_or_default(),
                )?;
                to_ready.push((updated - created).to_std().unwrap_or_default());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let all_ready = started.elapsed();
    let pct = |v: &mut Vec<Duration>, p: f64| {
        v.sort();
        v.get(((v.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
            * 1000.0
    };
    println!("| figure | value |\n|---|---|");
    println!("| uploads accepted | {} of {uploads} |", accepted.len());
    println!(
        "| uploads per second (201 answers) | {:.1} |",
        accepted.len() as f64 / upload_time.as_secs_f64()
    );
    println!(
        "| upload answer p50 / p99 ms | {:.0} / {:.0} |",
        pct(&mut answered, 0.5),
        pct(&mut answered, 0.99)
    );
    println!(
        "| upload to READY p50 / p99 ms (queue included) | {:.0} / {:.0} |",
        pct(&mut to_ready, 0.5),
        pct(&mut to_ready, 0.99)
    );
    println!(
        "| fastest upload to READY ms (one image's variants) | {:.0} |",
        to_ready
            .first()
            .map(|d| d.as_secs_f64() * 1000.0)
            .unwrap_or_default()
    );
    println!(
        "| variants per second (all uploads READY after {:.1} s) | {:.1} |",
        all_ready.as_secs_f64(),
        accepted.len() as f64 / all_ready.as_secs_f64()
    );
    node.stop().await;
    Ok(())
}
