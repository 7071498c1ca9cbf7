//! This node's membership of the events cluster: it heartbeats, renews the shard leases it
//! holds, hands back the shards another live member should own, claims its own share when
//! free, and publishes what it holds so the ticketing actors and timers run for those shards
//! only. A node that cannot renew in time considers its leases gone before they expire in the
//! database, so it stops first and another node takes over after; every round runs under that
//! deadline, so a database that stops answering without an error is noticed as well.

use domain::clock::{Clock, SystemClock, too_far_off};
use domain::cluster::{ShardId, Standing, Sworn, share_of, sharing, sworn_in};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::Database;
use storage::cluster::{self, Lease};
use tokio::sync::watch;

/// How a node takes part.
#[derive(Clone, Debug)]
pub struct MembershipSettings {
    /// The node's name, unique in the cluster.
    pub node: String,
    /// Where its events service answers (for forwarding and the gateway's map).
    pub address: String,
    /// How often it heartbeats and renews.
    pub renew_every: Duration,
    /// How long a lease lasts without renewal.
    pub lease_ttl: Duration,
    /// Its fingerprint of the cluster secrets (`domain::trust::cluster_fingerprint`): only
    /// members with the cluster's take shards.
    pub fingerprint: String,
}

impl MembershipSettings {
    /// A member silent for this long no longer counts when shards are shared out.
    pub fn member_timeout(&self) -> Duration {
        self.lease_ttl
    }

    /// How long before its expiry in the database this node stops trusting a lease: the
    /// margin covers the time its renewal spent on the way.
    fn trust_for(&self) -> Duration {
        self.lease_ttl.saturating_sub(self.renew_every)
    }
}

/// The shards this node holds now, with their epochs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Held(pub BTreeMap<ShardId, i64>);

impl Held {
    /// The lease of `shard`, if held.
    pub fn lease(&self, shard: ShardId) -> Option<Lease> {
        self.0.get(&shard).map(|epoch| Lease {
            shard,
            epoch: *epoch,
        })
    }

    fn of(leases: &[Lease]) -> Held {
        Held(leases.iter().map(|l| (l.shard, l.epoch)).collect())
    }
}

/// Counts for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MembershipCounts {
    /// Successful renewal rounds.
    pub renewals: u64,
    /// Shards taken.
    pub claimed: u64,
    /// Shards handed back to another member.
    pub handed_over: u64,
    /// Shards lost (renewal failed or came too late).
    pub lost: u64,
    /// Whether the node has held its whole share since it joined or last lost its leases (it
    /// is ready to serve).
    pub settled: bool,
    /// Whether the node was refused shards for holding other secrets than the cluster's.
    pub refused: bool,
    /// Whether the node owns no shards because its clock is off from the database's by more
    /// than `domain::clock::MAX_SKEW`.
    pub skewed: bool,
}

/// One node's membership loop.
pub struct Membership {
    db: Database,
    settings: MembershipSettings,
    /// The clock the node's actors judge deadlines by, checked against the database's.
    clock: Arc<dyn Clock>,
    held: watch::Sender<Held>,
    counts: watch::Sender<MembershipCounts>,
    /// The last standing read (`standing`).
    standing: std::sync::Mutex<Standing>,
}

impl Membership {
    /// A membership publishing what it holds through the returned receivers.
    pub fn new(
        db: Database,
        settings: MembershipSettings,
    ) -> (
        Membership,
        watch::Receiver<Held>,
        watch::Receiver<MembershipCounts>,
    ) {
        let (held, held_rx) = watch::channel(Held::default());
        let (counts, counts_rx) = watch::channel(MembershipCounts::default());
        (
            Membership {
                db,
                settings,
                clock: Arc::new(SystemClock),
                held,
                counts,
                standing: Default::default(),
            },
            held_rx,
            counts_rx,
        )
    }

