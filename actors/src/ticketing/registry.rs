//! The registry: finds or starts the actor of an event and hands it seat requests for its
//! ticket types, for the events whose shard this node holds. It follows what the node holds:
//! the actors of a shard that is lost (or taken again at a new epoch) stop. Deadlines are not
//! the actors' (the node's reservation timer reads them for every held shard), so a gained
//! shard needs no actor until someone asks for a seat.

use super::committer::Committer;
use super::event::{EventArgs, EventMsg};
use super::first_reads::FirstReads;
use super::supervisor::{Ended, Supervisor};
use super::ticket_type::{self, Job};
use super::timers::Deadlines;
use crate::cluster::{Held, Ownership};
use domain::clock::Clock;
use domain::cluster::shard_of;
use domain::config::{TicketingConfig, TicketingMode};
use ractor::{ActorRef, ActorStatus};
use std::collections::HashMap;
use std::sync::Arc;
use storage::Database;
use storage::broker::Foreground;
use storage::cluster::{Fence, Lease};
use storage::events::seats::{SeatOutcome, SeatRequest};
use tokio::sync::{Mutex, OwnedMutexGuard, oneshot, watch};
use uuid::Uuid;

/// Why a request got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketingError {
    /// This node does not hold the event's shard (any more): its owner answers.
    Moved(String),
    /// The database cannot be reached (or ended the session): worth a retry.
    Unavailable(String),
    /// The seats' transaction lost a lock race more times than it is run again.
    Busy(String),
    /// The actor or the database failed.
    Failed(String),
}

impl std::fmt::Display for TicketingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TicketingError::Moved(why) => write!(f, "the event's shard is not held here: {why}"),
            TicketingError::Unavailable(why) => write!(f, "the database is unavailable: {why}"),
            TicketingError::Busy(why) => write!(f, "the seats are contended: {why}"),
            TicketingError::Failed(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for TicketingError {}

impl TicketingError {
    /// The error of a storage call made under a fence: a refused fence means the shard moved.
    pub fn of(error: &storage::Error) -> TicketingError {
        match error {
            storage::Error::Fenced(f) => TicketingError::Moved(f.to_string()),
            storage::Error::Db(db) if db.is_unavailable() => {
                TicketingError::Unavailable(db.to_string())
            }
            storage::Error::Db(db) if db.is_contention() => TicketingError::Busy(db.to_string()),
            other => TicketingError::Failed(other.to_string()),
        }
    }
}

/// The gates of the events whose actors are starting; an event's gate is forgotten once no
/// one is at it.
#[derive(Default)]
struct StartGates(std::sync::Mutex<HashMap<Uuid, Arc<Mutex<()>>>>);

/// One starter's turn at an event's gate, until dropped.
struct StartTurn<'a> {
    gates: &'a StartGates,
    event: Uuid,
    gate: Arc<Mutex<()>>,
    held: Option<OwnedMutexGuard<()>>,
}

impl StartGates {
    /// Waits for the turn to start `event`'s actor: at most one starter of an event at a
    /// time, and no waiting for another event's.
    async fn turn(&self, event: Uuid) -> StartTurn<'_> {
        let gate = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(event)
            .or_default()
            .clone();
        let held = Some(gate.clone().lock_owned().await);
        StartTurn {
            gates: self,
            event,
            gate,
            held,
        }
    }
}

impl Drop for StartTurn<'_> {
    fn drop(&mut self) {
        self.held = None;
        let mut gates = self.gates.0.lock().unwrap_or_else(|p| p.into_inner());
        // Clones are made under this lock only, so two (the map's and this one) means nobody
        // else holds or awaits the gate.
        if Arc::strong_count(&self.gate) == 2 {
            gates.remove(&self.event);
        }
    }
}

/// A running event actor and the lease it works under.
struct Running {
    lease: Lease,
    actor: ActorRef<EventMsg>,
}

