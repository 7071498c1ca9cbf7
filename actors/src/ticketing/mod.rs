//! Ticketing: event actors supervising ticket-type actors (ractor), their registry, the node's
//! committer that writes the batches of many ticket types together, and the node's timer over
//! stored deadlines.

mod committer;
mod event;
mod registry;
mod ticket_type;
mod timers;

pub use registry::{Ticketing, TicketingError};
pub use timers::{Deadlines, ReservationTimer};

/// What is left of `idle` for an actor quiet for `quiet`; `None` once it has been idle that
/// long. One timer per actor asks this, re-armed for what is left, instead of a timer per
/// request (at thousands of requests a second those were millions of sleeping tasks).
fn idle_left(quiet: std::time::Duration, idle: std::time::Duration) -> Option<std::time::Duration> {
    idle.checked_sub(quiet).filter(|left| !left.is_zero())
}

#[cfg(test)]
mod tests {
    use super::idle_left;
    use std::time::Duration;

    #[test]
    fn an_actor_is_idle_once_quiet_for_the_whole_idle_time() {
        let idle = Duration::from_secs(300);
        assert_eq!(idle_left(Duration::ZERO, idle), Some(idle));
        assert_eq!(
            idle_left(Duration::from_secs(120), idle),
            Some(Duration::from_secs(180))
        );
        assert_eq!(idle_left(idle, idle), None);
        assert_eq!(idle_left(Duration::from_secs(301), idle), None);
    }
}