    /// The membership of a node whose actors judge deadlines by `clock`: it owns shards only
    /// while that clock agrees with the database's.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Membership {
        self.clock = clock;
        self
    }

    /// One round at once, so a node starts serving with its share (when it is free).
    pub async fn join(&self) -> Result<(), storage::DbError> {
        self.round().await
    }

    /// Joins (`join`, answered before this returns) and then runs (`run`) in a thread of its
    /// own, with a runtime of its own; the returned task ends when the membership has left.
    ///
    /// Why a thread of its own: on the request runtime, each answer PostgreSQL sends to a
    /// round waits in the run queue behind every request ready at that moment. An events node
    /// capped at a tenth of a core with 256 requests in flight took longer than a lease's
    /// trust for its rounds, dropped every shard again and again and answered 503 to most of
    /// a sale (bench/README.md). In a thread of its own, the operating system's scheduler runs
    /// the round as soon as its answer arrives, whatever the requests do. `db` should be
    /// unused so far: its connections are then made, and driven, on that runtime.
    pub async fn start(self, stop: watch::Receiver<bool>) -> tokio::task::JoinHandle<()> {
        let node = self.settings.node.clone();
        let (first, left) = crate::dedicated::start("cluster-member", move |joined| async move {
            let _ = joined.send(self.join().await);
            self.run(stop).await;
        })
        .await;
        match first {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                tracing::warn!(node = %node, error = %e, "first cluster round failed; retrying in the background")
            }
            None => {
                tracing::error!(node = %node, "the cluster membership ended before its first round: this node takes no shards")
            }
        }
        tokio::spawn(async move {
            // Dropped unsent: the thread panicked, or never started. The node's readiness
            // follows (`Ownership::is_settled` counts a membership gone as not settled).
            if left.await.is_err() {
                tracing::error!(node = %node, "the cluster membership ended without leaving: this node holds no shards it can trust");
            }
        })
    }

    /// Runs until `stop` changes, then hands every shard back and leaves.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut trusted_until: Option<Instant> = Some(Instant::now() + self.settings.trust_for());
        let mut rounds: u64 = 0;
        loop {
            rounds += 1;
            // Earlier incarnations of restarted nodes stay listed for an hour, then go.
            if rounds.is_multiple_of(1000)
                && let Err(e) = cluster::forget_silent(&self.db, Duration::from_secs(3600)).await
            {
                tracing::debug!(error = %e, "silent members not forgotten");
            }
            let started = Instant::now();
            // A round that hangs (a connection cut without an error) must not keep the node
            // believing in leases it cannot prove: it ends when the trust would.
            let deadline = trusted_until.unwrap_or(started + self.settings.trust_for());
            let round = tokio::time::timeout_at(deadline.into(), self.round()).await;
            match round {
                Ok(Ok(())) => trusted_until = Some(started + self.settings.trust_for()),
                failed => {
                    match failed {
                        Ok(Err(e)) => {
                            tracing::warn!(node = %self.settings.node, error = %e, "cluster round failed")
                        }
                        _ => {
                            tracing::warn!(node = %self.settings.node, "cluster round did not finish before the leases' trust ran out")
                        }
                    }
                    // Leases not renewed in time may be someone else's by now: stop using them.
                    if trusted_until.is_some_and(|t| Instant::now() >= t) {
                        self.lose_all();
                        trusted_until = None;
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(self.settings.renew_every) => {}
                _ = stop.changed() => break,
            }
        }
        // Stop using the shards first, then give them back for another node to take at once.
        self.held.send_replace(Held::default());
        // Bounded: a database out of reach lets the leases run out instead.
        match tokio::time::timeout(
            self.settings.lease_ttl,
            cluster::leave(&self.db, &self.settings.node),
        )
        .await
        {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(node = %self.settings.node, error = %e, "could not leave the cluster cleanly")
            }
            Err(_) => {
                tracing::warn!(node = %self.settings.node, "leaving the cluster took too long; its leases run out instead")
            }
        }
    }

    /// One heartbeat: renew, hand back, claim, publish.
    async fn round(&self) -> Result<(), storage::DbError> {
        let s = &self.settings;
        // A test's clock, moved on purpose, reports no offset.
        let now = self.clock.tells_real_time().then(|| self.clock.now());
        let off = cluster::heartbeat(&self.db, &s.node, &s.address, &s.fingerprint, now).await?;
        // Reservations, sales windows and reminders are judged by this node's clock while it
        // owns their shards: a clock that is off would expire them early or late.
        let skewed = too_far_off(off);
        if skewed && !self.counts.borrow().skewed {
            tracing::error!(node = %s.node, off_ms = off.num_milliseconds(),
                "this node's clock differs from the database's by more than a second: it owns no shards until it is set right");
        }
        let renewed = cluster::renew(&self.db, &s.node, s.lease_ttl).await?;
        let before = self.held.borrow().clone();
        let mut held = Held::of(&renewed);
        let lost = before
            .0
            .iter()
            .filter(|(shard, epoch)| held.0.get(shard) != Some(epoch))
            .count() as u64;
        let live: Vec<Sworn> = cluster::live_members(&self.db, s.member_timeout())
            .await?
            .into_iter()
            .map(|m| Sworn {
                clock_right: !too_far_off(m.clock_off),
                node: m.node,
                joined_at: m.joined_at,
                fingerprint: m.fingerprint,
            })
            .collect();
        let refused = !sworn_in(&live).contains(&s.node);
        let members = sharing(&live);
        if refused && !self.counts.borrow().refused {
            tracing::error!(node = %s.node, cluster = ?members,
                "this node's SERVICE_SECRET or JWT_SECRET differ from the cluster's (those of its longest-standing member): it takes no shards; give it the cluster's secrets, or stop the members left over from another start");
        }
        // A node that is not sworn in, or whose clock is off, owns no share: whatever it held
        // goes back below.
        let mine = if skewed {
            Vec::new()
        } else {
            share_of(&s.node, &members, &self.standing().await)
        };
        // What another member should own goes back: first out of use, then released.
        let give_back: Vec<ShardId> = held
            .0
            .keys()
            .copied()
            .filter(|shard| !mine.contains(shard))
            .collect();
        if !give_back.is_empty() {
            for shard in &give_back {
                held.0.remove(shard);
            }
            self.held.send_replace(held.clone());
            cluster::release(&self.db, &s.node, &give_back).await?;
        }
        let wanted: Vec<ShardId> = mine
            .iter()
            .copied()
            .filter(|shard| !held.0.contains_key(shard))
            .collect();
        let claimed = cluster::claim(&self.db, &s.node, &wanted, s.lease_ttl).await?;
        held.0.extend(claimed.iter().map(|l| (l.shard, l.epoch)));
        if held != *self.held.borrow() {
            tracing::info!(node = %s.node, shards = held.0.len(), claimed = claimed.len(),
                handed_over = give_back.len(), lost, "cluster shards changed");
        }
        // Ready once it has held its whole share; a later plan change (an event published
        // moves a shard to even the load out) keeps it ready while the shard passes over,
        // since it serves every shard it holds all along. Losing its leases, or its standing,
        // takes readiness away until it holds its share again.
        let holds_share = mine.iter().all(|shard| held.0.contains_key(shard));
        // A renewal that changed nothing wakes nobody: what follows the shards (the timer,
        // the actors' registry, the hand-over) would otherwise look again several times a
        // second for no reason.
        self.held.send_if_modified(|current| {
            let changed = *current != held;
            if changed {
                *current = held;
            }
            changed
        });
        self.counts.send_modify(|c| {
            c.refused = refused;
            c.skewed = skewed;
            c.settled = ((c.settled && lost == 0) || holds_share) && !refused && !skewed;
            c.renewals += 1;
            c.claimed += claimed.len() as u64;
            c.handed_over += give_back.len() as u64;
            c.lost += lost;
        });
        Ok(())
    }

    /// The events on sale by shard and who holds each, or the last read when this one
    /// fails: the leases, renewed already, are what keeps the node serving, and a plan a
    /// few rounds old only evens the load out later.
    async fn standing(&self) -> Standing {
        match cluster::standing(&self.db).await {
            Ok(standing) => {
                if let Ok(mut last) = self.standing.lock() {
                    last.clone_from(&standing);
                }
                standing
            }
            Err(e) => {
                tracing::warn!(node = %self.settings.node, error = %e, "the events on sale by shard could not be read; the shards are shared out as last read");
                self.standing
                    .lock()
                    .map(|last| last.clone())
                    .unwrap_or_default()
            }
        }
    }

    fn lose_all(&self) {
        let lost = self.held.borrow().0.len() as u64;
        if lost > 0 {
            tracing::warn!(node = %self.settings.node, lost, "cluster leases not renewed in time: shards dropped");
        }
        self.held.send_replace(Held::default());
        self.counts.send_modify(|c| {
            c.lost += lost;
            c.settled = false;
        });
    }
}
