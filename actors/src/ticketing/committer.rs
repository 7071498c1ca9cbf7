//! The node's committer: ticket-type actors hand it their ready batches, and it writes the
//! batches of many ticket types in one transaction. With hundreds of events on sale each
//! actor's batch holds only a few requests; committed one transaction each, PostgreSQL would
//! pay the round trips, the lease check and the WAL flush of a commit for every few seats.
//! A few workers take turns, so several such transactions are in flight at once (their
//! flushes overlap) and none of them waits for a global lock.
//!
//! Each actor still has at most one batch here at a time (it waits for the answer before it
//! flushes again), so two transactions never hold the same ticket type's row.
//!
//! A worker that finds only a few batches ready while another worker's transaction is still
//! in flight waits for more (at most `LINGER`, and no longer than something is in flight):
//! its commit would follow that one's anyway, and PostgreSQL's cost is per transaction (the
//! lease check, the statements, the commit), so a node of many small actors makes fewer,
//! larger transactions. With nothing in flight a batch goes at once, so a quiet node or a
//! single ticket type waits for nothing.

use chrono::{DateTime, Utc};
use domain::ids::TenantId;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
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

/// The longest a worker waits for more batches: short against a transaction's own time (a
/// WAL flush and a few round trips) and against the answer's budget.
const LINGER: Duration = Duration::from_millis(3);

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
        let thread = std::thread::Builder::new()
            .name("seat-committer".into())
            .spawn(move || run(own, ready, workers.max(1)));
        if let Err(e) = thread {
            // The receiver went with the closure: every batch is committed by its actor.
            tracing::error!(error = %e, "the seat committer's thread did not start");
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
fn run(db: Database, ready: mpsc::UnboundedReceiver<Submitted>, workers: usize) {
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
    runtime.block_on(async move {
        // Made here, so its connections and their I/O belong to this runtime; counted in the
        // process's connections by `domain::connections::fixed`.
        let size = domain::connections::committer_pool(u32::try_from(workers).unwrap_or(u32::MAX));
        let db = db.separate(size as usize).unwrap_or(db);
        let ready = Arc::new(Mutex::new(ready));
        let flights = Arc::new(Flights::default());
        let workers: Vec<_> = (0..workers)
            .map(|_| tokio::spawn(work(db.clone(), ready.clone(), flights.clone())))
            .collect();
        for worker in workers {
            let _ = worker.await;
        }
    });
}

/// A worker: takes whatever batches are ready (waiting for the first, and a moment for more
/// when few are ready while another transaction is in flight), commits them together and
/// answers each. The wait ends as soon as the transactions in flight have ended.
async fn work(
    db: Database,
    ready: Arc<Mutex<mpsc::UnboundedReceiver<Submitted>>>,
    flights: Arc<Flights>,
) {
    loop {
        let (taken, _counted) = {
            let mut ready = ready.lock().await;
            let Some(first) = ready.recv().await else {
                return;
            };
            let mut taken = vec![first];
            take_ready(&mut ready, &mut taken);
            let until = tokio::time::Instant::now() + LINGER;
            while taken.len() < FEW_BATCHES {
                // Registered before the count is read, so an end between the two still wakes.
                let ended = flights.ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if flights.count.load(Ordering::Acquire) == 0 {
                    break;
                }
                tokio::select! {
                    next = tokio::time::timeout_at(until, ready.recv()) => match next {
                        Ok(Some(next)) => {
                            taken.push(next);
                            take_ready(&mut ready, &mut taken);
                        }
                        Ok(None) | Err(_) => break,
                    },
                    () = &mut ended => {}
                }
            }
            // Counted before the next worker may look.
            (taken, InFlight::enter(&flights))
        };
        commit_together(&db, taken).await;
    }
}

/// The workers' transactions under way, and a bell rung when one ends.
#[derive(Default)]
struct Flights {
    count: AtomicUsize,
    ended: Notify,
}

/// One transaction counted in flight while it lives (released on unwind too).
struct InFlight<'a>(&'a Flights);

impl<'a> InFlight<'a> {
    fn enter(flights: &'a Flights) -> InFlight<'a> {
        flights.count.fetch_add(1, Ordering::AcqRel);
        InFlight(flights)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.ended.notify_waiters();
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
