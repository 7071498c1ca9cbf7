//! The actor of one ticket type (ractor). Seat requests come through its mailbox into its
//! line; the first of a run asks the actor to flush, and by the time that flush message is
//! handled every request that arrived meanwhile is in the line too. They are judged against
//! one locked row and committed together (group commit, through the node's committer, which
//! may put several ticket types' batches in one transaction), then each gets its answer.
//! A short line the actor commits itself. A long one (a type selling without pause) gets a
//! flusher on the committer's runtime, which answers each batch and takes what arrived
//! meanwhile at once, until the line is empty: the type's next batch follows its last commit
//! without waiting for the actor's turn on the request runtime, behind every HTTP connection
//! ready there. Its reservations expire through the node's reservation timer, which is told of
//! every new deadline: one mechanism for every deadline, whether or not an actor runs.

use super::alarm::Alarm;
use super::committer::Committer;
use super::first_reads::FirstReads;
use super::registry::TicketingError;
use super::timers::Deadlines;
use crate::cluster::Ownership;
use chrono::{DateTime, Utc};
use domain::clock::Clock;
use domain::events::seats::SeatRefusal;
use domain::ids::TenantId;
use ractor::{Actor, ActorProcessingErr, ActorRef, ActorStatus};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use storage::Database;
use storage::cluster::Fence;
use storage::events::seats::{self, SeatOutcome, SeatRequest};
use tokio::sync::oneshot;
use uuid::Uuid;

/// Where the answer to one seat request goes.
pub type Reply = oneshot::Sender<Result<SeatOutcome, TicketingError>>;

/// A request and where to send its answer.
pub struct Job {
    /// The request.
    pub request: SeatRequest,
    /// The answer channel.
    pub reply: Reply,
}

/// The answers of one batch, each with where it goes.
type Answers = Vec<(Reply, Result<SeatOutcome, TicketingError>)>;

/// What a ticket-type actor is told.
// Nearly every message is a seat request: boxing it would cost an allocation per seat to
// shrink the rare others.
#[allow(clippy::large_enum_variant)]
pub enum TicketTypeMsg {
    /// Someone asks for a seat.
    Seat(Job),
    /// Commit what waits in the line.
    Flush,
    /// The line's flusher ended without emptying it (a panic, or the committer's runtime
    /// ended under it): the actor fails, and its event actor starts it again.
    FlusherFailed,
    /// The flusher's write was refused: the shard moved.
    Fenced(TicketingError),
    /// Stop if nothing happened for the idle time (else look again when it would be up).
    Idle,
}

/// What the actor needs to start.
pub struct TicketTypeArgs {
    /// The pool.
    pub db: Database,
    /// The clock (tests move it).
    pub clock: Arc<dyn Clock>,
    /// Which ticket type.
    pub ticket_type: Uuid,
    /// Largest group commit.
    pub batch: usize,
    /// Without requests for this long, the actor stops.
    pub idle: Duration,
    /// The lease of the event's shard every write checks.
    pub fence: Fence,
    /// What the node owns (for counting refused writes).
    pub owner: Ownership,
    /// Where ready batches go to be committed (with other ticket types' batches).
    pub committer: Committer,
    /// The node's reservation timer, told of each new deadline.
    pub deadlines: Deadlines,
    /// What the node's starting actors read, read together.
    pub first_reads: FirstReads,
}

/// The requests waiting for a commit: the actor adds to it, its flusher takes from it.
#[derive(Default)]
struct Line {
    jobs: Vec<Job>,
    /// A flush was asked for, or the flusher runs: one batch of the type at a time. Left set
    /// after a refused fence, so nothing more is committed under the old lease.
    flushing: bool,
}

type SharedLine = Arc<Mutex<Line>>;

fn lock(line: &SharedLine) -> MutexGuard<'_, Line> {
    line.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The actor's state.