/// The event actors of this process.
pub struct Ticketing {
    db: Database,
    clock: Arc<dyn Clock>,
    mode: TicketingMode,
    batch: usize,
    idle: std::time::Duration,
    owner: Ownership,
    /// How often the membership renews (and so publishes a change of what is held).
    round: std::time::Duration,
    /// Running event actors: read on every request without waiting. An actor's entry goes
    /// when it ends (the supervisor tells), or when a request finds it stopped.
    actors: Arc<std::sync::Mutex<HashMap<Uuid, Running>>>,
    /// Each event whose actor is starting, with the gate its starters pass one at a time, so
    /// one event gets one actor while the starts of many events (each reads the database) run
    /// side by side: an on-sale of a thousand events starts a thousand actors at once.
    starting: StartGates,
    /// Every event actor runs under it.
    supervisor: Supervisor,
    /// Commits the ready batches of all of the node's ticket types.
    committer: Committer,
    /// New reservation deadlines, for the node's timer.
    deadlines: Deadlines,
    /// What starting actors read, read together.
    first_reads: FirstReads,
    /// The seat requests in flight, which the node's heavy consumers give way to.
    foreground: Foreground,
}

fn alive(actor: &ActorRef<EventMsg>) -> bool {
    matches!(
        actor.get_status(),
        ActorStatus::Running | ActorStatus::Starting | ActorStatus::Upgrading
    )
}

