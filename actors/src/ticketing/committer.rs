//! The node's committer: ticket-type actors hand it their ready batches, and it writes the
//! batches of many ticket types in one transaction. With hundreds of events on sale each
//! actor's batch holds only a few requests; committed one transaction each, PostgreSQL would
//! pay the round trips, the lease check and the WAL flush of a commit for every few seats.
//! A few workers take turns, so several such transactions are in flight at once (their
//! flushes overlap) and none of them waits for a global lock.
//!
//! Each ticket type still has at most one batch here at a time (its actor's flusher waits for
//! the answer before it takes the next), so two transactions never hold the same ticket
//! type's row.
//!
//! A worker that finds only a few batches ready while another worker's transaction is still
//! in flight waits for more (at most `LINGER`): its commit would follow that one's anyway,
//! and what a transaction costs is mostly per transaction (the lease check, the statements,
//! the round trips, the commit), in PostgreSQL and in the node alike, so a node of many small
//! actors makes fewer, larger transactions. Once nothing is in flight it waits only for the
//! ticket types that sold lately and are not yet in its transaction: their actors (or their
//! lines' flushers) send their next batches as soon as they are answered. With nothing in
//! flight when it took its first batch a worker goes at once, so a quiet node or a single
//! ticket type waits for nothing.

use chrono::{DateTime, Utc};
use domain::ids::TenantId;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use storage::Database;
use storage::cluster::Fence;
use storage::db::contention;
use storage::events::seats::{self, SeatBatch, SeatOutcome, SeatRequest};
use tokio::sync::{Mutex, Notify, mpsc, oneshot};
use uuid::Uuid;

/// Most ticket types' batches in one transaction: past this a transaction's statements take
/// longer than the flush they share.
const MOST_BATCHES: usize = 128;

/// Fewer batches than this, with another transaction in flight, wait for more.
const FEW_BATCHES: usize = 8;

/// Most threads of the committer's runtime (its workers mostly wait for PostgreSQL).
const MOST_THREADS: usize = 4;

/// The longest a worker waits for more batches: short against the answer's budget. On events
/// nodes capped at a tenth of a core, where the node's own CPU is what sells, three nodes'
/// transactions carried 8-10 registrations with a wait of at most 3 ms that ended with the
/// transactions in flight, and 11-12 with this (bench/README.md).
const LINGER: Duration = Duration::from_millis(30);

/// How long a ticket type counts as selling after its last batch: long against the time an
/// actor or flusher takes to send its next batch once answered, short against a sale.
const SELLING: Duration = Duration::from_millis(250);

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
    /// The committer's runtime, where the ticket-type actors' flushers run too, with whether
    /// it still runs (a task spawned on one that ended is dropped unrun).
    runtime: Option<(tokio::runtime::Handle, Arc<AtomicBool>)>,
}

impl Committer {
    /// Starts `workers` workers (at least one) on a runtime of their own, in a thread of its
    /// own, with a pool of their own over `db`'s login. They stop, and the thread ends, once
    /// every handle is dropped.
    ///
    /// Why a runtime of their own: on the request runtime, each answer PostgreSQL sends
    /// waits in the run queue behind every HTTP connection ready at that moment, and a seat
    /// transaction makes several round trips while its ticket type's requests wait for it.
    /// In a thread of its own, the operating system's scheduler runs the worker as soon as
    /// the answer arrives.
    pub fn start(db: Database, workers: usize) -> Committer {
        let (queue, ready) = mpsc::unbounded_channel();
        let own = db.clone();
        let (started, handle) = std::sync::mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("seat-committer".into())
            .spawn(move || run(own, ready, workers.max(1), started));
        let runtime = match thread {
            Ok(_) => handle.recv().ok(),
            Err(e) => {
                // The receiver went with the closure: every batch is committed by its actor.
                tracing::error!(error = %e, "the seat committer's thread did not start");
                None
            }
        };
        Committer { db, queue, runtime }
    }

    /// The committer's runtime, when it started: the ticket-type actors' flushers run on it,
    /// so a flusher answered by a worker sends its type's next batch at once rather than
    /// behind every HTTP connection ready on the request runtime at that moment.
    pub fn runtime(&self) -> Option<&tokio::runtime::Handle> {
        self.runtime
            .as_ref()
            .filter(|(_, running)| running.load(Ordering::Acquire))
            .map(|(handle, _)| handle)
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

/// What the process runs when one of its runtime threads has nothing to do (the binary gives
/// back its allocator's free memory there); the committer's threads run it too.
static WHEN_IDLE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Sets what the committer's runtime threads run when they park, as the request runtime's do:
/// a thread that built a sale's answers and then idles would otherwise keep what it freed.
/// Called once, before any node starts; later calls change nothing.
pub fn when_idle(hook: fn()) {
    let _ = WHEN_IDLE.set(hook);
}

/// The committer's thread: its runtime, its pool and its workers, until the queue closes.
fn run(
    db: Database,
    ready: mpsc::UnboundedReceiver<Submitted>,
    workers: usize,
    started: std::sync::mpsc::SyncSender<(tokio::runtime::Handle, Arc<AtomicBool>)>,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.min(MOST_THREADS))
        .thread_name("seat-committer")
        .on_thread_park(|| {
            if let Some(hook) = WHEN_IDLE.get() {
                hook();
            }
        })
        .enable_all()
        .build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(e) => {
            tracing::error!(error = %e, "the seat committer's runtime did not start");
            return;
        }
    };
    let running = Arc::new(AtomicBool::new(true));
    let _ = started.send((runtime.handle().clone(), running.clone()));
    runtime.block_on(async move {
        // Made here, so its connections and their I/O belong to this runtime; counted in the
        // process's connections by `domain::connections::fixed`.
        let size = domain::connections::committer_pool(u32::try_from(workers).unwrap_or(u32::MAX));
        let db = db.separate(size as usize).unwrap_or(db);
        let queue = Arc::new(Mutex::new(Queue {
            ready,
            selling: Selling::default(),
        }));
        let flights = Arc::new(Flights::default());
        let workers: Vec<_> = (0..workers)
            .map(|_| tokio::spawn(work(db.clone(), queue.clone(), flights.clone())))
            .collect();
        for worker in workers {
            let _ = worker.await;
        }
    });
    // Before the runtime is dropped: no flusher is started on it after this.
    running.store(false, Ordering::Release);
}