pub struct TicketTypeState {
    args: TicketTypeArgs,
    /// The owning tenant; None when the ticket type does not exist.
    tenant: Option<TenantId>,
    line: SharedLine,
    /// When the last request came (one idle timer per actor reads it, not one per request).
    last_active: Instant,
    /// The pending idle timer (`alarm`: cancelled with the state).
    idle: Alarm<TicketTypeMsg>,
}

/// The ticket-type actor.
pub struct TicketTypeActor;

impl Actor for TicketTypeActor {
    type Msg = TicketTypeMsg;
    type State = TicketTypeState;
    type Arguments = TicketTypeArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<TicketTypeMsg>,
        args: TicketTypeArgs,
    ) -> Result<TicketTypeState, ActorProcessingErr> {
        let tenant = args.first_reads.owner(args.ticket_type).await?;
        let mut state = TicketTypeState {
            args,
            tenant,
            line: SharedLine::default(),
            last_active: Instant::now(),
            idle: Alarm::default(),
        };
        state
            .idle
            .set(myself.send_after(state.args.idle, || TicketTypeMsg::Idle));
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<TicketTypeMsg>,
        message: TicketTypeMsg,
        state: &mut TicketTypeState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            TicketTypeMsg::Seat(job) => {
                state.last_active = Instant::now();
                if state.tenant.is_none() {
                    let _ = job.reply.send(Ok(SeatOutcome::NotFound));
                    return Ok(());
                }
                let flush = {
                    let mut line = lock(&state.line);
                    line.jobs.push(job);
                    !std::mem::replace(&mut line.flushing, true)
                };
                if flush {
                    myself.send_message(TicketTypeMsg::Flush)?;
                }
            }
            TicketTypeMsg::Flush => {
                #[cfg(feature = "faults")]
                if crate::faults::take_flush_panic(state.args.ticket_type) {
                    panic!(
                        "fault injected: the actor of ticket type {} panics mid-flush",
                        state.args.ticket_type
                    );
                }
                // Boxed: the flush holds its transaction's future, kilobytes that inline
                // would size every message's future, and ractor moves that future for each
                // seat request the actor takes (bench/README.md, twenty-sixth sitting).
                Box::pin(flush(&myself, state)).await;
            }
            TicketTypeMsg::FlusherFailed => {
                return Err(
                    "the flusher of the ticket type's line ended without emptying it".into(),
                );
            }
            TicketTypeMsg::Fenced(why) => fenced(&myself, state, &why),
            TicketTypeMsg::Idle => {
                let left = super::idle_left(state.last_active.elapsed(), state.args.idle);
                let quiet = {
                    let line = lock(&state.line);
                    line.jobs.is_empty() && !line.flushing
                };
                if left.is_none() && quiet {
                    myself.stop(Some("idle".into()));
                } else {
                    let wait = left.unwrap_or(state.args.idle);
                    state
                        .idle
                        .set(myself.send_after(wait, || TicketTypeMsg::Idle));
                }
            }
        }
        Ok(())
    }
}

/// The database refused a write: the shard's lease moved on. What waits goes back as moved
/// (its new owner answers) and the actor stops, timers and all.
fn fenced(myself: &ActorRef<TicketTypeMsg>, state: &mut TicketTypeState, why: &TicketingError) {
    state.args.owner.count_fenced();
    tracing::warn!(ticket_type = %state.args.ticket_type, error = %why, "write refused: the shard moved; actor stops");
    let jobs = std::mem::take(&mut lock(&state.line).jobs);
    for job in jobs {
        let _ = job.reply.send(Err(why.clone()));
    }
    myself.stop(Some("fenced".into()));
}

/// Requests waiting in a line from which it is committed by a flusher on the committer's
/// runtime: a type that sells without pause, whose next batch should follow its last commit at
/// once. A shorter line is committed by the actor itself, on the request runtime, where its
/// requests arrive: handing a run of one or two requests to the other runtime and its answers
/// back cost more CPU than the wait it saved (bench/README.md).
const HOT_LINE: usize = 16;

