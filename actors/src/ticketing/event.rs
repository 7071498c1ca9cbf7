//! The actor of one event (ractor): it supervises the ticket-type actors of the event (starts
//! them on first use, starts a failed one again after a pause that grows with its recent
//! failures, holding the type's requests meanwhile, and gives up — failing itself, which its
//! own supervisor sees — past `MAX_RESTARTS` within a minute) and owns the
//! event-level timer, the reminder 24 hours before the start, read from the database in the
//! background once it has started (the sale's first seats do not wait for it). It stops when it
//! has been idle and no ticket-type actor runs under it.

use super::alarm::Alarm;
use super::committer::Committer;
use super::first_reads::FirstReads;
use super::registry::TicketingError;
use super::ticket_type::{Job, TicketTypeActor, TicketTypeArgs, TicketTypeMsg};
use super::timers::Deadlines;
use crate::cluster::Ownership;
use domain::clock::Clock;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use storage::Database;
use storage::cluster::Fence;
use storage::events::catalog;
use uuid::Uuid;

/// What an event actor is told.
pub enum EventMsg {
    /// A seat request for one of the event's ticket types.
    Seat(Uuid, Box<Job>),
    /// Start the actor of this ticket type again (after a failure) and hand it the requests
    /// held meanwhile.
    Wake(Uuid),
    /// Read when the reminder falls due (again, after a failed read).
    ReadReminder,
    /// When the reminder falls due, as read (None: none is to be sent).
    ReminderRead(Option<chrono::DateTime<chrono::Utc>>),
    /// The reminder may be due.
    Remind,
    /// Stop if nothing happened for the idle time (else look again when it would be up).
    Idle,
}

/// What the actor needs to start.
pub struct EventArgs {
    /// The pool.
    pub db: Database,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Which event.
    pub event: Uuid,
    /// Largest group commit of its ticket types.
    pub batch: usize,
    /// Without requests for this long (and no ticket-type actor left), the actor stops.
    pub idle: Duration,
    /// The lease of the event's shard every write of the actor (and its children) checks.
    pub fence: Fence,
    /// What the node owns (for counting refused writes).
    pub owner: Ownership,
    /// The node's committer, for the ticket-type actors.
    pub committer: Committer,
    /// The node's reservation timer, for the ticket-type actors.
    pub deadlines: Deadlines,
    /// What the node's starting actors read, read together.
    pub first_reads: FirstReads,
}

/// The actor's state.
pub struct EventState {
    args: EventArgs,
    children: HashMap<Uuid, ActorRef<TicketTypeMsg>>,
    /// When the last request came (one idle timer per actor reads it, not one per request).
    last_active: Instant,
    /// When the reminder falls due, while one is still to be sent.
    reminder_due: Option<chrono::DateTime<chrono::Utc>>,
    /// Recent failures of each ticket type's actor (the last minute's).
    failures: HashMap<Uuid, Vec<Instant>>,
    /// Requests for a ticket type whose actor waits to be started again.
    held: HashMap<Uuid, Vec<Job>>,
    /// The reminder's pending timer (`alarm`: cancelled with the state).
    remind: Alarm<EventMsg>,
    /// The pending idle timer.
    idle: Alarm<EventMsg>,
}

/// The event actor.
pub struct EventActor;

