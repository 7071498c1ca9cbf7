//! The send queue's actor (ractor). It claims due messages from the database a couple of
//! seconds' worth at a time, hands each to a send task when the pacer allows (about 30 a
//! second overall, one a second per chat, nothing while a 429's `retry_after` runs), and
//! wakes itself for the next turn. Each task writes its attempt to the send log; a 429
//! pauses everyone, a passing failure is tried again later with a growing wait.

use crate::telegram::Telegram;
use crate::ticket;
use chrono::Utc;
use domain::config::MessengerConfig;
use domain::notifications::delivery::{Failure, Next, Pacer, RetryPolicy, Turn};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use storage::Database;
use storage::notifications::queue::{self, Attempted, Outgoing};

/// How long a claimed message is ours before another sender may take it.
const LEASE: chrono::Duration = chrono::Duration::minutes(10);
/// Sends running at once (each is one HTTP call to the Bot API).
const MAX_IN_FLIGHT: usize = 32;
/// The longest the actor sleeps without looking at the queue.
const IDLE_POLL: Duration = Duration::from_secs(5);

/// What the actor is told.
pub enum SendMsg {
    /// Look at the queue: something was queued, or a wait is over.
    Wake,
    /// A send task finished.
    Done {
        /// The chat it went to.
        chat: i64,
        /// The wait the messenger asked for, after a 429.
        retry_after: Option<Duration>,
    },
}

/// What the actor needs.
pub struct SenderArgs {
    /// The pool.
    pub db: Database,
    /// The messenger.
    pub telegram: Telegram,
    /// Limits and retries.
    pub config: MessengerConfig,
    /// Attempts by outcome, for /metrics.
    pub counters: SendCounters,
}

/// Send attempts by outcome (`sent`, `retry`, `failed`), exposed as
/// `bilet_notification_attempts_total`.
#[derive(Clone)]
pub struct SendCounters(pub prometheus::IntCounterVec);

impl SendCounters {
    /// Fresh counters, to be registered with the process's metrics.
    pub fn new() -> Result<SendCounters, prometheus::Error> {
        prometheus::IntCounterVec::new(
            prometheus::Opts::new(
                "notification_attempts_total",
                "Messenger send attempts by outcome",
            ),
            &["outcome"],
        )
        .map(SendCounters)
    }

    fn count(&self, attempted: &Attempted) {
        let outcome = match attempted {
            Attempted::Sent => "sent",
            Attempted::Retry { .. } => "retry",
            Attempted::Failed(_) => "failed",
        };
        self.0.with_label_values(&[outcome]).inc();
    }
}

/// The actor's state.
pub struct SenderState {
    args: SenderArgs,
    pacer: Pacer,
    policy: RetryPolicy,
    /// Claimed, waiting for their turn.
    waiting: VecDeque<Outgoing>,
    in_flight: usize,
    /// The earliest wake already scheduled, so waits do not pile up timers.
    wake_at: Option<Instant>,
}

/// The send queue actor.
pub struct Sender;

impl Actor for Sender {
    type Msg = SendMsg;
    type State = SenderState;
    type Arguments = SenderArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SendMsg>,
        args: SenderArgs,
    ) -> Result<SenderState, ActorProcessingErr> {
        let pacer = Pacer::new(
            args.config.messages_per_second,
            Duration::from_millis(args.config.chat_interval_ms),
        );
        let policy = RetryPolicy {
            max_attempts: args.config.max_attempts.max(1),
            base: Duration::from_millis(args.config.retry_base_ms),
        };
        // Messages queued before a stop (or left by a dead sender) are taken up at once.
        myself.send_message(SendMsg::Wake)?;
        Ok(SenderState {
            args,
            pacer,
            policy,
            waiting: VecDeque::new(),
            in_flight: 0,
            wake_at: None,
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<SendMsg>,
        message: SendMsg,
        state: &mut SenderState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SendMsg::Wake => {
                if state.wake_at.is_some_and(|at| Instant::now() >= at) {
                    state.wake_at = None;
                }
            }
            SendMsg::Done { chat, retry_after } => {
                state.in_flight = state.in_flight.saturating_sub(1);
                if let Some(wait) = retry_after {
                    state.pacer.pause(chat, Instant::now() + wait);
                }
            }
        }
        pump(&myself, state).await;
        Ok(())
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<SendMsg>,
        state: &mut SenderState,
    ) -> Result<(), ActorProcessingErr> {
        // Not sent yet: back to the queue for the next sender, without waiting for the lease.
        let ids: Vec<uuid::Uuid> = state.waiting.iter().map(|m| m.id).collect();
        if let Err(e) = queue::release(&state.args.db, &ids).await {
            tracing::warn!(error = %e, "could not release claimed messages; their lease will");
        }
        Ok(())
    }
}