/// Commits what waits in the line: a hot line by a flusher of its own on the committer's
/// runtime (until the line is empty), a cold one here.
async fn flush(myself: &ActorRef<TicketTypeMsg>, state: &mut TicketTypeState) {
    let Some(tenant) = state.tenant else {
        return;
    };
    let args = &state.args;
    let flusher = Flusher {
        actor: myself.clone(),
        line: state.line.clone(),
        tenant,
        db: args.db.clone(),
        clock: args.clock.clone(),
        ticket_type: args.ticket_type,
        batch: args.batch.max(1),
        fence: args.fence.clone(),
        committer: args.committer.clone(),
        deadlines: args.deadlines.clone(),
    };
    let waiting = lock(&state.line).jobs.len();
    if let Some(runtime) = args.committer.runtime().filter(|_| waiting >= HOT_LINE) {
        let watch = Watch {
            actor: myself.clone(),
            finished: false,
        };
        drop(runtime.spawn(async move {
            // The whole guard moves into the task (a field alone would be captured otherwise).
            let mut watch = watch;
            flusher.run().await;
            watch.finished = true;
        }));
        return;
    }
    // While the actor waits here, new requests wait in its mailbox: the line holds only what
    // was there when the flush began.
    if let Err(moved) = flusher.drain().await {
        fenced(myself, state, &moved);
    }
}

/// Fails the actor when its hot line's flusher ends without emptying the line: a panic, or
/// the committer's runtime ending with the flusher on it (a task dropped there is never run
/// to its end). The line would otherwise stay flushing with nobody committing it; failed, the
/// actor is started again by its event actor after a pause, and what waited in its line goes
/// back to the registry, unanswered, which sends it to a fresh actor.
struct Watch {
    actor: ActorRef<TicketTypeMsg>,
    finished: bool,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.actor.send_message(TicketTypeMsg::FlusherFailed);
        }
    }
}

/// Commits a ticket type's line, one batch at a time, while it holds requests.
struct Flusher {
    actor: ActorRef<TicketTypeMsg>,
    line: SharedLine,
    tenant: TenantId,
    db: Database,
    clock: Arc<dyn Clock>,
    ticket_type: Uuid,
    batch: usize,
    fence: Fence,
    committer: Committer,
    deadlines: Deadlines,
}

impl Flusher {
    /// A hot line's flusher: drains the line, and tells its actor when the shard moved.
    async fn run(self) {
        if let Err(moved) = self.drain().await {
            let _ = self.actor.send_message(TicketTypeMsg::Fenced(moved));
        }
    }

    /// Commits the line batch after batch, answering each (a reply is a channel any runtime
    /// can send on), until it is empty; stops at the first batch the shard's new owner must
    /// answer (see `commit`).
    async fn drain(&self) -> Result<(), TicketingError> {
        while let Some(jobs) = self.take() {
            for (reply, outcome) in self.commit(jobs).await? {
                let _ = reply.send(outcome);
            }
        }
        Ok(())
    }

    /// The next batch of the line, or None (the line no longer flushing) when it is empty or
    /// its actor is stopping: an actor that stops takes its line with it, and what waits there
    /// goes, unanswered, back to the registry, which sends it to a fresh actor.
    fn take(&self) -> Option<Vec<Job>> {
        let mut line = lock(&self.line);
        if line.jobs.is_empty() || self.actor.get_status() != ActorStatus::Running {
            line.flushing = false;
            return None;
        }
        let take = line.jobs.len().min(self.batch);
        Some(line.jobs.drain(..take).collect())
    }

