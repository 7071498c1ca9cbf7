//! The actor of one ticket type (ractor). Seat requests queue in its mailbox; the first of a
//! run asks the actor to flush, and by the time that flush message is handled every request
//! that arrived meanwhile is pending too: they are judged against one locked row and committed
//! together (group commit, through the node's committer, which may put several ticket types'
//! batches in one transaction), then each gets its answer. Its reservations expire through the
//! node's reservation timer, which the actor tells of every new deadline: one mechanism for
//! every deadline, whether or not an actor runs.

use super::committer::Committer;
use super::registry::TicketingError;
use super::timers::Deadlines;
use crate::cluster::Ownership;
use chrono::{DateTime, Utc};
use domain::clock::Clock;
use domain::events::seats::SeatRefusal;
use domain::ids::TenantId;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::sync::Arc;
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

/// What a ticket-type actor is told.
// Nearly every message is a seat request: boxing it would cost an allocation per seat to
// shrink the rare others.
#[allow(clippy::large_enum_variant)]
pub enum TicketTypeMsg {
    /// Someone asks for a seat.
    Seat(Job),
    /// Commit what is pending.
    Flush,
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
}

/// The actor's state.
pub struct TicketTypeState {
    args: TicketTypeArgs,
    /// The owning tenant; None when the ticket type does not exist.
    tenant: Option<TenantId>,
    pending: Vec<Job>,
    flush_queued: bool,
    /// When the last request came (one idle timer per actor reads it, not one per request).
    last_active: Instant,
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
        let tenant = seats::owner(&args.db, args.ticket_type).await?;
        let state = TicketTypeState {
            args,
            tenant,
            pending: Vec::new(),
            flush_queued: false,
            last_active: Instant::now(),
        };
        myself.send_after(state.args.idle, || TicketTypeMsg::Idle);
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
                state.pending.push(job);
                if !state.flush_queued {
                    state.flush_queued = true;
                    myself.send_message(TicketTypeMsg::Flush)?;
                }
            }
            TicketTypeMsg::Flush => {
                state.flush_queued = false;
                #[cfg(feature = "faults")]
                if crate::faults::take_flush_panic(state.args.ticket_type) {
                    panic!(
                        "fault injected: the actor of ticket type {} panics mid-flush",
                        state.args.ticket_type
                    );
                }
                if let Err(moved) = flush(state).await {
                    fenced(&myself, state, &moved);
                }
            }
            TicketTypeMsg::Idle => {
                let left = super::idle_left(state.last_active.elapsed(), state.args.idle);
                if left.is_none() && state.pending.is_empty() {
                    myself.stop(Some("idle".into()));
                } else {
                    myself.send_after(left.unwrap_or(state.args.idle), || TicketTypeMsg::Idle);
                }
            }
        }
        Ok(())
    }
}

/// The database refused a write: the shard's lease moved on. What is pending goes back as
/// moved (its new owner answers) and the actor stops, timers and all.
fn fenced(myself: &ActorRef<TicketTypeMsg>, state: &mut TicketTypeState, why: &TicketingError) {
    state.args.owner.count_fenced();
    tracing::warn!(ticket_type = %state.args.ticket_type, error = %why, "write refused: the shard moved; actor stops");
    for job in state.pending.drain(..) {
        let _ = job.reply.send(Err(why.clone()));
    }
    myself.stop(Some("fenced".into()));
}

/// Commits everything pending, `batch` requests at a time, and answers each request. A
/// refused fence ends the flush: the jobs of that batch and the rest are for the new owner.
async fn flush(state: &mut TicketTypeState) -> Result<(), TicketingError> {
    let Some(tenant) = state.tenant else {
        return Ok(());
    };
    let (db, ticket_type) = (state.args.db.clone(), state.args.ticket_type);
    let fence = state.args.fence.clone();
    let batch = state.args.batch.max(1);
    while !state.pending.is_empty() {
        let take = state.pending.len().min(batch);
        let (requests, replies): (Vec<SeatRequest>, Vec<Reply>) = state
            .pending
            .drain(..take)
            .map(|job| (job.request, job.reply))
            .unzip();
        let now = state.args.clock.now();
        let started = std::time::Instant::now();
        let submitted = state
            .args
            .committer
            .commit(tenant, ticket_type, fence.clone(), requests, now)
            .await;
        let Ok((requests, committed)) = submitted else {
            for reply in replies {
                let _ = reply.send(Err(TicketingError::Failed(
                    "the commit of this request was interrupted".into(),
                )));
            }
            continue;
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
                let moved = TicketingError::of(&e);
                let jobs = requests
                    .into_iter()
                    .zip(replies)
                    .map(|(request, reply)| Job { request, reply });
                state.pending.splice(0..0, jobs);
                return Err(moved);
            }
            // A concurrent writer (another type of the same event, a cancellation) or a code
            // collision broke the batch: judge each request on its own.
            Err(e) if seats::is_conflict(&e) => {
                let mut one_by_one = Vec::with_capacity(requests.len());
                for request in &requests {
                    one_by_one.push(single(&db, &fence, tenant, ticket_type, request, now).await);
                }
                one_by_one
            }
            Err(e) => {
                tracing::error!(%ticket_type, error = %e, "group commit failed");
                vec![Err(TicketingError::of(&e)); requests.len()]
            }
        };
        let earliest = outcomes
            .iter()
            .filter_map(|o| match o {
                Ok(SeatOutcome::Created(r)) => r.expires_at,
                _ => None,
            })
            .min();
        if let Some(deadline) = earliest {
            state.args.deadlines.at(deadline);
        }
        for (reply, outcome) in replies.into_iter().zip(outcomes) {
            let _ = reply.send(outcome);
        }
    }
    Ok(())
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
