//! Shared pieces of the benchmarks: closed-loop and open-loop load runners and latency figures;
//! `sale` holds what the sale benchmarks (`cluster`, `outside`) share, `history` the past sales
//! seeded before a burst (`outside` with `HISTORY`), `node` the whole platform as one process,
//! `backlog` what a sale's registrations still have to go through downstream, `wrk` the outside
//! load generator and what its scripts print.

pub mod backlog;
pub mod history;
pub mod node;
pub mod sale;
pub mod wrk;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Latency and throughput of one run.
#[derive(Clone, Debug)]
pub struct Figures {
    /// Requests that succeeded.
    pub ok: usize,
    /// Requests that failed.
    pub failed: usize,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Median latency.
    pub p50: Duration,
    /// 95th percentile.
    pub p95: Duration,
    /// 99th percentile.
    pub p99: Duration,
}

impl Figures {
    /// Successful requests per second.
    pub fn per_second(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    /// One table row.
    pub fn row(&self, name: &str) -> String {
        format!(
            "| {name} | {:.0} | {:.2} | {:.2} | {:.2} | {} | {} |",
            self.per_second(),
            ms(self.p50),
            ms(self.p95),
            ms(self.p99),
            self.ok,
            self.failed
        )
    }
}

/// Milliseconds as a float.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Runs `total` calls of `call` with `concurrency` workers, each waiting for its previous call.
pub async fn run<F, Fut>(total: usize, concurrency: usize, call: F) -> Figures
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let call = Arc::new(call);
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let call = call.clone();
        let next = next.clone();
        workers.push(tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut failed = 0;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let t = Instant::now();
                if call(i).await {
                    samples.push(t.elapsed());
                } else {
                    failed += 1;
                }
            }
            (samples, failed)
        }));
    }
    let mut samples = Vec::with_capacity(total);
    let mut failed = 0;
    for worker in workers {
        if let Ok((s, f)) = worker.await {
            samples.extend(s);
            failed += f;
        }
    }
    figures(samples, failed, started.elapsed())
}

/// Starts call `i` at `i / rate` seconds after the start whether or not earlier calls have
/// answered, at most `cap` at once. Latency counts from the scheduled start, also for a call
/// held back by the cap: a server that falls behind shows its queue in the percentiles instead
/// of slowing the sender down (which a closed loop does, hiding the wait).
pub async fn open_loop<F, Fut>(total: usize, rate: f64, cap: usize, call: F) -> Figures
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send + 'static,
{
    let call = Arc::new(call);
    let slots = Arc::new(tokio::sync::Semaphore::new(cap));
    let started = tokio::time::Instant::now();
    let mut sends = Vec::with_capacity(total);
    for i in 0..total {
        let scheduled = started + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(scheduled).await;
        let call = call.clone();
        let slots = slots.clone();
        sends.push(tokio::spawn(async move {
            let _slot = slots.acquire_owned().await.ok()?;
            call(i).await.then(|| scheduled.elapsed())
        }));
    }
    let mut samples = Vec::with_capacity(total);
    let mut failed = 0;
    for send in sends {
        match send.await {
            Ok(Some(latency)) => samples.push(latency),
            _ => failed += 1,
        }
    }
    figures(samples, failed, started.elapsed())
}

/// Percentiles of the successful calls' latencies.
fn figures(mut samples: Vec<Duration>, failed: usize, elapsed: Duration) -> Figures {
    samples.sort();
    let pick = |q: f64| {
        samples
            .get(((samples.len() as f64 * q) as usize).min(samples.len().saturating_sub(1)))
            .copied()
            .unwrap_or_default()
    };
    Figures {
        ok: samples.len(),
        failed,
        elapsed,
        p50: pick(0.50),
        p95: pick(0.95),
        p99: pick(0.99),
    }
}

/// The table header matching `Figures::row`.
pub const HEADER: &str =
    "| path | req/s | p50 ms | p95 ms | p99 ms | ok | failed |\n|---|---|---|---|---|---|---|";
