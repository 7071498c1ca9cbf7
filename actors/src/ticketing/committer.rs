//! The node's committer: ticket-type actors hand it their ready batches, and it writes the
//! batches of many ticket types in one transaction. With hundreds of events on sale each
//! actor's batch holds only a few requests; committed one transaction each, PostgreSQL would
//! pay the round trips, the lease check and the WAL flush of a commit for every few seats.
//! A few workers take turns, so several such transactions are in flight at once (their
//! flushes overlap) and none of them waits for a global lock.
//!
//! Each actor still has at most one batch here at a time (it waits for the answer before it
//! flushes again), so two transactions never hold the same ticket type's row.

use chrono::{DateTime, Utc};
use domain::ids::TenantId;
use std::sync::Arc;
use storage::Database;
use storage::cluster::Fence;
use storage::db::contention;
use storage::events::seats::{self, SeatBatch, SeatOutcome, SeatRequest};
use tokio::sync::{Mutex, mpsc, oneshot};
use uuid::Uuid;

/// Most ticket types' batches in one transaction: past this a transaction's statements take
/// longer than the flush they share.
const MOST_BATCHES: usize = 128;

/// A batch's requests, handed back, and its answers.
pub type Answer = (Vec<SeatRequest>, storage::Result<Vec<SeatOutcome>>);

/// One actor's batch, waiting for a transaction.
struct Submitted {
    tenant: TenantId,
    ticket_type: Uuid,
    fence: Fence,
    requests: Vec<SeatRequest>,
    now: DateTime<Utc>,
    reply: oneshot::Sender<Answer>,
}

/// The worker that took a batch ended without answering (it panicked): whether the batch
/// was committed is unknown to the actor, so its requests fail rather than being retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// Where the node's ticket-type actors send their batches.
#[derive(Clone)]
pub struct Committer {
    db: Database,
    queue: mpsc::UnboundedSender<Submitted>,
}

impl Committer {
    /// Starts `workers` workers over `db` (at least one). They stop once every handle is
    /// dropped.
    pub fn start(db: Database, workers: usize) -> Committer {
        let (queue, ready) = mpsc::unbounded_channel();
        let ready = Arc::new(Mutex::new(ready));
        for _ in 0..workers.max(1) {
            tokio::spawn(work(db.clone(), ready.clone()));
        }
        Committer { db, queue }
    }

    /// Commits one ticket type's batch, possibly with other ticket types' batches, and
    /// returns its requests with their answers (or why it could not be committed, as
    /// `seats::commit_batch` says); `Stopped` when the worker holding it ended without
    /// answering.
    pub async fn commit(
        &self,
        tenant: TenantId,
        ticket_type: Uuid,
        fence: Fence,
        requests: Vec<SeatRequest>,
        now: DateTime<Utc>,
    ) -> Result<Answer, Stopped> {
        let (reply, answer) = oneshot::channel();
        let submitted = Submitted {
            tenant,
            ticket_type,
            fence,
            requests,
            now,
            reply,
        };
        if let Err(mpsc::error::SendError(lost)) = self.queue.send(submitted) {
            // No worker runs any more (the runtime is shutting down): commit it here.
            let outcome = seats::commit_batch(
                &self.db,
                &lost.fence,
                lost.tenant,
                lost.ticket_type,
                &lost.requests,
                lost.now,
            )
            .await;
            return Ok((lost.requests, outcome));
        }
        answer.await.map_err(|_| Stopped)
    }
}

/// A worker: takes whatever batches are ready (waiting for the first), commits them together
/// and answers each.
async fn work(db: Database, ready: Arc<Mutex<mpsc::UnboundedReceiver<Submitted>>>) {
    loop {
        let taken = {
            let mut ready = ready.lock().await;
            let Some(first) = ready.recv().await else {
                return;
            };
            let mut taken = vec![first];
            while taken.len() < MOST_BATCHES {
                match ready.try_recv() {
                    Ok(next) => taken.push(next),
                    Err(_) => break,
                }
            }
            taken
        };
        commit_together(&db, taken).await;
    }
}

/// Commits `taken` in one transaction when their fences join; otherwise, or when that
/// transaction fails, each batch in its own, so every batch gets its own verdict (a conflict
/// or a moved shard of one must not fail the others).
async fn commit_together(db: &Database, taken: Vec<Submitted>) {
    if taken.len() > 1
        && let Some(fence) = Fence::joined(taken.iter().map(|s| &s.fence))
    {
        let batches: Vec<SeatBatch<'_>> = taken
            .iter()
            .map(|s| SeatBatch {
                tenant: s.tenant,
                ticket_type: s.ticket_type,
                requests: &s.requests,
                now: s.now,
            })
            .collect();
        match seats::commit_batches(db, &fence, &batches).await {
            Ok(outcomes) => {
                for (submitted, outcome) in taken.into_iter().zip(outcomes) {
                    let _ = submitted.reply.send((submitted.requests, Ok(outcome)));
                }
                return;
            }
            Err(e) => tracing::debug!(
                batches = taken.len(),
                error = %e,
                "joint commit failed; committing each batch alone"
            ),
        }
    }
    futures_util::future::join_all(taken.into_iter().map(|s| alone(db, s))).await;
}

/// Commits one batch in its own transaction and answers it. A batch that lost a lock race
/// (an organizer's change of the same type at the same instant) runs again.
async fn alone(db: &Database, s: Submitted) {
    let outcome = contention::retried("seat batch", || {
        seats::commit_batch(db, &s.fence, s.tenant, s.ticket_type, &s.requests, s.now)
    })
    .await;
    let _ = s.reply.send((s.requests, outcome));
}
