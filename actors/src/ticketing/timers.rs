//! The reservation timer of the shards this node holds: the one mechanism that expires
//! reservations and waiting-list holds. It sleeps until the earliest deadline stored for the
//! shards, or until an actor announces an earlier one, or the shards held change; then it
//! expires what is due, each under the fence of the held leases. Deadlines live in
//! `expires_at`, so a restart, a crash or a hand-over loses no timer: the new owner reads them.
//! A look that finds nothing due only reads.

use crate::cluster::Ownership;
use chrono::{DateTime, Utc};
use domain::clock::Clock;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use storage::Database;
use storage::events::{registrations, waitlist};
use tokio::sync::{Notify, watch};

/// How long the timer goes without looking at the database at all: holds are also released
/// when their holder registers for another ticket type, which no deadline announces.
const LOOK_AGAIN: Duration = Duration::from_secs(5);

/// Where actors announce new deadlines to the node's timer.
#[derive(Clone, Default)]
pub struct Deadlines {
    inner: Arc<Announced>,
}

#[derive(Default)]
struct Announced {
    earliest: Mutex<Option<DateTime<Utc>>>,
    ring: Notify,
}

impl Deadlines {
    /// Tells the timer something falls due at `deadline`; it wakes only when that is earlier
    /// than what it already knows of.
    pub fn at(&self, deadline: DateTime<Utc>) {
        let mut earliest = self
            .inner
            .earliest
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if earliest.is_none_or(|e| deadline < e) {
            *earliest = Some(deadline);
            self.inner.ring.notify_one();
        }
    }

    /// The earliest deadline announced since the last call.
    fn take(&self) -> Option<DateTime<Utc>> {
        self.inner
            .earliest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// Expires reservations on time.
pub struct ReservationTimer {
    db: Database,
    clock: Arc<dyn Clock>,
    owner: Ownership,
    deadlines: Deadlines,
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
        // A seat batch held a row past the sweep's short lock wait: the next look goes on.
        Err(e) if e.is_contention() => tracing::debug!(what, error = %e, "expiry waits for a lock"),
        Err(e) => tracing::warn!(what, error = %e, "expiry failed"),
    }
}

/// How long to sleep towards `next`: never past it, never past `most`.
fn wait_for(next: Option<DateTime<Utc>>, now: DateTime<Utc>, most: Duration) -> Duration {
    next.map(|n| (n - now).to_std().unwrap_or(Duration::ZERO))
        .unwrap_or(most)
        .min(most)
}

impl ReservationTimer {
    /// A timer over `db` for what `owner` holds, told of new deadlines through `deadlines`.
    pub fn new(
        db: Database,
        clock: Arc<dyn Clock>,
        owner: Ownership,
        deadlines: Deadlines,
    ) -> ReservationTimer {
        ReservationTimer {
            db,
            clock,
            owner,
            deadlines,
        }
    }

    /// Runs until `stop` changes.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut changes = self.owner.changes();
        // The earliest deadline known; `None` until the database is read (again).
        let mut next: Option<DateTime<Utc>> = None;
        let mut look = true;
        loop {
            let fence = self.owner.fence();
            let now = self.clock.now();
            if fence.is_empty() {
                next = None;
            } else if look || next.is_some_and(|n| n <= now) {
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
                next = registrations::next_expiry(&self.db, &fence.shards())
                    .await
                    .unwrap_or(None);
            }
            if let Some(announced) = self.deadlines.take() {
                next = Some(next.map_or(announced, |n| n.min(announced)));
            }
            let most = LOOK_AGAIN.min(self.clock.recheck());
            let wait = wait_for(next, self.clock.now(), most);
            look = false;
            tokio::select! {
                _ = tokio::time::sleep(wait) => look = wait == most,
                _ = self.deadlines.inner.ring.notified() => {}
                changed = changes.changed() => {
                    if changed.is_err() { return }
                    look = true;
                }
                _ = stop.changed() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn the_timer_sleeps_until_the_deadline_but_not_past_its_bound() {
        let now = at("2026-11-25T12:00:00Z");
        let most = Duration::from_secs(5);
        assert_eq!(
            wait_for(Some(at("2026-11-25T12:00:02Z")), now, most),
            Duration::from_secs(2)
        );
        assert_eq!(wait_for(Some(at("2026-11-25T13:00:00Z")), now, most), most);
        assert_eq!(wait_for(None, now, most), most);
        assert_eq!(
            wait_for(Some(at("2026-11-25T11:00:00Z")), now, most),
            Duration::ZERO
        );
    }

    #[tokio::test]
    async fn only_an_earlier_deadline_rings_the_timer() {
        let deadlines = Deadlines::default();
        deadlines.at(at("2026-11-25T12:10:00Z"));
        deadlines.at(at("2026-11-25T12:20:00Z"));
        assert_eq!(deadlines.take(), Some(at("2026-11-25T12:10:00Z")));
        assert_eq!(deadlines.take(), None);
        // The first announcement stored a permit: the timer is woken once.
        let woken =
            tokio::time::timeout(Duration::from_millis(50), deadlines.inner.ring.notified());
        assert!(woken.await.is_ok());
    }
}
