//! The rules of the send queue: the states of a message, what each attempt leaves in the send
//! log, what to do after a failure, and the pacing that keeps to the messenger's limits
//! (about 30 messages a second overall and one a second per chat).

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Where a queued message stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageStatus {
    /// Waiting for its turn (or for its next try).
    Queued,
    /// Handed to a sender; the lease says until when.
    Sending,
    /// The messenger accepted it.
    Sent,
    /// Given up: a permanent refusal or too many tries.
    Failed,
    /// Not sent on purpose: no linked chat, opted out, or the bot is off.
    Skipped,
}

impl MessageStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Queued => "QUEUED",
            MessageStatus::Sending => "SENDING",
            MessageStatus::Sent => "SENT",
            MessageStatus::Failed => "FAILED",
            MessageStatus::Skipped => "SKIPPED",
        }
    }

    /// The status a stored name stands for.
    pub fn parse(name: &str) -> Option<MessageStatus> {
        [
            MessageStatus::Queued,
            MessageStatus::Sending,
            MessageStatus::Sent,
            MessageStatus::Failed,
            MessageStatus::Skipped,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// What one attempt left in the send log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LogOutcome {
    /// Delivered to the messenger.
    Sent,
    /// Failed; another try follows.
    Retry,
    /// Failed for good.
    Failed,
    /// Not attempted on purpose.
    Skipped,
}

impl LogOutcome {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogOutcome::Sent => "SENT",
            LogOutcome::Retry => "RETRY",
            LogOutcome::Failed => "FAILED",
            LogOutcome::Skipped => "SKIPPED",
        }
    }
}

/// Why a message is not sent at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// The user never linked a messenger chat.
    NoChat,
    /// The user switched this kind of message off.
    OptedOut,
    /// No bot token is configured.
    BotDisabled,
}

impl SkipReason {
    /// The stored reason.
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::NoChat => "no_linked_chat",
            SkipReason::OptedOut => "opted_out",
            SkipReason::BotDisabled => "bot_disabled",
        }
    }
}

/// How a send attempt failed, as far as the rules care.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The messenger asked us to wait (HTTP 429 with `retry_after`).
    RetryAfter(Duration),
    /// Worth another try: network trouble, a 5xx, an unreadable answer.
    Transient(String),
    /// Will never work: blocked bot, unknown chat, refused text.
    Permanent(String),
}

impl Failure {
    /// The reason written to the send log.
    pub fn reason(&self) -> String {
        match self {
            Failure::RetryAfter(wait) => format!("rate_limited: retry after {} s", wait.as_secs()),
            Failure::Transient(why) => format!("transient: {why}"),
            Failure::Permanent(why) => format!("permanent: {why}"),
        }
    }
}

/// Retry settings.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Tries of a message failing for passing reasons before giving up.
    pub max_attempts: u32,
    /// Wait before the second try; doubles with each further one.
    pub base: Duration,
}

/// What follows a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Try again after this long.
    RetryIn(Duration),
    /// Stop: the message has failed.
    GiveUp,
}

impl RetryPolicy {
    /// What to do after attempt number `attempt` (from 1) failed with `failure`. A 429 is the
    /// messenger's pacing, not the message's fault, so it does not use up a try.
    pub fn after(&self, attempt: u32, failure: &Failure) -> Next {
        match failure {
            Failure::RetryAfter(wait) => Next::RetryIn(*wait),
            Failure::Permanent(_) => Next::GiveUp,
            Failure::Transient(_) if attempt >= self.max_attempts => Next::GiveUp,
            Failure::Transient(_) => Next::RetryIn(
                self.base
                    .saturating_mul(1u32 << attempt.saturating_sub(1).min(10)),
            ),
        }
    }

    /// Whether `failure` counts against the message's tries.
    pub fn counts(failure: &Failure) -> bool {
        !matches!(failure, Failure::RetryAfter(_))
    }
}

/// Keeps sends within the limits: evenly spaced overall, a minimum gap per chat, and a full
/// stop while the messenger's `retry_after` runs.
#[derive(Debug)]
pub struct Pacer {
    spacing: Duration,
    chat_gap: Duration,
    next_slot: Option<Instant>,
    chat_free_at: HashMap<i64, Instant>,
    paused_until: Option<Instant>,
}

/// The pacer's answer for one chat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Send now; the slot is taken.
    Now,
    /// Nothing may go out before this instant (overall limit or a pause).
    AllWait(Instant),
    /// This chat may not get a message before this instant; others may.
    ChatWait(Instant),
}

