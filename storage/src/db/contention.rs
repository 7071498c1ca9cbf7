//! Transactions that lost a lock race run again. PostgreSQL ends one side of a deadlock
//! (40P01) and of a serialization conflict (40001) with an error and rolls it back; run again
//! a few milliseconds later it almost always passes. The caller sees an answer, not the race;
//! only a race lost `ATTEMPTS` times in a row reaches it (as 503 Retry-After, never 500).

use std::future::Future;
use std::time::Duration;

/// Tries of one transaction, the first included.
pub const ATTEMPTS: u32 = 4;

/// An error that may say a lock race was lost.
pub trait Contended {
    /// Whether running the same transaction again may succeed.
    fn is_contention(&self) -> bool;
}

impl Contended for super::DbError {
    fn is_contention(&self) -> bool {
        super::DbError::is_contention(self)
    }
}

impl Contended for crate::Error {
    fn is_contention(&self) -> bool {
        crate::Error::is_contention(self)
    }
}

/// The wait before try `attempt` (2, 3, …): random within a window that widens with each
/// try, so the two sides of a deadlock do not meet again at the same instant.
pub fn backoff(attempt: u32) -> Duration {
    let ceiling = 10 * u64::from(attempt.max(1)) * u64::from(attempt.max(1));
    Duration::from_millis(rand::random_range(1..=ceiling))
}

/// Runs `transaction` until it does not lose a lock race, at most `ATTEMPTS` times; `what`
/// names it in the log.
pub async fn retried<T, E, F, Fut>(what: &str, mut transaction: F) -> Result<T, E>
where
    E: Contended + std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let mut attempt = 1;
    loop {
        match transaction().await {
            Err(e) if e.is_contention() && attempt < ATTEMPTS => {
                attempt += 1;
                tracing::debug!(what, attempt, error = %e, "lost a lock race; running again");
                tokio::time::sleep(backoff(attempt)).await;
            }
            outcome => return outcome,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[derive(Debug)]
    struct Race(bool);

    impl std::fmt::Display for Race {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "race: {}", self.0)
        }
    }

    impl Contended for Race {
        fn is_contention(&self) -> bool {
            self.0
        }
    }

    #[tokio::test]
    async fn a_lost_race_runs_again_until_it_passes_or_the_tries_run_out() {
        let tries = AtomicU32::new(0);
        let passed: Result<u32, Race> = retried("test", || async {
            let n = tries.fetch_add(1, Ordering::SeqCst) + 1;
            if n < 3 { Err(Race(true)) } else { Ok(n) }
        })
        .await;
        assert_eq!(passed.unwrap(), 3);

        tries.store(0, Ordering::SeqCst);
        let lost: Result<u32, Race> = retried("test", || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err(Race(true))
        })
        .await;
        assert!(lost.is_err());
        assert_eq!(tries.load(Ordering::SeqCst), ATTEMPTS);

        // Any other error is not run again.
        tries.store(0, Ordering::SeqCst);
        let failed: Result<u32, Race> = retried("test", || async {
            tries.fetch_add(1, Ordering::SeqCst);
            Err(Race(false))
        })
        .await;
        assert!(failed.is_err());
        assert_eq!(tries.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn waits_stay_within_a_widening_window() {
        for attempt in 1..=ATTEMPTS {
            let ceiling = Duration::from_millis(10 * u64::from(attempt * attempt));
            for _ in 0..100 {
                let wait = backoff(attempt);
                assert!(
                    wait >= Duration::from_millis(1) && wait <= ceiling,
                    "{wait:?}"
                );
            }
        }
    }
}
