//! Ticketing: event actors supervising ticket-type actors (ractor), their registry, the node's
//! committer that writes the batches of many ticket types together, and the node's timer over
//! stored deadlines.

mod alarm;
mod committer;
mod event;
mod first_reads;
mod registry;
mod supervisor;
mod ticket_type;
mod timers;

pub use committer::when_idle;
pub use registry::{Ticketing, TicketingError};
pub use timers::{Deadlines, ReservationTimer};

/// What is left of `idle` for an actor quiet for `quiet`; `None` once it has been idle that
/// long. One timer per actor asks this, re-armed for what is left, instead of a timer per
/// request (at thousands of requests a second those were millions of sleeping tasks).
fn idle_left(quiet: std::time::Duration, idle: std::time::Duration) -> Option<std::time::Duration> {
    idle.checked_sub(quiet).filter(|left| !left.is_zero())
}

/// Most failures of one ticket type's actor within a minute that are met by starting it again.
const MAX_RESTARTS: usize = 5;

/// How long a ticket type's actor waits to be started again after its `failures`-th failure
/// within a minute (doubling from 50 ms); `None` past `MAX_RESTARTS`: then it is not a blip.
fn restart_pause(failures: usize) -> Option<std::time::Duration> {
    (1..=MAX_RESTARTS)
        .contains(&failures)
        .then(|| std::time::Duration::from_millis(50 << (failures - 1)))
}

#[cfg(test)]
mod tests {
    use super::{idle_left, restart_pause};
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

    #[test]
    fn a_failing_actor_waits_longer_each_time_then_is_given_up() {
        let pauses: Vec<Option<u64>> = (0..=6)
            .map(|n| restart_pause(n).map(|p| p.as_millis() as u64))
            .collect();
        assert_eq!(
            pauses,
            vec![
                None,
                Some(50),
                Some(100),
                Some(200),
                Some(400),
                Some(800),
                None
            ]
        );
    }
}
