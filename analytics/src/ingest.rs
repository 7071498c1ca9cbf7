//! The batching actor (ractor) behind `/track`: accepted records wait in memory and are
//! written together when 10,000 are waiting or 200 ms after the first, and whatever is waiting
//! is written when the actor stops, so a clean shutdown loses nothing accepted. A failed write
//! keeps the records for the next attempt (up to a bound, past which the oldest are dropped
//! with an error in the log).

use crate::record::Record;
use crate::store::Store;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::time::Duration;

/// Records written in one insert at most.
pub const BATCH: usize = 10_000;
/// How long the first waiting record waits at most.
pub const LINGER: Duration = Duration::from_millis(200);
/// Records kept while the store fails, at most.
const BACKLOG: usize = 200_000;

/// What the ingest actor is told.
pub enum IngestMsg {
    /// Keep this record.
    Track(Box<Record>),
    /// Write what is waiting.
    Flush,
}

/// The actor's state.
pub struct IngestState {
    store: Store,
    pending: Vec<Record>,
    flush_set: bool,
}

/// The ingest actor.
pub struct IngestActor;

impl Actor for IngestActor {
    type Msg = IngestMsg;
    type State = IngestState;
    type Arguments = Store;

    async fn pre_start(
        &self,
        _myself: ActorRef<IngestMsg>,
        store: Store,
    ) -> Result<IngestState, ActorProcessingErr> {
        Ok(IngestState {
            store,
            pending: Vec::new(),
            flush_set: false,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<IngestMsg>,
        message: IngestMsg,
        state: &mut IngestState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            IngestMsg::Track(record) => {
                state.pending.push(*record);
                if state.pending.len() >= BATCH {
                    flush(state).await;
                } else if !state.flush_set {
                    state.flush_set = true;
                    myself.send_after(LINGER, || IngestMsg::Flush);
                }
            }
            IngestMsg::Flush => {
                state.flush_set = false;
                flush(state).await;
                if !state.pending.is_empty() {
                    // The store failed: try again later.
                    state.flush_set = true;
                    myself.send_after(LINGER * 5, || IngestMsg::Flush);
                }
            }
        }
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<IngestMsg>,
        state: &mut IngestState,
    ) -> Result<(), ActorProcessingErr> {
        flush(state).await;
        if !state.pending.is_empty() {
            tracing::error!(
                lost = state.pending.len(),
                "analytics records not written at shutdown"
            );
        }
        Ok(())
    }
}

async fn flush(state: &mut IngestState) {
    while !state.pending.is_empty() {
        let take = state.pending.len().min(BATCH);
        match state.store.insert(&state.pending[..take]).await {
            Ok(()) => {
                state.pending.drain(..take);
            }
            Err(e) => {
                tracing::warn!(error = %e, waiting = state.pending.len(), "analytics write failed; will retry");
                if state.pending.len() > BACKLOG {
                    let drop = state.pending.len() - BACKLOG;
                    tracing::error!(
                        dropped = drop,
                        "analytics backlog full; oldest records dropped"
                    );
                    state.pending.drain(..drop);
                }
                return;
            }
        }
    }
}

/// The handle `/track` gives records to.
#[derive(Clone)]
pub struct Ingest {
    actor: ActorRef<IngestMsg>,
}

impl Ingest {
    /// Starts the actor.
    pub async fn start(store: Store) -> Result<Ingest, ractor::SpawnErr> {
        let (actor, _) = Actor::spawn(None, IngestActor, store).await?;
        Ok(Ingest { actor })
    }

    /// Accepts a record; false when the actor is gone.
    pub fn track(&self, record: Record) -> bool {
        self.actor
            .send_message(IngestMsg::Track(Box::new(record)))
            .is_ok()
    }

    /// Writes what is waiting and stops (a clean shutdown).
    pub async fn stop(&self) {
        let _ = self
            .actor
            .stop_and_wait(None, Some(Duration::from_secs(30)))
            .await;
    }
}
