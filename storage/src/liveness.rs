//! A process's life line: one session of its own holding a session-level advisory lock on a
//! random key for as long as the process lives. PostgreSQL drops the lock the moment the
//! session ends — the process killed, its host gone — so anyone can tell at once, from
//! `pg_locks`, whether the holder of a claim (an idempotency key in progress) is still alive.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::watch;

/// This process's life line; cheap to clone.
#[derive(Clone)]
pub struct LifeLine {
    key: i64,
    held: Arc<AtomicBool>,
}

impl LifeLine {
    /// A life line under a fresh random key, not yet held (see [`LifeLine::run`]).
    pub fn new() -> LifeLine {
        LifeLine {
            // Positive, so the key reads back the same from pg_locks' two 32-bit halves.
            key: rand::random::<i64>() & i64::MAX,
            held: Arc::default(),
        }
    }

    /// The key to record with a claim, while the lock is held (a claim recorded without
    /// one is judged by its age alone).
    pub fn key(&self) -> Option<i64> {
        self.held.load(Ordering::Relaxed).then_some(self.key)
    }

    /// Holds the lock until `stop` changes, connecting again whenever the session ends.
    pub async fn run(self, login: tokio_postgres::Config, mut stop: watch::Receiver<bool>) {
        loop {
            if *stop.borrow() {
                return;
            }
            match login.connect(tokio_postgres::NoTls).await {
                Ok((client, connection)) => {
                    let mut session = tokio::spawn(connection);
                    match client
                        .execute("SELECT pg_advisory_lock($1)", &[&self.key])
                        .await
                    {
                        Ok(_) => {
                            self.held.store(true, Ordering::Relaxed);
                            tokio::select! {
                                _ = &mut session => {
                                    tracing::warn!("the life line's session ended; taking it again");
                                }
                                _ = stop.changed() => {}
                            }
                            self.held.store(false, Ordering::Relaxed);
                        }
                        Err(e) => tracing::warn!(error = %e, "the life line's lock was not taken"),
                    }
                    session.abort();
                }
                Err(e) => tracing::warn!(error = %e, "the life line cannot connect"),
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = stop.changed() => return,
            }
        }
    }
}

impl Default for LifeLine {
    fn default() -> Self {
        LifeLine::new()
    }
}

/// SQL that is true when no live session holds the life line `key` (a column or parameter).
pub fn holder_gone(key: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM pg_locks l
                     WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
                       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                       AND ((l.classid::bigint << 32) | l.objid::bigint) = {key})"
    )
}