    /// Commits one batch and returns its answers. When the shard moved nothing of it was
    /// written: its requests go back to the head of the line, which stays flushing so that
    /// nothing more is committed under the old lease, and the refusal is returned.
    async fn commit(&self, jobs: Vec<Job>) -> Result<Answers, TicketingError> {
        let ticket_type = self.ticket_type;
        let (requests, replies): (Vec<SeatRequest>, Vec<Reply>) =
            jobs.into_iter().map(|job| (job.request, job.reply)).unzip();
        let now = self.clock.now();
        let started = Instant::now();
        let submitted = self
            .committer
            .commit(self.tenant, ticket_type, self.fence.clone(), requests, now)
            .await;
        // The worker holding the batch ended without answering: whether it committed is
        // unknown, so the requests fail rather than being committed twice.
        let Ok((requests, committed)) = submitted else {
            let failed =
                TicketingError::Failed("the commit of this request was interrupted".into());
            return Ok(replies
                .into_iter()
                .map(|r| (r, Err(failed.clone())))
                .collect());
        };
        tracing::debug!(
            %ticket_type,
            batch = requests.len(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            conflict = committed.as_ref().err().is_some_and(seats::is_conflict),
            "group commit"
        );
        let outcomes: Vec<Result<SeatOutcome, TicketingError>> = match committed {
            Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
            Err(e) if e.is_fenced() => {
                let jobs = requests
                    .into_iter()
                    .zip(replies)
                    .map(|(request, reply)| Job { request, reply });
                lock(&self.line).jobs.splice(0..0, jobs);
                return Err(TicketingError::of(&e));
            }
            // A concurrent writer (another type of the same event, a cancellation) or a
            // code collision broke the batch: judge each request on its own. (Rare: from a hot
            // flusher a connection the pool opens here is driven by the committer's runtime,
            // which lives as long as the actors do.)
            Err(e) if seats::is_conflict(&e) => {
                let mut one_by_one = Vec::with_capacity(requests.len());
                for request in &requests {
                    one_by_one.push(
                        single(
                            &self.db,
                            &self.fence,
                            self.tenant,
                            ticket_type,
                            request,
                            now,
                        )
                        .await,
                    );
                }
                one_by_one
            }
            Err(e) => {
                tracing::error!(%ticket_type, error = %e, "group commit failed");
                vec![Err(TicketingError::of(&e)); requests.len()]
            }
        };
        // A reservation's deadline goes to the node's timer, which wakes only when the
        // earliest one is due.
        let earliest = outcomes
            .iter()
            .filter_map(|o| match o {
                Ok(SeatOutcome::Created(r)) => r.expires_at,
                _ => None,
            })
            .min();
        if let Some(deadline) = earliest {
            self.deadlines.at(deadline);
        }
        Ok(replies.into_iter().zip(outcomes).collect())
    }
}

/// One request on its own, without an actor: the baseline that takes the row lock per
/// request (`ticketing.mode = "direct"`).
pub async fn direct(
    db: &Database,
    fence: &Fence,
    owner: &Ownership,
    ticket_type: Uuid,
    request: &SeatRequest,
    now: DateTime<Utc>,
) -> Result<SeatOutcome, TicketingError> {
    let outcome = match seats::owner(db, ticket_type).await {
        Ok(Some(tenant)) => single(db, fence, tenant, ticket_type, request, now).await,
        Ok(None) => Ok(SeatOutcome::NotFound),
        Err(e) => Err(TicketingError::of(&e)),
    };
    if matches!(outcome, Err(TicketingError::Moved(_))) {
        owner.count_fenced();
    }
    outcome
}

/// One request on its own (the baseline, and the fallback after a conflict).
pub async fn single(
    db: &Database,
    fence: &Fence,
    tenant: TenantId,
    ticket_type: Uuid,
    request: &SeatRequest,
    now: DateTime<Utc>,
) -> Result<SeatOutcome, TicketingError> {
    for _ in 0..3 {
        match seats::commit_batch(
            db,
            fence,
            tenant,
            ticket_type,
            std::slice::from_ref(request),
            now,
        )
        .await
        {
            Ok(mut outcome) => {
                return outcome
                    .pop()
                    .ok_or_else(|| TicketingError::Failed("empty outcome".into()));
            }
            // The user registered, or used the key, through another path in the meantime: the
            // next attempt sees it.
            Err(e) if seats::is_conflict(&e) => continue,
            Err(e) => return Err(TicketingError::of(&e)),
        }
    }
    Ok(SeatOutcome::Refused(SeatRefusal::AlreadyRegistered))
}