/// Claims what is due, starts every send the pacer allows, and schedules the next look.
async fn pump(myself: &ActorRef<SendMsg>, state: &mut SenderState) {
    let per_second = state.args.config.messages_per_second.max(1) as usize;
    // Keep about two seconds of work at hand: enough to pace, little to hand back on a stop.
    if state.waiting.len() < per_second {
        let want = (2 * per_second).max(8) - state.waiting.len();
        match queue::claim_due(&state.args.db, Utc::now(), want as i64, LEASE).await {
            Ok(claimed) => state.waiting.extend(claimed),
            Err(e) => tracing::warn!(error = %e, "could not claim queued messages"),
        }
    }
    let now = Instant::now();
    let mut next: Option<Instant> = None;
    let mut i = 0;
    while i < state.waiting.len() && state.in_flight < MAX_IN_FLIGHT {
        let chat = state.waiting[i].chat_id;
        match state.pacer.turn(chat, now) {
            Turn::Now => {
                if let Some(message) = state.waiting.remove(i) {
                    state.in_flight += 1;
                    spawn_send(myself.clone(), state, message);
                }
            }
            Turn::ChatWait(at) => {
                next = Some(next.map_or(at, |n| n.min(at)));
                i += 1;
            }
            Turn::AllWait(at) => {
                next = Some(next.map_or(at, |n| n.min(at)));
                break;
            }
        }
    }
    state.pacer.forget_idle(now);
    let wake = match next {
        Some(at) => at,
        None if !state.waiting.is_empty() || state.in_flight >= MAX_IN_FLIGHT => {
            // A finishing send wakes the actor; this is a fallback.
            now + IDLE_POLL
        }
        None => idle_wake(state, now).await,
    };
    schedule(myself, state, wake);
}

/// When to look again with nothing at hand: when the next retry falls due, at most after
/// `IDLE_POLL`.
async fn idle_wake(state: &SenderState, now: Instant) -> Instant {
    match queue::next_due(&state.args.db).await {
        Ok(Some(due)) => {
            let wait = (due - Utc::now()).to_std().unwrap_or(Duration::ZERO);
            now + wait.min(IDLE_POLL)
        }
        Ok(None) => now + IDLE_POLL,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the send queue");
            now + IDLE_POLL
        }
    }
}

fn schedule(myself: &ActorRef<SendMsg>, state: &mut SenderState, at: Instant) {
    if state.wake_at.is_some_and(|w| w <= at) {
        return;
    }
    state.wake_at = Some(at);
    let wait = at.saturating_duration_since(Instant::now());
    myself.send_after(wait, || SendMsg::Wake);
}

/// Sends one message in its own task, records the attempt, and tells the actor.
fn spawn_send(myself: ActorRef<SendMsg>, state: &SenderState, message: Outgoing) {
    let db = state.args.db.clone();
    let telegram = state.args.telegram.clone();
    let policy = state.policy;
    let counters = state.args.counters.clone();
    tokio::spawn(async move {
        let photo = match &message.ticket_code {
            Some(code) => match ticket::qr_png(code) {
                Ok(png) => Some(png),
                Err(e) => {
                    tracing::warn!(message = %message.id, error = %e, "ticket image failed; sending the text alone");
                    None
                }
            },
            None => None,
        };
        let result = telegram
            .send(
                message.chat_id,
                &message.text,
                photo,
                message.button.as_ref(),
            )
            .await;
        let now = Utc::now();
        let (attempted, retry_after) = match result {
            Ok(()) => (Attempted::Sent, None),
            Err(failure) => {
                let attempt = u32::try_from(message.attempts).unwrap_or(0) + 1;
                let retry_after = match &failure {
                    Failure::RetryAfter(wait) => Some(*wait),
                    _ => None,
                };
                let attempted = match policy.after(attempt, &failure) {
                    Next::RetryIn(wait) => Attempted::Retry {
                        reason: failure.reason(),
                        at: now + chrono::Duration::from_std(wait).unwrap_or_default(),
                        counts: RetryPolicy::counts(&failure),
                    },
                    Next::GiveUp => Attempted::Failed(failure.reason()),
                };
                (attempted, retry_after)
            }
        };
        counters.count(&attempted);
        match &attempted {
            Attempted::Sent => {
                tracing::debug!(message = %message.id, kind = %message.kind, "notification sent")
            }
            Attempted::Retry { reason, .. } => {
                tracing::info!(message = %message.id, kind = %message.kind, %reason, "notification will be retried")
            }
            Attempted::Failed(reason) => {
                tracing::warn!(message = %message.id, kind = %message.kind, %reason, "notification failed")
            }
        }
        if let Err(e) = queue::record(&db, &message, &attempted, now).await {
            // The lease runs out and the message is tried again: late rather than lost.
            tracing::warn!(message = %message.id, error = %e, "could not record a send attempt");
        }
        let _ = myself.send_message(SendMsg::Done {
            chat: message.chat_id,
            retry_after,
        });
    });
}

/// The handle consumers and the bot poke after queuing.
#[derive(Clone)]
pub struct SendQueue {
    actor: ActorRef<SendMsg>,
}

impl SendQueue {
    /// Starts the actor.
    pub async fn start(args: SenderArgs) -> Result<SendQueue, ractor::SpawnErr> {
        let (actor, _) = Actor::spawn(None, Sender, args).await?;
        Ok(SendQueue { actor })
    }

    /// Tells the actor something was queued.
    pub fn wake(&self) {
        let _ = self.actor.send_message(SendMsg::Wake);
    }

    /// Stops the actor; what it had claimed goes back to the queue.
    pub async fn stop(&self) {
        self.actor.stop(None);
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.actor.get_status() != ractor::ActorStatus::Stopped && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