impl Ticketing {
    /// An empty registry for the events `owner` holds, whose membership renews every `round`
    /// (its committer's workers start now, on the current runtime).
    pub fn new(
        db: Database,
        clock: Arc<dyn Clock>,
        config: &TicketingConfig,
        owner: Ownership,
        round: std::time::Duration,
    ) -> Ticketing {
        let actors: Arc<std::sync::Mutex<HashMap<Uuid, Running>>> = Arc::default();
        let kept = Arc::downgrade(&actors);
        let ended: Ended = Arc::new(move |id| {
            if let Some(actors) = kept.upgrade() {
                actors
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|_, running| running.actor.get_id() != id);
            }
        });
        Ticketing {
            round,
            clock,
            mode: config.mode,
            batch: config.batch,
            idle: std::time::Duration::from_secs(config.idle_seconds.max(1)),
            owner,
            actors,
            starting: StartGates::default(),
            supervisor: Supervisor::new(ended),
            committer: Committer::start(db.clone(), config.committers),
            deadlines: Deadlines::default(),
            first_reads: FirstReads::start(&db),
            foreground: Foreground::default(),
            db,
        }
    }

    /// The seat requests in flight on this node.
    pub fn foreground(&self) -> &Foreground {
        &self.foreground
    }

    /// Where new reservation deadlines are announced (the node's timer listens).
    pub fn deadlines(&self) -> Deadlines {
        self.deadlines.clone()
    }

    /// What this node owns.
    pub fn ownership(&self) -> &Ownership {
        &self.owner
    }

    /// Whether this node holds the shard of `event` now.
    pub fn holds(&self, event: Uuid) -> bool {
        self.owner.lease(shard_of(event)).is_some()
    }

    /// The running actor of `event`, if one runs under `lease`; a stale fence (an actor of a
    /// newer epoch runs) is refused as moved, so a retry reads the fence again.
    fn running_actor(
        &self,
        event: Uuid,
        lease: Lease,
    ) -> Result<Option<ActorRef<EventMsg>>, TicketingError> {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        match actors.get(&event).filter(|r| alive(&r.actor)) {
            Some(r) if r.lease == lease => Ok(Some(r.actor.clone())),
            Some(r) if r.lease.epoch > lease.epoch => Err(TicketingError::Moved(format!(
                "a fence of epoch {} is older than the running actor's {}",
                lease.epoch, r.lease.epoch
            ))),
            _ => Ok(None),
        }
    }

    /// The running actor of `event` under `fence`, started if needed. Fences never go
    /// backwards: an actor is replaced only by one of a newer epoch.
    async fn actor(
        &self,
        event: Uuid,
        fence: &Fence,
    ) -> Result<ActorRef<EventMsg>, TicketingError> {
        let lease = fence.leases()[0];
        if let Some(actor) = self.running_actor(event, lease)? {
            return Ok(actor);
        }
        // Boxed: starting an actor is rare and its future large; inline it would size the
        // future of every seat request.
        Box::pin(self.start(event, fence)).await
    }

    /// Starts the actor of `event` under `fence`, unless another request started it while
    /// this one waited its turn.
    async fn start(
        &self,
        event: Uuid,
        fence: &Fence,
    ) -> Result<ActorRef<EventMsg>, TicketingError> {
        let lease = fence.leases()[0];
        let _turn = self.starting.turn(event).await;
        if let Some(actor) = self.running_actor(event, lease)? {
            return Ok(actor);
        }
        // The shard may have moved while this request waited its turn to start the actor.
        if self.owner.lease(lease.shard) != Some(lease) {
            return Err(TicketingError::Moved(format!(
                "shard {} moved on from epoch {}",
                lease.shard, lease.epoch
            )));
        }
        let args = EventArgs {
            db: self.db.clone(),
            clock: self.clock.clone(),
            event,
            batch: self.batch,
            idle: self.idle,
            fence: fence.clone(),
            owner: self.owner.clone(),
            committer: self.committer.clone(),
            deadlines: self.deadlines.clone(),
            first_reads: self.first_reads.clone(),
        };
        let actor = self.supervisor.spawn(args).await.map_err(|e| {
            TicketingError::Unavailable(format!("the event's actor did not start: {e}"))
        })?;
        let replaced = self
            .actors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                event,
                Running {
                    lease,
                    actor: actor.clone(),
                },
            );
        // An actor of an earlier lease of the shard must not write any more.
        if let Some(old) = replaced.filter(|old| old.actor.get_id() != actor.get_id()) {
            stop(&old.actor);
        }
        Ok(actor)
    }

    /// Asks for a seat of `ticket_type` at `event`. Each attempt reads the fence again, and
    /// an answer is awaited only while the lease it was asked under holds: a node that can no
    /// longer prove its lease answers "moved" at once rather than when its database answers.
    pub async fn reserve(
        &self,
        event: Uuid,
        ticket_type: Uuid,
        request: SeatRequest,
    ) -> Result<SeatOutcome, TicketingError> {
        let _busy = self.foreground.enter();
        let moved = || TicketingError::Moved(format!("shard {} of event {event}", shard_of(event)));
        if self.mode == TicketingMode::Direct {
            let fence = self.owner.fence_of(event).ok_or_else(moved)?;
            // Boxed: the transaction's future is kilobytes, which inline would size (and have
            // every layer above move) each request's future in the actors' mode too.
            return Box::pin(ticket_type::direct(
                &self.db,
                &fence,
                &self.owner,
                ticket_type,
                &request,
                self.clock.now(),
            ))
            .await;
        }
        // An actor that stopped (idle, or replaced) between lookup and send is replaced once.
        for _ in 0..3 {
            let fence = self.owner.fence_of(event).ok_or_else(moved)?;
            let lease = fence.leases()[0];
            let (reply, answer) = oneshot::channel();
            let job = Job {
                request: request.clone(),
                reply,
            };
            let actor = self.actor(event, &fence).await?;
            if actor
                .send_message(EventMsg::Seat(ticket_type, Box::new(job)))
                .is_err()
            {
                self.forget(event, &actor);
                continue;
            }
            let outcome = tokio::select! {
                answered = answer => match answered {
                    Ok(outcome) => outcome,
                    // The actor stopped with the request still in its mailbox (idle, failed,
                    // or its shard moved): the request was not judged, so it goes to a fresh
                    // actor, whose own fence tells whether the shard is still here.
                    Err(_) => continue,
                },
                // Judged or not, the seat's transaction cannot commit under this lease any
                // more; a retry with the same key finds the seat if it did.
                () = self.owner.lost(lease) => Err(TicketingError::Moved(format!(
                    "the lease of shard {} ended while the request waited", lease.shard
                ))),
            };
            match outcome {
                Err(TicketingError::Moved(why)) => {
                    // The database refused a lease this node still believes in (it ran out
                    // under it, or was taken): its next round tells which.
                    if self.owner.lease(lease.shard) == Some(lease) {
                        let _ = tokio::time::timeout(self.round * 2, self.owner.lost(lease)).await;
                    }
                    // Held again at a newer epoch (claimed anew): asked again here, under the
                    // new lease, instead of answering 503.
                    if self
                        .owner
                        .lease(lease.shard)
                        .is_some_and(|now| now.epoch > lease.epoch)
                    {
                        continue;
                    }
                    return Err(TicketingError::Moved(why));
                }
                other => return other,
            }
        }
        Err(TicketingError::Moved(
            "the event's actor stopped before answering".into(),
        ))
    }

    /// Forgets `actor` as the running one of `event` (it stopped).
    fn forget(&self, event: Uuid, actor: &ActorRef<EventMsg>) {
        let mut actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        if actors
            .get(&event)
            .is_some_and(|r| r.actor.get_id() == actor.get_id())
        {
            actors.remove(&event);
        }
    }

    /// Follows what the node holds until `stop` changes: stops the actors of shards lost (or
    /// held again at another epoch).
    pub async fn follow(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut changes = self.owner.changes();
        loop {
            let now = changes.borrow_and_update().clone();
            self.stop_outside(&now);
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = stop.changed() => return,
            }
        }
    }

    /// Stops the actors whose lease `held` no longer has.
    fn stop_outside(&self, held: &Held) {
        let mut actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors.retain(|_, running| {
            let keep = held.lease(running.lease.shard) == Some(running.lease);
            if !keep {
                stop(&running.actor);
            }
            keep
        });
    }

    /// Event actors running now.
    pub async fn running(&self) -> usize {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors
            .values()
            .filter(|r| matches!(r.actor.get_status(), ActorStatus::Running))
            .count()
    }

    /// Event actors the registry holds a handle to: those running, and those stopped that it
    /// has not been told of yet.
    pub fn remembered(&self) -> usize {
        self.actors.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The lease the running actor of `event` works under, if one runs.
    pub fn actor_lease(&self, event: Uuid) -> Option<Lease> {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors
            .get(&event)
            .filter(|r| alive(&r.actor))
            .map(|r| r.lease)
    }

    /// Event actors that failed so far.
    pub fn failures(&self) -> u64 {
        self.supervisor.failures()
    }

    /// Stops every actor (a clean shutdown).
    pub async fn stop_all(&self) {
        let actors: Vec<Running> = self
            .actors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, r)| r)
            .collect();
        for running in actors {
            stop(&running.actor);
        }
        self.supervisor.stop().await;
    }
}

fn stop(actor: &ActorRef<EventMsg>) {
    actor.stop_children(None);
    actor.stop(None);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn starts_of_different_events_do_not_wait_for_each_other_and_one_event_starts_once_at_a_time()
     {
        let gates = StartGates::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        let first = gates.turn(a).await;
        // Another event's turn is had while the first is held.
        let other = tokio::time::timeout(Duration::from_secs(1), gates.turn(b)).await;
        assert!(other.is_ok(), "another event's start waited");
        drop(other);
        // The same event's second starter waits for the first.
        let second = tokio::time::timeout(Duration::from_millis(50), gates.turn(a)).await;
        assert!(second.is_err(), "two starters of one event at once");
        let waiter = async {
            let _turn = gates.turn(a).await;
            gates.0.lock().unwrap().len()
        };
        let release = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            drop(first);
        };
        let (left, ()) = tokio::join!(waiter, release);
        // Only its own gate was left while the waiter had its turn, and none once it ended.
        assert_eq!(left, 1);
        assert!(gates.0.lock().unwrap().is_empty());
    }
}
