//! The one runner of a node's periodic jobs (cleanups, completions, gauges): each job runs
//! on its schedule until the node stops; a job that fails or panics is logged and runs again
//! at its next time, and never holds up another job.

use chrono::NaiveTime;
use domain::clock::{Clock, next_daily};
use futures_util::future::BoxFuture;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::MissedTickBehavior;

/// When a job runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// At start, then every period (a run that overruns delays the next, never doubles it).
    Every(Duration),
    /// Every day at this UTC time of day, as the node's clock tells it.
    DailyAt(NaiveTime),
}

/// What a run reports: how many things it handled, or why it failed.
pub type Outcome = Result<usize, String>;

type Task = Arc<dyn Fn() -> BoxFuture<'static, Outcome> + Send + Sync>;

/// A named piece of periodic work.
#[derive(Clone)]
pub struct Job {
    /// Its name in logs (`service.what`).
    pub name: &'static str,
    /// When it runs.
    pub schedule: Schedule,
    task: Task,
}

impl Job {
    /// A job that runs `task` on `schedule`.
    pub fn new<F, Fut>(name: &'static str, schedule: Schedule, task: F) -> Job
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Outcome> + Send + 'static,
    {
        Job {
            name,
            schedule,
            task: Arc::new(move || Box::pin(task())),
        }
    }

    /// Runs the job once, now, outside its schedule (tests, manual triggers).
    pub fn run(&self) -> BoxFuture<'static, Outcome> {
        (self.task)()
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("schedule", &self.schedule)
            .finish_non_exhaustive()
    }
}

/// Runs every job on its schedule until `stop` turns true (or its sender is dropped); the
/// handles end once the jobs have stopped. A run under way when stop comes is let finish.
pub fn start(
    jobs: Vec<Job>,
    clock: Arc<dyn Clock>,
    stop: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    jobs.into_iter()
        .map(|job| tokio::spawn(drive(job, clock.clone(), stop.clone())))
        .collect()
}

async fn drive(job: Job, clock: Arc<dyn Clock>, stop: watch::Receiver<bool>) {
    match job.schedule {
        Schedule::Every(period) => every(job, period, stop).await,
        Schedule::DailyAt(at) => daily(job, at, clock, stop).await,
    }
}

async fn every(job: Job, period: Duration, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stopped(&mut stop) => return,
        }
        run_once(&job).await;
    }
}

async fn daily(job: Job, at: NaiveTime, clock: Arc<dyn Clock>, mut stop: watch::Receiver<bool>) {
    let mut next = next_daily(clock.now(), at);
    loop {
        // The timer and the clock may disagree (suspend, clock steps, a manual clock in
        // tests): sleep until the clock itself says the time has come.
        loop {
            let now = clock.now();
            if now >= next {
                break;
            }
            let wait = (next - now).to_std().unwrap_or(Duration::ZERO);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stopped(&mut stop) => return,
            }
        }
        run_once(&job).await;
        // From `next` too, so a run that ends a moment early by the clock is not repeated.
        next = next_daily(clock.now().max(next), at);
    }
}

/// Resolves when the node stops: `true` sent, or the sender gone.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|stopped| *stopped).await;
}

