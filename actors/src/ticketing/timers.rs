//! The reservation timer: sleeps until the earliest deadline stored in the database (or at
//! most a second), then expires what is due: reservations and waiting-list holds. Deadlines live in `expires_at`, so a restart or a
//! crash loses no timer: the new process reads them again.

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
}

impl ReservationTimer {
    /// A timer over `db`.
    pub fn new(db: Database, clock: Arc<dyn Clock>) -> ReservationTimer {
        ReservationTimer { db, clock }
    }

    /// Runs until `stop` changes.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        loop {
            let now = self.clock.now();
            match registrations::expire_due(&self.db, None, now).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(expired = n, "reservations expired"),
                Err(e) => tracing::warn!(error = %e, "reservation expiry failed"),
            }
            match waitlist::expire_due(&self.db, now).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(expired = n, "waiting-list holds expired"),
                Err(e) => tracing::warn!(error = %e, "waiting-list expiry failed"),
            }
            let wait = match registrations::next_expiry(&self.db, None).await {
                Ok(Some(next)) => (next - self.clock.now())
                    .to_std()
                    .unwrap_or(Duration::ZERO)
                    .min(Duration::from_secs(1)),
                _ => Duration::from_secs(1),
            };
            tokio::select! {
                _ = tokio::time::sleep(wait.max(Duration::from_millis(50))) => {}
                _ = stop.changed() => return,
            }
        }
    }
}
