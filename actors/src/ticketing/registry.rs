//! The registry: finds or starts the actor of a ticket type and forwards a request to it.

use super::ticket_type::{self, Job};
use domain::clock::Clock;
use domain::config::{TicketingConfig, TicketingMode};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use storage::Database;
use storage::events::seats::{SeatOutcome, SeatRequest};
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

/// Requests waiting per actor before senders wait too (back-pressure).
const MAILBOX: usize = 4096;

/// Why a request got no answer.
#[derive(Debug)]
pub struct TicketingError(pub String);

impl std::fmt::Display for TicketingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TicketingError {}

/// The ticket-type actors of this process.
pub struct Ticketing {
    db: Database,
    clock: Arc<dyn Clock>,
    mode: TicketingMode,
    batch: usize,
    actors: Mutex<HashMap<Uuid, mpsc::Sender<Job>>>,
}

impl Ticketing {
    /// An empty registry.
    pub fn new(db: Database, clock: Arc<dyn Clock>, config: &TicketingConfig) -> Ticketing {
        Ticketing {
            db,
            clock,
            mode: config.mode,
            batch: config.batch,
            actors: Mutex::new(HashMap::new()),
        }
    }

    fn mailbox(&self, ticket_type: Uuid) -> mpsc::Sender<Job> {
        let mut actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(sender) = actors.get(&ticket_type)
            && !sender.is_closed()
        {
            return sender.clone();
        }
        let (sender, receiver) = mpsc::channel(MAILBOX);
        tokio::spawn(ticket_type::run(
            self.db.clone(),
            self.clock.clone(),
            ticket_type,
            self.batch,
            receiver,
        ));
        actors.insert(ticket_type, sender.clone());
        sender
    }

    /// Asks the ticket type's actor for a seat.
    pub async fn reserve(
        &self,
        ticket_type: Uuid,
        request: SeatRequest,
    ) -> Result<SeatOutcome, TicketingError> {
        if self.mode == TicketingMode::Direct {
            return ticket_type::direct(&self.db, ticket_type, &request, self.clock.now())
                .await
                .map_err(TicketingError);
        }
        // An actor that stopped (idle, or panicked) between lookup and send is replaced once.
        for _ in 0..2 {
            let (reply, answer) = oneshot::channel();
            let job = Job {
                request: request.clone(),
                reply,
            };
            if self.mailbox(ticket_type).send(job).await.is_err() {
                self.actors
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&ticket_type);
                continue;
            }
            return match answer.await {
                Ok(outcome) => outcome.map_err(TicketingError),
                Err(_) => Err(TicketingError(
                    "the ticket-type actor stopped before answering".into(),
                )),
            };
        }
        Err(TicketingError("no ticket-type actor".into()))
    }

    /// Actors running now.
    pub fn running(&self) -> usize {
        let actors = self.actors.lock().unwrap_or_else(|p| p.into_inner());
        actors.values().filter(|s| !s.is_closed()).count()
    }
}
