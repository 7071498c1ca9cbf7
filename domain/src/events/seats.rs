//! Seat rules judged inside a ticket type's group commit: who may see the event, whether the
//! ticket type sells now, and the refusals a seat request can get (stored with its
//! idempotency key, so a retry gets the same answer).

use super::lifecycle::EventStatus;
use super::refusals::EventRefusal;
use crate::error::{ErrorCode, Refusal};
use chrono::{DateTime, Utc};
use std::str::FromStr;

/// Why a seat request was refused after being judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeatRefusal {
    /// No seat left.
    SoldOut,
    /// The user already holds an active registration for the event.
    AlreadyRegistered,
    /// The ticket type is inactive or outside its sales window.
    NotOnSale,
    /// The event is not published (cancelled, completed, back to draft).
    NotPublished,
}

impl SeatRefusal {
    /// Stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SoldOut => "SOLD_OUT",
            Self::AlreadyRegistered => "ALREADY_REGISTERED",
            Self::NotOnSale => "NOT_ON_SALE",
            Self::NotPublished => "NOT_PUBLISHED",
        }
    }

    /// The error the caller gets.
    pub fn refusal(self) -> Refusal {
        match self {
            Self::SoldOut => Refusal::new(ErrorCode::SoldOut),
            Self::AlreadyRegistered => Refusal::from(EventRefusal::AlreadyRegistered),
            Self::NotOnSale => Refusal::from(EventRefusal::NotOnSale),
            Self::NotPublished => Refusal::from(EventRefusal::NotTakingRegistrations),
        }
    }
}

impl FromStr for SeatRefusal {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "SOLD_OUT" => Self::SoldOut,
            "ALREADY_REGISTERED" => Self::AlreadyRegistered,
            "NOT_ON_SALE" => Self::NotOnSale,
            "NOT_PUBLISHED" => Self::NotPublished,
            _ => return Err(()),
        })
    }
}

/// Whether a ticket type sells at `now`: active, and inside its sales window (start
/// inclusive, end exclusive).
pub fn on_sale(
    is_active: bool,
    sales_start: Option<DateTime<Utc>>,
    sales_end: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> bool {
    is_active && sales_start.is_none_or(|s| now >= s) && sales_end.is_none_or(|e| now < e)
}

/// Who is asking, as far as event visibility goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Viewer {
    /// The caller acts for the event's own organization.
    pub same_tenant: bool,
    /// The caller is a member of the event's group (private events).
    pub in_group: bool,
}

/// Whether a viewer sees an event at all; mirrors the row-level policies on events so the
/// group commit (which reads as the event's tenant) refuses exactly what a read would hide.
pub fn visible(status: EventStatus, deleted: bool, private: bool, viewer: Viewer) -> bool {
    if deleted {
        return false;
    }
    if viewer.same_tenant {
        return true;
    }
    matches!(status, EventStatus::Published | EventStatus::Completed)
        && (!private || viewer.in_group)
}

/// Whether a viewer sees a ticket type: inactive types are shown to the organization's own
/// staff only (everyone else is told there is no such type).
pub fn type_offered(is_active: bool, viewer: Viewer) -> bool {
    is_active || viewer.same_tenant
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn sales_window_is_start_inclusive_end_exclusive() {
        let now = Utc::now();
        assert!(on_sale(true, None, None, now));
        assert!(!on_sale(false, None, None, now));
        assert!(on_sale(true, Some(now), None, now));
        assert!(!on_sale(true, Some(now + Duration::seconds(1)), None, now));
        assert!(!on_sale(true, None, Some(now), now));
        assert!(on_sale(true, None, Some(now + Duration::seconds(1)), now));
    }

    #[test]
    fn outsiders_see_only_published_or_completed_events_of_their_groups() {
        let outsider = Viewer {
            same_tenant: false,
            in_group: false,
        };
        let member = Viewer {
            same_tenant: false,
            in_group: true,
        };
        let staff = Viewer {
            same_tenant: true,
            in_group: false,
        };
        assert!(visible(EventStatus::Published, false, false, outsider));
        assert!(!visible(EventStatus::Draft, false, false, outsider));
        assert!(visible(EventStatus::Draft, false, false, staff));
        assert!(!visible(EventStatus::Published, false, true, outsider));
        assert!(visible(EventStatus::Published, false, true, member));
        assert!(!visible(EventStatus::Published, true, false, staff));
    }

    #[test]
    fn refusals_round_trip_through_their_stored_names() {
        for r in [
            SeatRefusal::SoldOut,
            SeatRefusal::AlreadyRegistered,
            SeatRefusal::NotOnSale,
            SeatRefusal::NotPublished,
        ] {
            assert_eq!(r.as_str().parse::<SeatRefusal>(), Ok(r));
        }
    }
}
