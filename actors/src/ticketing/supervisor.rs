//! The supervisor of a node's event actors: every event actor is started linked to it, so a
//! failure (a panic, a database error while it starts or wakes) is seen, logged and counted
//! instead of vanishing. A failed event actor is not started again eagerly: the requests it
//! held went back to the registry, which starts a fresh one (it reloads from the database) for
//! the next of them. The supervisor itself never fails; should it be gone, a new one starts.
//! Every event actor that ends, stopped or failed, is reported (`Ended`), so the registry lets
//! go of its handle: a handle keeps the stopped actor's mailbox allocated.

use super::event::{EventActor, EventArgs, EventMsg};
use ractor::{
    Actor, ActorId, ActorProcessingErr, ActorRef, ActorStatus, SpawnErr, SupervisionEvent,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Mutex;

/// Told of each event actor that ended, by its id.
pub type Ended = Arc<dyn Fn(ActorId) + Send + Sync>;

/// Starts event actors under a supervisor; cheap to clone.
#[derive(Clone)]
pub struct Supervisor {
    actor: Arc<Mutex<Option<ActorRef<()>>>>,
    watch: Watch,
}

/// What the supervisor keeps: the failures counted, and whom to tell of an actor's end.
#[derive(Clone)]
struct Watch {
    failures: Arc<AtomicU64>,
    ended: Ended,
}

impl Supervisor {
    /// A supervisor that tells `ended` of every event actor that ends.
    pub fn new(ended: Ended) -> Supervisor {
        Supervisor {
            actor: Arc::default(),
            watch: Watch {
                failures: Arc::default(),
                ended,
            },
        }
    }

    /// Starts the actor of an event, linked to the supervisor.
    pub async fn spawn(&self, args: EventArgs) -> Result<ActorRef<EventMsg>, SpawnErr> {
        let supervisor = self.running().await?;
        let (actor, _) = Actor::spawn_linked(None, EventActor, args, supervisor.get_cell()).await?;
        Ok(actor)
    }

    /// Event actors that failed so far (panicked, or stopped on an error).
    pub fn failures(&self) -> u64 {
        self.watch.failures.load(Ordering::Relaxed)
    }

    /// Stops the supervisor and every event actor under it.
    pub async fn stop(&self) {
        if let Some(actor) = self.actor.lock().await.take() {
            actor.stop_children(None);
            actor.stop(None);
        }
    }

    async fn running(&self) -> Result<ActorRef<()>, SpawnErr> {
        let mut slot = self.actor.lock().await;
        if let Some(actor) = slot.as_ref().filter(|a| {
            matches!(
                a.get_status(),
                ActorStatus::Running | ActorStatus::Starting | ActorStatus::Upgrading
            )
        }) {
            return Ok(actor.clone());
        }
        let (actor, _) = Actor::spawn(None, EventSupervisor, self.watch.clone()).await?;
        *slot = Some(actor.clone());
        Ok(actor)
    }
}

struct EventSupervisor;

impl Actor for EventSupervisor {
    type Msg = ();
    type State = Watch;
    type Arguments = Watch;

    async fn pre_start(&self, _: ActorRef<()>, watch: Watch) -> Result<Watch, ActorProcessingErr> {
        Ok(watch)
    }

    async fn handle_supervisor_evt(
        &self,
        _: ActorRef<()>,
        message: SupervisionEvent,
        watch: &mut Watch,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisionEvent::ActorFailed(cell, error) => {
                watch.failures.fetch_add(1, Ordering::Relaxed);
                tracing::error!(actor = %cell.get_id(), %error,
                    "event actor failed; the next request for the event starts it again");
                (watch.ended)(cell.get_id());
            }
            SupervisionEvent::ActorTerminated(cell, ..) => (watch.ended)(cell.get_id()),
            _ => {}
        }
        Ok(())
    }
}
