//! The registry: finds or starts the actor of an event and hands it seat requests for its
//! ticket types; on start it wakes the actors whose reservations still have to expire.

use super::event::{EventActor, EventArgs, EventMsg};
use super::ticket_type::{self, Job};
use domain::clock::Clock;
use domain::config::{TicketingConfig, TicketingMode};
use ractor::{Actor, ActorRef, ActorStatus};
use std::collections::HashMap;
use std::sync::Arc;
use storage::Database;
use storage::events::registrations;
use storage::events::seats::{SeatOutcome, SeatRequest};
use tokio::sync::{Mutex, oneshot};
use uuid::Uuid;

/// Why a request got no answer.
#[derive(Debug)]
pub struct TicketingError(pub String);

impl std::fmt::Display for TicketingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TicketingError {}

/// The event actors of this process.
pub struct Ticketing {
    db: Database,
    clock: Arc<dyn Clock>,
    mode: TicketingMode,
    batch: usize,
    idle: std::time::Duration,
    /// Running event actors: read on every request without waiting.
    actors: std::sync::Mutex<HashMap<Uuid, ActorRef<EventMsg>>>,
    /// Held while an event actor starts, so one event gets one actor.
    starting: Mutex<()>,
}

impl Ticketing {
    /// An empty registry.
    pub fn new(db: Database, clock: Arc<dyn Clock>, config: &TicketingConfig) -> Ticketing {
        Ticketing {
            db,
            clock,
            mode: config.mode,
            batch: config.batch,
            idle: std::time::Duration::from_secs(config.idle_seconds.max(1)),
            actors: std::sync::Mutex::new(HashMap::new()),
            starting: Mutex::new(()),
        }
    }

    fn running_actor(&self, event: Uuid) -> Option<ActorRef<EventMsg>> {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors
            .get(&event)
            .filter(|a| {
                matches!(
                    a.get_status(),
                    ActorStatus::Running | ActorStatus::Starting | ActorStatus::Upgrading
                )
            })
            .cloned()
    }

    /// The running actor of `event`, started if needed.
    async fn actor(&self, event: Uuid) -> Result<ActorRef<EventMsg>, TicketingError> {
        if let Some(actor) = self.running_actor(event) {
            return Ok(actor);
        }
        let _starting = self.starting.lock().await;
        if let Some(actor) = self.running_actor(event) {
            return Ok(actor);
        }
        let args = EventArgs {
            db: self.db.clone(),
            clock: self.clock.clone(),
            event,
            batch: self.batch,
            idle: self.idle,
        };
        let (actor, _) = Actor::spawn(None, EventActor, args)
            .await
            .map_err(|e| TicketingError(e.to_string()))?;
        self.actors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(event, actor.clone());
        Ok(actor)
    }

    /// Asks for a seat of `ticket_type` at `event`.
    pub async fn reserve(
        &self,
        event: Uuid,
        ticket_type: Uuid,
        request: SeatRequest,
    ) -> Result<SeatOutcome, TicketingError> {
        if self.mode == TicketingMode::Direct {
            return ticket_type::direct(&self.db, ticket_type, &request, self.clock.now())
                .await
                .map_err(TicketingError);
        }
        // An actor that stopped (idle) between lookup and send is replaced once.
        for _ in 0..2 {
            let (reply, answer) = oneshot::channel();
            let job = Job {
                request: request.clone(),
                reply,
            };
            let actor = self.actor(event).await?;
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
            return match answer.await {
                Ok(outcome) => outcome.map_err(TicketingError),
                Err(_) => Err(TicketingError(
                    "the ticket-type actor stopped before answering".into(),
                )),
            };
        }
        Err(TicketingError("no event actor".into()))
    }

    /// Starts the actors of every ticket type whose reservations still have to expire, so
    /// their timers exist again after a restart or a crash.
    pub async fn wake_pending(&self) -> Result<usize, TicketingError> {
        if self.mode == TicketingMode::Direct {
            return Ok(0);
        }
        let pending = registrations::with_pending_expiry(&self.db)
            .await
            .map_err(|e| TicketingError(e.to_string()))?;
        for (event, ticket_type) in &pending {
            let actor = self.actor(*event).await?;
            let _ = actor.send_message(EventMsg::Wake(*ticket_type));
        }
        Ok(pending.len())
    }

    /// Event actors running now.
    pub async fn running(&self) -> usize {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors
            .values()
            .filter(|a| matches!(a.get_status(), ActorStatus::Running))
            .count()
    }

    /// Stops every actor (a clean shutdown).
    pub async fn stop_all(&self) {
        let actors: Vec<ActorRef<EventMsg>> = self
            .actors
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, a)| a)
            .collect();
        for actor in actors {
            actor.stop_children(None);
            actor.stop(None);
        }
    }
}
