//! The gateway's memory of revoked access tokens. Identity records every change that ends
//! tokens early (storage::identity::revocations); each gateway reads them when notified
//! (LISTEN) and every half second, so a revocation takes effect on every gateway within
//! milliseconds, and within `STALE_AFTER` at worst: past that without a successful read, the
//! gateway refuses to vouch for any token rather than trust one that may be revoked.
//!
//! So that a flood cannot make it stale, the feed reads on a connection it keeps for good
//! (a pool's connection is retired after its lifetime, and a server with no room left for the
//! role would not give it another), from a thread and runtime of its own (on the request
//! runtime each answer waited behind every request ready at that moment: under a burst that
//! took past `STALE_AFTER`, and the gateway refused thousands of signed-in requests).

use chrono::{DateTime, Utc};
use domain::identity::revocation::{self, Revocations};
use domain::identity::tokens::Claims;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use storage::{Connection, Database};
use tokio::sync::{Mutex, Notify, watch};

/// How often the log is read without a notification.
pub const POLL: Duration = Duration::from_millis(500);
/// How old the last successful read may be before tokens are no longer vouched for.
pub const STALE_AFTER: Duration = Duration::from_secs(2);

/// What the feed says of a verified token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not revoked.
    Allowed,
    /// Revoked before its expiry.
    Revoked,
    /// The feed has not been read recently enough to tell.
    Unknown,
}

/// The database time the next read looks back from, and the session it is read on.
struct Reading {
    since: DateTime<Utc>,
    session: Option<Connection>,
}

/// The revocations a gateway knows of.
pub struct RevocationFeed {
    db: Database,
    set: RwLock<Revocations>,
    reading: Mutex<Reading>,
    fresh: RwLock<Option<Instant>>,
}

impl RevocationFeed {
    /// A feed that has read nothing yet (it vouches for no token until it has). It reads on a
    /// connection of its own: from the shared pool, a flood of slow requests holding every
    /// connection would keep it from reading for `STALE_AFTER`, and the gateway would then
    /// refuse every signed-in request of the node.
    pub fn new(db: Database) -> Arc<RevocationFeed> {
        Arc::new(RevocationFeed {
            db: db.separate(1).unwrap_or(db),
            set: RwLock::new(Revocations::default()),
            reading: Mutex::new(Reading {
                since: Utc::now() - revocation::memory(),
                session: None,
            }),
            fresh: RwLock::new(None),
        })
    }

    /// Whether a token with these verified claims may be trusted now.
    pub fn verdict(&self, claims: &Claims) -> Verdict {
        let fresh = *self.fresh.read().unwrap_or_else(|p| p.into_inner());
        if fresh.is_none_or(|at| at.elapsed() > STALE_AFTER) {
            return Verdict::Unknown;
        }
        if self
            .set
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .allows(claims)
        {
            Verdict::Allowed
        } else {
            Verdict::Revoked
        }
    }

    /// Reads what was revoked since the last read (with some overlap, see
    /// `revocation::overlap`).
    pub async fn refresh(&self) -> Result<(), storage::Error> {
        let mut reading = self.reading.lock().await;
        let started = Instant::now();
        let session = match reading.session.take() {
            Some(session) if !session.is_closed() => session,
            _ => self.db.client().await?,
        };
        let read = storage::identity::revocations::since(&session, reading.since).await;
        reading.session = Some(session);
        let (revocations, read_at) = read?;
        {
            let mut set = self.set.write().unwrap_or_else(|p| p.into_inner());
            set.apply(&revocations);
            set.forget_before(read_at - revocation::memory());
        }
        reading.since = read_at - revocation::overlap();
        // Fresh as of when the read started: anything committed before then was seen.
        *self.fresh.write().unwrap_or_else(|p| p.into_inner()) = Some(started);
        Ok(())
    }

    /// Reads once (answered before this returns), then runs (`run`) on a thread and runtime
    /// of its own (`actors::dedicated`); the returned task ends when the feed has stopped.
    pub async fn start(
        self: Arc<Self>,
        stop: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let (first, stopped) = actors::dedicated::start("revocations", move |read| async move {
            let _ = read.send(self.refresh().await);
            self.run(stop).await;
        })
        .await;
        match first {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                tracing::warn!(error = %e, "revoked tokens not read yet; tokens wait for the first reading")
            }
            None => {
                tracing::error!(
                    "the revocation feed ended before its first reading: the gateway vouches for no token"
                )
            }
        }
        tokio::spawn(async move {
            if stopped.await.is_err() {
                tracing::error!(
                    "the revocation feed ended without being stopped: the gateway vouches for no token"
                );
            }
        })
    }

    /// Reads the log whenever identity notifies and every [`POLL`], until `stop`.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let changed = Arc::new(Notify::new());
        let wake = changed.clone();
        let listener = tokio::spawn(storage::db::listen(
            self.db.login(),
            storage::identity::revocations::CHANNEL,
            move |_| wake.notify_one(),
            stop.clone(),
        ));
        loop {
            if let Err(e) = self.refresh().await {
                tracing::warn!(error = %e, "revoked tokens not read; tokens are refused once the last reading is 2 s old");
            }
            tokio::select! {
                _ = changed.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
                _ = stop.changed() => break,
            }
        }
        listener.abort();
    }
}
