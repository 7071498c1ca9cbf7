//! Waiting-list rules: who may join, how many freed seats are offered, and how long an offered
//! seat is held for its person.

use super::lifecycle::EventStatus;
use super::refusals::EventRefusal;
use crate::error::Refusal;
use chrono::Duration;

/// How long a freed seat is held for the person it is offered to.
pub fn hold() -> Duration {
    Duration::hours(24)
}

/// Whether anyone may join a waiting list of an event in `status`: only a published event
/// takes registrations, and so waiting entries.
pub fn takes_entries(status: EventStatus) -> Result<(), Refusal> {
    if status == EventStatus::Published {
        Ok(())
    } else {
        Err(Refusal::from(EventRefusal::NotTakingRegistrations))
    }
}

/// Whether a ticket type with `free` seats has a waiting list to join: only a sold-out one;
/// with a seat left one registers instead.
pub fn may_wait(free: i32) -> Result<(), Refusal> {
    if free > 0 {
        Err(Refusal::from(EventRefusal::SeatsStillFree))
    } else {
        Ok(())
    }
}

/// How many of a ticket type's `free` seats go to the people waiting: all of them, but only
/// while they are of use (`open`: the event takes registrations and the type is on sale).
pub fn seats_to_offer(free: i32, open: bool) -> i64 {
    if open { i64::from(free.max(0)) } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_published_event_takes_entries() {
        assert_eq!(takes_entries(EventStatus::Published), Ok(()));
        for status in [
            EventStatus::Draft,
            EventStatus::Cancelled,
            EventStatus::Completed,
        ] {
            assert_eq!(
                takes_entries(status),
                Err(Refusal::from(EventRefusal::NotTakingRegistrations))
            );
        }
    }

    #[test]
    fn only_a_sold_out_type_has_a_list() {
        assert_eq!(may_wait(0), Ok(()));
        assert_eq!(may_wait(-1), Ok(()), "oversold by a held seat");
        assert_eq!(
            may_wait(1),
            Err(Refusal::from(EventRefusal::SeatsStillFree))
        );
    }

    #[test]
    fn free_seats_are_offered_only_while_they_sell() {
        assert_eq!(seats_to_offer(3, true), 3);
        assert_eq!(seats_to_offer(3, false), 0);
        assert_eq!(seats_to_offer(0, true), 0);
        assert_eq!(seats_to_offer(-2, true), 0);
    }
}
