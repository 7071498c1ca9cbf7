//! The reservation timer of the shards this node holds: sleeps until the earliest deadline
//! stored for them (or at most a second), then expires what is due: reservations and
//! waiting-list holds, each under the fence of the held leases. Deadlines live in
//! `expires_at`, so a restart, a crash or a hand-over loses no timer: the new owner reads them.

use crate::cluster::Ownership;
use domain::clock::Clock;
use std::sync::Arc;
use std::time::Duration;
use storage::Database;
use storage::events::{registrations, waitlist};
use tokio::sync::watch;

/// Expires reservations on time.
pub struct ReservationTimer {
    db: Database,
    clock: Arc<dyn Clock>,
    owner: Ownership,
}

/// Logs a sweep's outcome; a refused fence is counted (the shard moved mid-sweep).
fn report(owner: &Ownership, what: &str, outcome: storage::Result<usize>) {
    match outcome {
        Ok(0) => {}
        Ok(n) => tracing::info!(expired = n, what, "expired"),
        Err(e) if e.is_fenced() => {
            owner.count_fenced();
            tracing::warn!(what, error = %e, "sweep refused: a shard moved");
        }
        Err(e) => tracing::warn!(what, error = %e, "expiry failed"),
    }
}

impl ReservationTimer {
    /// A timer over `db` for what `owner` holds.
    pub fn new(db: Database, clock: Arc<dyn Clock>, owner: Ownership) -> ReservationTimer {
        ReservationTimer { db, clock, owner }
    }

    /// Runs until `stop` changes.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        loop {
            let fence = self.owner.fence();
            let mut wait = Duration::from_secs(1);
            if !fence.is_empty() {
                let now = self.clock.now();
                report(
                    &self.owner,
                    "reservations",
                    registrations::expire_due(&self.db, &fence, None, now).await,
                );
                report(
                    &self.owner,
                    "waiting-list holds",
                    waitlist::expire_due(&self.db, &fence, now).await,
                );
                if let Ok(Some(next)) =
                    registrations::next_expiry(&self.db, &fence.shards(), None).await
                {
                    wait = (next - self.clock.now())
                        .to_std()
                        .unwrap_or(Duration::ZERO)
                        .min(wait);
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(wait.max(Duration::from_millis(50))) => {}
                _ = stop.changed() => return,
            }
        }
    }
}