impl Actor for EventActor {
    type Msg = EventMsg;
    type State = EventState;
    type Arguments = EventArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<EventMsg>,
        args: EventArgs,
    ) -> Result<EventState, ActorProcessingErr> {
        let mut state = EventState {
            args,
            children: HashMap::new(),
            last_active: Instant::now(),
            reminder_due: None,
            failures: HashMap::new(),
            held: HashMap::new(),
            remind: Alarm::default(),
            idle: Alarm::default(),
        };
        read_reminder(&myself, &state);
        state
            .idle
            .set(myself.send_after(state.args.idle, || EventMsg::Idle));
        Ok(state)
    }

    async fn handle(
        &self,
        myself: ActorRef<EventMsg>,
        message: EventMsg,
        state: &mut EventState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            EventMsg::Seat(ticket_type, job) => {
                state.last_active = Instant::now();
                if let Some(held) = state.held.get_mut(&ticket_type) {
                    held.push(*job);
                    return Ok(());
                }
                seat(&myself, state, ticket_type, *job).await;
            }
            EventMsg::Wake(ticket_type) => {
                for job in state.held.remove(&ticket_type).unwrap_or_default() {
                    seat(&myself, state, ticket_type, job).await;
                }
            }
            EventMsg::ReadReminder => read_reminder(&myself, state),
            EventMsg::ReminderRead(due) => {
                state.reminder_due = due;
                if let Some(due) = due {
                    remind_at(&myself, state, due);
                }
            }
            // Boxed, as an actor's start is in `child`: a reminder is written once an event,
            // and its write inline would size the future of every seat the actor hands on.
            EventMsg::Remind => Box::pin(remind(&myself, state)).await,
            EventMsg::Idle => {
                let left = super::idle_left(state.last_active.elapsed(), state.args.idle);
                if left.is_none() && state.children.is_empty() && state.held.is_empty() {
                    myself.stop(Some("idle".into()));
                } else {
                    let wait = left.unwrap_or(state.args.idle);
                    state.idle.set(myself.send_after(wait, || EventMsg::Idle));
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<EventMsg>,
        message: SupervisionEvent,
        state: &mut EventState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisionEvent::ActorTerminated(cell, _, _) => {
                state.children.retain(|_, a| a.get_id() != cell.get_id());
                // The last child stopped for being idle: the event most likely is too, and its
                // own idle timer, having found the child still running, waits a whole idle
                // time more.
                let idle = super::idle_left(state.last_active.elapsed(), state.args.idle).is_none();
                if idle && state.children.is_empty() && state.held.is_empty() {
                    myself.stop(Some("idle".into()));
                }
            }
            SupervisionEvent::ActorFailed(cell, error) => {
                let failed: Vec<Uuid> = state
                    .children
                    .iter()
                    .filter(|(_, a)| a.get_id() == cell.get_id())
                    .map(|(t, _)| *t)
                    .collect();
                for ticket_type in failed {
                    state.children.remove(&ticket_type);
                    let now = Instant::now();
                    let recent = state.failures.entry(ticket_type).or_default();
                    recent.retain(|at| now.duration_since(*at) < Duration::from_secs(60));
                    recent.push(now);
                    let Some(pause) = super::restart_pause(recent.len()) else {
                        // Failing again and again: not a blip. The event actor gives up (its
                        // supervisor counts it) and the requests go back to the registry.
                        return Err(format!(
                            "ticket-type actor {ticket_type} failed {} times within a minute: {error}",
                            recent.len()
                        )
                        .into());
                    };
                    tracing::error!(%ticket_type, %error, pause_ms = pause.as_millis() as u64,
                        "ticket-type actor failed; starting it again after a pause");
                    state.held.entry(ticket_type).or_default();
                    myself.send_after(pause, move || EventMsg::Wake(ticket_type));
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// Hands a seat request to the actor of its ticket type, started if needed; a type whose
/// actor cannot start answers "unavailable" (503), not a failure of the platform.
async fn seat(myself: &ActorRef<EventMsg>, state: &mut EventState, ticket_type: Uuid, job: Job) {
    let unavailable = |e: &dyn std::fmt::Display| {
        TicketingError::Unavailable(format!("the ticket type's actor did not start: {e}"))
    };
    let actor = match child(myself, state, ticket_type).await {
        Ok(actor) => actor,
        Err(e) => {
            let _ = job.reply.send(Err(unavailable(&e)));
            return;
        }
    };
    if let Err(ractor::MessagingErr::SendErr(TicketTypeMsg::Seat(job))) =
        actor.send_message(TicketTypeMsg::Seat(job))
    {
        // Stopping between lookup and send: answer through a fresh one.
        state.children.remove(&ticket_type);
        match child(myself, state, ticket_type).await {
            Ok(actor) => {
                if let Err(ractor::MessagingErr::SendErr(TicketTypeMsg::Seat(job))) =
                    actor.send_message(TicketTypeMsg::Seat(job))
                {
                    let _ = job.reply.send(Err(unavailable(&"it stopped at once")));
                }
            }
            Err(e) => {
                let _ = job.reply.send(Err(unavailable(&e)));
            }
        }
    }
}

/// The running actor of `ticket_type`, started under this event actor if needed.
async fn child(
    myself: &ActorRef<EventMsg>,
    state: &mut EventState,
    ticket_type: Uuid,
) -> Result<ActorRef<TicketTypeMsg>, ActorProcessingErr> {
    if let Some(actor) = state.children.get(&ticket_type) {
        return Ok(actor.clone());
    }
    let args = TicketTypeArgs {
        db: state.args.db.clone(),
        clock: state.args.clock.clone(),
        ticket_type,
        batch: state.args.batch,
        idle: state.args.idle,
        fence: state.args.fence.clone(),
        owner: state.args.owner.clone(),
        committer: state.args.committer.clone(),
        deadlines: state.args.deadlines.clone(),
        first_reads: state.args.first_reads.clone(),
    };
    // Boxed: starting an actor is rare and its future large; inline it would size the future
    // of every seat the event actor hands on.
    let (actor, _) = Box::pin(Actor::spawn_linked(
        None,
        TicketTypeActor,
        args,
        myself.get_cell(),
    ))
    .await?;
    state.children.insert(ticket_type, actor.clone());
    Ok(actor)
}

/// Writes the event's reminder once it is due, then sets the timer for the next one.
async fn remind(myself: &ActorRef<EventMsg>, state: &mut EventState) {
    let Some(due) = state.reminder_due else {
        return;
    };
    let now = state.args.clock.now();
    if due > now {
        // Woken to look at the clock again: nothing to write yet.
        remind_at(myself, state, due);
        return;
    }
    let (db, event, fence) = (&state.args.db, state.args.event, &state.args.fence);
    match catalog::remind(db, fence, event, now).await {
        Ok(sent) => {
            if sent {
                tracing::info!(%event, "event reminder sent");
            }
            // Sent, or not any more (the event moved or was cancelled meanwhile).
            state.reminder_due = catalog::reminder_due_at(db, event)
                .await
                .ok()
                .flatten()
                .filter(|next| *next > due);
            if let Some(next) = state.reminder_due {
                remind_at(myself, state, next);
            }
        }
        Err(e) if e.is_fenced() => {
            // The shard is someone else's now: so are its timers.
            state.args.owner.count_fenced();
            tracing::warn!(%event, error = %e, "reminder refused: the shard moved");
            myself.stop(Some("fenced".into()));
        }
        Err(e) => {
            tracing::warn!(%event, error = %e, "event reminder failed; retrying");
            state
                .remind
                .set(myself.send_after(Duration::from_secs(5), || EventMsg::Remind));
        }
    }
}

/// Reads when the reminder falls due on a task of its own, which tells the actor (or asks it
/// to read again in a while when the database did not answer).
fn read_reminder(myself: &ActorRef<EventMsg>, state: &EventState) {
    let (myself, reads, event) = (
        myself.clone(),
        state.args.first_reads.clone(),
        state.args.event,
    );
    tokio::spawn(async move {
        match reads.reminder(event).await {
            Ok(due) => {
                // The actor may have stopped meanwhile: then there is nobody to remind.
                let _ = myself.send_message(EventMsg::ReminderRead(due));
            }
            Err(e) => {
                tracing::warn!(%event, error = %e, "reading the event's reminder failed; retrying");
                myself.send_after(Duration::from_secs(5), || EventMsg::ReadReminder);
            }
        }
    });
}

/// Sets the reminder timer: it sleeps until the reminder is due, or until the clock should be
/// read again (`Clock::recheck`), and writes only once it is due.
fn remind_at(
    myself: &ActorRef<EventMsg>,
    state: &mut EventState,
    due: chrono::DateTime<chrono::Utc>,
) {
    let wait = (due - state.args.clock.now())
        .to_std()
        .unwrap_or(Duration::ZERO)
        .min(state.args.clock.recheck());
    state
        .remind
        .set(myself.send_after(wait, || EventMsg::Remind));
}
