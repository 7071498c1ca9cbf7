//! The gateway's in-memory rate limiter: the cost of one counted request while the current
//! window already holds 1,000, 100,000 and 1,000,000 distinct users (it must not grow with
//! them), and of the first request of a new window after a million.
//!
//! `cargo run --release -p bench --bin ratelimit`

use http::ratelimit::{Counter, MemoryCounter};
use std::time::Instant;

const MEASURED: usize = 200_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    println!("| users already counted in the window | ns per request (p50 of 5 runs) |");
    println!("|---|---|");
    for held in [1_000usize, 100_000, 1_000_000] {
        let counter = MemoryCounter::default();
        for i in 0..held {
            counter
                .increment(&format!("user:{i}"), 1)
                .await
                .map_err(anyhow::Error::msg)?;
        }
        let mut runs = Vec::new();
        for run in 0..5 {
            let keys: Vec<String> = (0..MEASURED)
                .map(|i| format!("user:{}", (i * 7919 + run) % (held * 2)))
                .collect();
            let started = Instant::now();
            for key in &keys {
                counter
                    .increment(key, 1)
                    .await
                    .map_err(anyhow::Error::msg)?;
            }
            runs.push(started.elapsed().as_nanos() as f64 / MEASURED as f64);
        }
        runs.sort_by(f64::total_cmp);
        println!("| {held} | {:.0} |", runs[2]);
    }
    let counter = MemoryCounter::default();
    for i in 0..1_000_000 {
        counter
            .increment(&format!("user:{i}"), 1)
            .await
            .map_err(anyhow::Error::msg)?;
    }
    let started = Instant::now();
    counter
        .increment("user:first-of-next", 2)
        .await
        .map_err(anyhow::Error::msg)?;
    println!(
        "\nfirst request of a new window after 1,000,000 users: {} µs (the old window is freed off the request path)",
        started.elapsed().as_micros()
    );
    Ok(())
}
