//! The registry: finds or starts the actor of an event and hands it seat requests for its
//! ticket types, for the events whose shard this node holds. It follows what the node holds:
//! the actors of a shard that is lost (or taken again at a new epoch) stop, and when a shard
//! is gained the actors whose reservations still have to expire start, so their timers exist
//! again on the new owner.

use super::event::{EventActor, EventArgs, EventMsg};
use super::ticket_type::{self, Job};
use crate::cluster::{Held, Ownership};
use domain::clock::Clock;
use domain::cluster::{ShardId, shard_of};
use domain::config::{TicketingConfig, TicketingMode};
use ractor::{Actor, ActorRef, ActorStatus};
use std::collections::HashMap;
use std::sync::Arc;
use storage::Database;
use storage::cluster::{Fence, Lease};
use storage::events::registrations;
use storage::events::seats::{SeatOutcome, SeatRequest};
use tokio::sync::{Mutex, oneshot, watch};
use uuid::Uuid;

/// Why a request got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TicketingError {
    /// This node does not hold the event's shard (any more): its owner answers.
    Moved(String),
    /// The database cannot be reached (or ended the session): worth a retry.
    Unavailable(String),
    /// The actor or the database failed.
    Failed(String),
}

impl std::fmt::Display for TicketingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TicketingError::Moved(why) => write!(f, "the event's shard is not held here: {why}"),
            TicketingError::Unavailable(why) => write!(f, "the database is unavailable: {why}"),
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
            other => TicketingError::Failed(other.to_string()),
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
    /// Running event actors: read on every request without waiting.
    actors: std::sync::Mutex<HashMap<Uuid, Running>>,
    /// Held while an event actor starts, so one event gets one actor.
    starting: Mutex<()>,
}

fn alive(actor: &ActorRef<EventMsg>) -> bool {
    matches!(
        actor.get_status(),
        ActorStatus::Running | ActorStatus::Starting | ActorStatus::Upgrading
    )
}

impl Ticketing {
    /// An empty registry for the events `owner` holds.
    pub fn new(
        db: Database,
        clock: Arc<dyn Clock>,
        config: &TicketingConfig,
        owner: Ownership,
    ) -> Ticketing {
        Ticketing {
            db,
            clock,
            mode: config.mode,
            batch: config.batch,
            idle: std::time::Duration::from_secs(config.idle_seconds.max(1)),
            owner,
            actors: std::sync::Mutex::new(HashMap::new()),
            starting: Mutex::new(()),
        }
    }

    /// What this node owns.
    pub fn ownership(&self) -> &Ownership {
        &self.owner
    }

    /// Whether this node holds the shard of `event` now.
    pub fn holds(&self, event: Uuid) -> bool {
        self.owner.lease(shard_of(event)).is_some()
    }

    fn running_actor(&self, event: Uuid, lease: Lease) -> Option<ActorRef<EventMsg>> {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors
            .get(&event)
            .filter(|r| r.lease == lease && alive(&r.actor))
            .map(|r| r.actor.clone())
    }

    /// The running actor of `event` under `fence`, started if needed.
    async fn actor(
        &self,
        event: Uuid,
        fence: &Fence,
    ) -> Result<ActorRef<EventMsg>, TicketingError> {
        let lease = fence.leases()[0];
        if let Some(actor) = self.running_actor(event, lease) {
            return Ok(actor);
        }
        let _starting = self.starting.lock().await;
        if let Some(actor) = self.running_actor(event, lease) {
            return Ok(actor);
        }
        let args = EventArgs {
            db: self.db.clone(),
            clock: self.clock.clone(),
            event,
            batch: self.batch,
            idle: self.idle,
            fence: fence.clone(),
            owner: self.owner.clone(),
        };
        let (actor, _) = Actor::spawn(None, EventActor, args)
            .await
            .map_err(|e| TicketingError::Failed(e.to_string()))?;
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
        if let Some(old) = replaced {
            stop(&old.actor);
        }
        Ok(actor)
    }

    /// Asks for a seat of `ticket_type` at `event`.
    pub async fn reserve(
        &self,
        event: Uuid,
        ticket_type: Uuid,
        request: SeatRequest,
    ) -> Result<SeatOutcome, TicketingError> {
        let Some(fence) = self.owner.fence_of(event) else {
            return Err(TicketingError::Moved(format!(
                "shard {} of event {event}",
                shard_of(event)
            )));
        };
        if self.mode == TicketingMode::Direct {
            return ticket_type::direct(
                &self.db,
                &fence,
                &self.owner,
                ticket_type,
                &request,
                self.clock.now(),
            )
            .await;
        }
        // An actor that stopped (idle) between lookup and send is replaced once.
        for _ in 0..2 {
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
                self.actors
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&event);
                continue;
            }
            match answer.await {
                Ok(outcome) => return outcome,
                // The actor stopped with the request still in its mailbox (idle, or its shard
                // moved): the request was not judged, so it goes to a fresh actor (the stopped
                // one no longer counts as running), whose own fence tells whether the shard
                // is still here.
                Err(_) => continue,
            }
        }
        Err(TicketingError::Moved(
            "the event's actor stopped twice before answering".into(),
        ))
    }

    /// Follows what the node holds until `stop` changes: stops the actors of shards lost and
    /// wakes, for shards gained, the actors whose reservations still have to expire.
    pub async fn follow(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        let mut changes = self.owner.changes();
        let mut known = Held::default();
        loop {
            let now = changes.borrow_and_update().clone();
            self.stop_outside(&now);
            let gained: Vec<ShardId> = now
                .0
                .iter()
                .filter(|(shard, epoch)| known.0.get(shard) != Some(epoch))
                .map(|(shard, _)| *shard)
                .collect();
            if !gained.is_empty() {
                match self.wake_pending(&gained).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(
                        actors = n,
                        shards = gained.len(),
                        "ticket-type actors woken for pending reservations"
                    ),
                    Err(e) => tracing::warn!(error = %e, "could not wake ticket-type actors"),
                }
            }
            known = now;
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

    /// Starts the actors of every ticket type of `shards` whose reservations still have to
    /// expire, so their timers exist again after a restart, a crash or a hand-over.
    async fn wake_pending(&self, shards: &[ShardId]) -> Result<usize, TicketingError> {
        if self.mode == TicketingMode::Direct {
            return Ok(0);
        }
        let ids: Vec<i16> = shards.iter().map(|s| s.as_i16()).collect();
        let pending = registrations::with_pending_expiry(&self.db, &ids)
            .await
            .map_err(|e| TicketingError::of(&e))?;
        let mut woken = 0;
        for (event, ticket_type) in &pending {
            // The shard may have gone again meanwhile.
            let Some(fence) = self.owner.fence_of(*event) else {
                continue;
            };
            let actor = self.actor(*event, &fence).await?;
            let _ = actor.send_message(EventMsg::Wake(*ticket_type));
            woken += 1;
        }
        Ok(woken)
    }

    /// Event actors running now.
    pub async fn running(&self) -> usize {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors
            .values()
            .filter(|r| matches!(r.actor.get_status(), ActorStatus::Running))
            .count()
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
    }
}

fn stop(actor: &ActorRef<EventMsg>) {
    actor.stop_children(None);
    actor.stop(None);
}