/// One run in a task of its own, so a panic ends that run only.
async fn run_once(job: &Job) {
    let task = job.task.clone();
    let name = job.name;
    match tokio::spawn(async move { task().await }).await {
        Ok(Ok(0)) => {}
        Ok(Ok(n)) => tracing::info!(job = name, count = n, "job done"),
        Ok(Err(error)) => tracing::warn!(job = name, %error, "job failed"),
        Err(e) if e.is_panic() => tracing::warn!(job = name, "job panicked"),
        Err(e) => tracing::warn!(job = name, error = %e, "job cancelled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use domain::clock::ManualClock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting(
        name: &'static str,
        schedule: Schedule,
        outcome: fn(usize) -> Outcome,
    ) -> (Job, Arc<AtomicUsize>) {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let job = Job::new(name, schedule, move || {
            let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
            async move { outcome(n) }
        });
        (job, runs)
    }

    fn clock_at(s: &str) -> Arc<ManualClock> {
        Arc::new(ManualClock::new(
            DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc),
        ))
    }

    /// Lets the spawned runners take their turn without moving time.
    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    async fn advance(by: Duration) {
        tokio::time::advance(by).await;
        settle().await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_every_job_runs_at_start_then_every_period() {
        let (job, runs) = counting("tick", Schedule::Every(Duration::from_secs(10)), Ok);
        let (_tx, rx) = watch::channel(false);
        let _handles = start(vec![job], clock_at("2026-01-01T00:00:00Z"), rx);
        settle().await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        advance(Duration::from_secs(9)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        advance(Duration::from_secs(1)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        for _ in 0..3 {
            advance(Duration::from_secs(10)).await;
        }
        assert_eq!(runs.load(Ordering::SeqCst), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn failing_and_panicking_jobs_neither_stop_others_nor_their_next_run() {
        let every = Schedule::Every(Duration::from_secs(10));
        let (healthy, healthy_runs) = counting("healthy", every, Ok);
        let (failing, failing_runs) = counting("failing", every, |_| Err("no database".into()));
        let (panicking, panicking_runs) = counting("panicking", every, |_| panic!("job bug"));
        let (_tx, rx) = watch::channel(false);
        let handles = start(
            vec![failing, panicking, healthy],
            clock_at("2026-01-01T00:00:00Z"),
            rx,
        );
        settle().await;
        for _ in 0..3 {
            advance(Duration::from_secs(10)).await;
        }
        assert_eq!(healthy_runs.load(Ordering::SeqCst), 4);
        assert_eq!(failing_runs.load(Ordering::SeqCst), 4);
        assert_eq!(panicking_runs.load(Ordering::SeqCst), 4);
        assert!(handles.iter().all(|h| !h.is_finished()));
    }

    #[tokio::test(start_paused = true)]
    async fn stop_ends_the_runner() {
        let (every, every_runs) = counting("every", Schedule::Every(Duration::from_secs(10)), Ok);
        let at = NaiveTime::from_hms_opt(3, 0, 0).unwrap();
        let (daily, daily_runs) = counting("daily", Schedule::DailyAt(at), Ok);
        let (tx, rx) = watch::channel(false);
        let handles = start(vec![every, daily], clock_at("2026-01-01T00:00:00Z"), rx);
        settle().await;
        tx.send(true).unwrap();
        for handle in handles {
            tokio::time::timeout(Duration::from_secs(1), handle)
                .await
                .expect("the runner stops")
                .unwrap();
        }
        advance(Duration::from_secs(3600)).await;
        assert_eq!(every_runs.load(Ordering::SeqCst), 1);
        assert_eq!(daily_runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_sender_stops_the_runner_too() {
        let (job, _) = counting("tick", Schedule::Every(Duration::from_secs(10)), Ok);
        let (tx, rx) = watch::channel(false);
        let handles = start(vec![job], clock_at("2026-01-01T00:00:00Z"), rx);
        drop(tx);
        for handle in handles {
            tokio::time::timeout(Duration::from_secs(1), handle)
                .await
                .expect("the runner stops")
                .unwrap();
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_daily_job_fires_at_its_time_by_the_clock() {
        let clock = clock_at("2026-11-22T01:30:00Z");
        let at = NaiveTime::from_hms_opt(3, 0, 0).unwrap();
        let (job, runs) = counting("daily", Schedule::DailyAt(at), Ok);
        let (_tx, rx) = watch::channel(false);
        let _handles = start(vec![job], clock.clone(), rx);
        settle().await;
        assert_eq!(runs.load(Ordering::SeqCst), 0, "not at start");

        // Both clocks move together, as the system ones do.
        let step = |minutes: i64| {
            let clock = clock.clone();
            async move {
                clock.advance(chrono::Duration::minutes(minutes));
                advance(Duration::from_secs(minutes as u64 * 60)).await;
            }
        };
        step(89).await;
        assert_eq!(runs.load(Ordering::SeqCst), 0, "02:59");
        step(1).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "03:00");
        step(23 * 60 + 59).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1, "02:59 the next day");
        step(1).await;
        assert_eq!(runs.load(Ordering::SeqCst), 2, "03:00 the next day");
    }

    #[tokio::test(start_paused = true)]
    async fn a_daily_job_waits_for_the_clock_not_the_timer() {
        // The timer fires but the clock has not reached 03:00 (it was set back): no run yet.
        let clock = clock_at("2026-11-22T02:00:00Z");
        let at = NaiveTime::from_hms_opt(3, 0, 0).unwrap();
        let (job, runs) = counting("daily", Schedule::DailyAt(at), Ok);
        let (_tx, rx) = watch::channel(false);
        let _handles = start(vec![job], clock.clone(), rx);
        settle().await;
        advance(Duration::from_secs(3600)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        clock.advance(chrono::Duration::minutes(60));
        advance(Duration::from_secs(3600)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}