/// A worker: takes whatever batches are ready (waiting for the first, and a moment for more
/// when few are ready while another transaction is in flight), commits them together and
/// answers each. Once nothing is in flight, the wait goes on only for the ticket types that
/// sold lately and are not in this transaction.
async fn work(db: Database, queue: Arc<Mutex<Queue>>, flights: Arc<Flights>) {
    loop {
        let (taken, _counted) = {
            let mut queue = queue.lock().await;
            let Some(first) = queue.ready.recv().await else {
                return;
            };
            let mut taken = vec![first];
            take_ready(&mut queue.ready, &mut taken);
            let until = tokio::time::Instant::now() + LINGER;
            // Only a worker that found a transaction under way waits: its commit would have
            // followed that one's anyway.
            let behind = flights.batches.load(Ordering::Acquire) > 0;
            while behind && taken.len() < FEW_BATCHES {
                // Registered before the count is read, so an end between the two still wakes.
                let ended = flights.ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                // Ticket types that sold lately and are neither in flight nor taken: their
                // actors or flushers send their next batches as soon as they are answered.
                let in_flight = flights.batches.load(Ordering::Acquire);
                let coming = queue
                    .selling
                    .count()
                    .saturating_sub(in_flight + taken.len());
                if in_flight == 0 && coming == 0 {
                    break;
                }
                tokio::select! {
                    next = tokio::time::timeout_at(until, queue.ready.recv()) => match next {
                        Ok(Some(next)) => {
                            taken.push(next);
                            take_ready(&mut queue.ready, &mut taken);
                        }
                        Ok(None) | Err(_) => break,
                    },
                    () = &mut ended => {}
                }
            }
            queue.selling.saw(taken.iter().map(|s| s.ticket_type));
            // Counted before the next worker may look.
            let counted = InFlight::enter(&flights, taken.len());
            (taken, counted)
        };
        commit_together(&db, taken).await;
    }
}

/// The batches waiting for a worker, and which ticket types are selling; a worker holds it
/// while it gathers a transaction's batches.
struct Queue {
    ready: mpsc::UnboundedReceiver<Submitted>,
    selling: Selling,
}

/// The ticket types whose batches the committer took lately, and when.
#[derive(Default)]
struct Selling {
    last: HashMap<Uuid, Instant>,
    forgotten_at: Option<Instant>,
}

impl Selling {
    /// Notes the ticket types of a transaction; forgets, at most once every `SELLING`, those
    /// not seen for that long, so the map holds only the types of the last two such spans.
    fn saw(&mut self, types: impl Iterator<Item = Uuid>) {
        let now = Instant::now();
        for ticket_type in types {
            self.last.insert(ticket_type, now);
        }
        if self
            .forgotten_at
            .is_none_or(|at| now.duration_since(at) >= SELLING)
        {
            self.last
                .retain(|_, seen| now.duration_since(*seen) < SELLING);
            self.forgotten_at = Some(now);
        }
    }

    /// How many ticket types sold lately (within one to two `SELLING` spans).
    fn count(&self) -> usize {
        self.last.len()
    }
}

/// The batches of the workers' transactions under way (none exactly when no transaction is,
/// a transaction carrying at least one), and a bell rung when one ends.
#[derive(Default)]
struct Flights {
    batches: AtomicUsize,
    ended: Notify,
}

/// One transaction counted in flight, with its batches, while it lives (released on unwind
/// too).
struct InFlight<'a> {
    flights: &'a Flights,
    batches: usize,
}

impl<'a> InFlight<'a> {
    fn enter(flights: &'a Flights, batches: usize) -> InFlight<'a> {
        flights.batches.fetch_add(batches, Ordering::AcqRel);
        InFlight { flights, batches }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.flights
            .batches
            .fetch_sub(self.batches, Ordering::AcqRel);
        self.flights.ended.notify_waiters();
    }
}

/// Adds the batches ready now to `taken`, up to `MOST_BATCHES`.
fn take_ready(ready: &mut mpsc::UnboundedReceiver<Submitted>, taken: &mut Vec<Submitted>) {
    while taken.len() < MOST_BATCHES {
        match ready.try_recv() {
            Ok(next) => taken.push(next),
            Err(_) => break,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_type_counts_as_selling_once_however_many_batches_it_sent() {
        let mut selling = Selling::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        selling.saw([a, b, a].into_iter());
        selling.saw([a].into_iter());
        assert_eq!(selling.count(), 2);
    }

    #[test]
    fn ticket_types_not_seen_for_a_while_are_forgotten() {
        let mut selling = Selling::default();
        let old = Uuid::now_v7();
        selling.saw([old].into_iter());
        // As if `old` sold two spans ago and nothing was forgotten since.
        let long_ago = Instant::now() - 2 * SELLING;
        selling.last.insert(old, long_ago);
        selling.forgotten_at = Some(long_ago);
        let new = Uuid::now_v7();
        selling.saw([new].into_iter());
        assert_eq!(selling.count(), 1);
        assert!(selling.last.contains_key(&new));
    }
}