impl Pacer {
    /// A pacer allowing `per_second` messages overall and one per `chat_gap` per chat.
    pub fn new(per_second: u32, chat_gap: Duration) -> Pacer {
        Pacer {
            spacing: Duration::from_secs(1) / per_second.max(1),
            chat_gap,
            next_slot: None,
            chat_free_at: HashMap::new(),
            paused_until: None,
        }
    }

    /// Asks to send to `chat` at `now`; on `Turn::Now` the overall and the chat's slot are
    /// taken.
    pub fn turn(&mut self, chat: i64, now: Instant) -> Turn {
        if let Some(until) = self.paused_until {
            if now < until {
                return Turn::AllWait(until);
            }
            self.paused_until = None;
        }
        if let Some(slot) = self.next_slot
            && now < slot
        {
            return Turn::AllWait(slot);
        }
        if let Some(free) = self.chat_free_at.get(&chat)
            && now < *free
        {
            return Turn::ChatWait(*free);
        }
        // Slots do not pile up while idle: a quiet minute does not buy a burst afterwards.
        self.next_slot = Some(now + self.spacing);
        self.chat_free_at.insert(chat, now + self.chat_gap);
        Turn::Now
    }

    /// Stops every send until `until` (the messenger's 429); the chat waits at least as long.
    pub fn pause(&mut self, chat: i64, until: Instant) {
        self.paused_until = Some(self.paused_until.map_or(until, |p| p.max(until)));
        let free = self.chat_free_at.entry(chat).or_insert(until);
        *free = (*free).max(until);
    }

    /// Forgets chats whose gap has passed, so the map does not grow with every chat ever seen.
    pub fn forget_idle(&mut self, now: Instant) {
        self.chat_free_at.retain(|_, free| *free > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_attempts: 3,
            base: Duration::from_secs(2),
        }
    }

    #[test]
    fn transient_failures_back_off_then_give_up() {
        let t = Failure::Transient("timeout".into());
        assert_eq!(policy().after(1, &t), Next::RetryIn(Duration::from_secs(2)));
        assert_eq!(policy().after(2, &t), Next::RetryIn(Duration::from_secs(4)));
        assert_eq!(policy().after(3, &t), Next::GiveUp);
        assert_eq!(
            policy().after(1, &Failure::Permanent("blocked".into())),
            Next::GiveUp
        );
    }

    #[test]
    fn a_429_waits_as_told_and_costs_no_try() {
        let wait = Failure::RetryAfter(Duration::from_secs(7));
        assert_eq!(
            policy().after(99, &wait),
            Next::RetryIn(Duration::from_secs(7))
        );
        assert!(!RetryPolicy::counts(&wait));
        assert!(RetryPolicy::counts(&Failure::Transient("x".into())));
        assert_eq!(wait.reason(), "rate_limited: retry after 7 s");
    }

    #[test]
    fn pacing_spaces_all_sends_and_each_chat() {
        let start = Instant::now();
        let mut p = Pacer::new(10, Duration::from_secs(1));
        assert_eq!(p.turn(1, start), Turn::Now);
        // The overall slot is taken for 100 ms, whatever the chat.
        assert_eq!(
            p.turn(2, start),
            Turn::AllWait(start + Duration::from_millis(100))
        );
        let later = start + Duration::from_millis(100);
        assert_eq!(
            p.turn(1, later),
            Turn::ChatWait(start + Duration::from_secs(1))
        );
        assert_eq!(p.turn(2, later), Turn::Now);
        // Ten chats in one second at most.
        let mut sent = 0;
        let mut now = start;
        let mut chat = 10;
        while now < start + Duration::from_secs(1) {
            if p.turn(chat, now) == Turn::Now {
                sent += 1;
                chat += 1;
            }
            now += Duration::from_millis(1);
        }
        assert!(sent <= 10, "{sent}");
    }

    #[test]
    fn a_pause_stops_everyone_until_it_ends() {
        let start = Instant::now();
        let mut p = Pacer::new(30, Duration::from_secs(1));
        let until = start + Duration::from_secs(3);
        p.pause(5, until);
        assert_eq!(p.turn(6, start), Turn::AllWait(until));
        assert_eq!(p.turn(5, until), Turn::Now);
        p.forget_idle(until + Duration::from_secs(2));
        assert!(p.chat_free_at.is_empty());
    }

    #[test]
    fn statuses_round_trip() {
        for s in ["QUEUED", "SENDING", "SENT", "FAILED", "SKIPPED"] {
            assert_eq!(MessageStatus::parse(s).map(|s| s.as_str()), Some(s));
        }
        assert_eq!(MessageStatus::parse("sent"), None);
    }
}
