//! The event state machine: DRAFT → PUBLISHED (only with a future start) ⇄ DRAFT; DRAFT or
//! PUBLISHED → CANCELLED; PUBLISHED → COMPLETED. CANCELLED and COMPLETED are final.

use super::refusals::EventRefusal;
use crate::error::Refusal;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Status of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventStatus {
    /// Being prepared, visible to organizers only.
    Draft,
    /// Visible and taking registrations.
    Published,
    /// Called off.
    Cancelled,
    /// Took place.
    Completed,
}

/// A requested change of status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Make visible.
    Publish,
    /// Back to draft.
    Unpublish,
    /// Call off.
    Cancel,
    /// Mark as held.
    Complete,
}

impl EventStatus {
    /// Database and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "DRAFT",
            Self::Published => "PUBLISHED",
            Self::Cancelled => "CANCELLED",
            Self::Completed => "COMPLETED",
        }
    }

    /// CANCELLED and COMPLETED events never change again.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Cancelled | Self::Completed)
    }

    /// The state after `action`, or why it is refused.
    pub fn apply(
        self,
        action: Action,
        starts_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<EventStatus, Refusal> {
        use Action::*;
        use EventStatus::*;
        match (self, action) {
            (Draft, Publish) if starts_at > now => Ok(Published),
            (Draft, Publish) => Err(Refusal::from(EventRefusal::PublishAfterStart)),
            (Published, Unpublish) => Ok(Draft),
            (Draft | Published, Cancel) => Ok(Cancelled),
            // Cancelling twice (a retried request) leaves it as it is.
            (Cancelled, Cancel) => Ok(Cancelled),
            (Published, Complete) => Ok(Completed),
            (from, _) if from.is_final() => Err(final_state()),
            _ => Err(Refusal::from(EventRefusal::ActionUnavailable)),
        }
    }
}

/// When a published event completes by itself: at its end, or a day after its start when it
/// has no end (so an evening event is not completed while it is still going on).
pub fn completes_at(starts_at: DateTime<Utc>, ends_at: Option<DateTime<Utc>>) -> DateTime<Utc> {
    ends_at.unwrap_or(starts_at + chrono::Duration::hours(24))
}

/// The refusal for any change to a final event.
pub fn final_state() -> Refusal {
    Refusal::from(EventRefusal::FinalState)
}

/// Whether an event in `status` may be deleted: a published one must be cancelled first, so
/// its participants are told.
pub fn may_delete(status: EventStatus) -> Result<(), Refusal> {
    match status {
        EventStatus::Published => Err(Refusal::from(EventRefusal::PublishedNotDeletable)),
        _ => Ok(()),
    }
}

impl FromStr for EventStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "DRAFT" => Ok(Self::Draft),
            "PUBLISHED" => Ok(Self::Published),
            "CANCELLED" => Ok(Self::Cancelled),
            "COMPLETED" => Ok(Self::Completed),
            _ => Err(()),
        }
    }
}

/// Who may see the list of participants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema, Default)]
#[serde(rename_all = "UPPERCASE")]
pub enum ParticipantsVisibility {
    /// A participant sees only their own registration.
    #[default]
    Closed,
    /// Participants see who registered and the distribution by ticket type.
    Open,
}

impl ParticipantsVisibility {
    /// Database and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "CLOSED",
            Self::Open => "OPEN",
        }
    }
}

impl FromStr for ParticipantsVisibility {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "CLOSED" => Ok(Self::Closed),
            "OPEN" => Ok(Self::Open),
            _ => Err(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;
    use EventStatus::*;

    #[test]
    fn transitions_follow_the_table() {
        let now = Utc::now();
        let future = now + chrono::Duration::days(1);
        let past = now - chrono::Duration::hours(1);
        assert_eq!(Draft.apply(Publish, future, now), Ok(Published));
        assert!(
            Draft.apply(Publish, past, now).is_err(),
            "no publishing a past event"
        );
        assert!(
            Published.apply(Publish, future, now).is_err(),
            "no publishing twice"
        );
        assert_eq!(Published.apply(Unpublish, future, now), Ok(Draft));
        assert_eq!(Draft.apply(Cancel, future, now), Ok(Cancelled));
        assert_eq!(Published.apply(Cancel, future, now), Ok(Cancelled));
        assert_eq!(Published.apply(Complete, future, now), Ok(Completed));
        assert!(Draft.apply(Complete, future, now).is_err());
        assert!(Draft.apply(Unpublish, future, now).is_err());
        assert_eq!(
            Cancelled.apply(Cancel, future, now),
            Ok(Cancelled),
            "cancelling again changes nothing"
        );
        for (last, actions) in [
            (Cancelled, vec![Publish, Unpublish, Complete]),
            (Completed, vec![Publish, Unpublish, Cancel, Complete]),
        ] {
            for action in actions {
                assert_eq!(
                    last.apply(action, future, now),
                    Err(final_state()),
                    "{last:?} is final"
                );
            }
        }
    }

    #[test]
    fn only_an_unpublished_event_is_deleted() {
        assert_eq!(
            may_delete(Published),
            Err(Refusal::from(EventRefusal::PublishedNotDeletable))
        );
        for status in [Draft, Cancelled, Completed] {
            assert_eq!(may_delete(status), Ok(()), "{status:?}");
        }
    }

    #[test]
    fn an_event_completes_at_its_end_or_a_day_after_its_start() {
        let start = Utc::now();
        let end = start + chrono::Duration::hours(3);
        assert_eq!(completes_at(start, Some(end)), end);
        assert_eq!(
            completes_at(start, None),
            start + chrono::Duration::hours(24)
        );
    }
}
