//! The waiting room of an on-sale: who stands where, how many are let in and when, and what a
//! visitor is told. Visitors who come before the on-sale time form a pre-queue whose order is
//! drawn at random at that time (`draw`); everyone later queues in arrival order. Admissions
//! (`admission`) are signed, so any node checks them without reading the queue; so are the
//! passes (`pass`) a visitor reads their place with.

pub mod admission;
pub mod draw;
pub mod pass;

use crate::validation::{FieldError, FieldErrors};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// Admissions per minute an organizer may set.
pub const RATE: std::ops::RangeInclusive<i64> = 1..=1_000_000;
/// Minutes an admission lasts.
pub const ADMISSION_MINUTES: std::ops::RangeInclusive<i64> = 1..=120;
/// Minutes a place is kept after its visitor leaves.
pub const GRACE_MINUTES: std::ops::RangeInclusive<i64> = 0..=120;
/// An admission lasts this long unless the organizer says otherwise.
pub const DEFAULT_ADMISSION_MINUTES: i64 = 10;
/// A place is kept this long after leaving unless the organizer says otherwise.
pub const DEFAULT_GRACE_MINUTES: i64 = 5;

/// How an organizer sets a room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoomSettings {
    /// When the sale opens: the pre-queue is drawn and admissions begin.
    pub on_sale_at: DateTime<Utc>,
    /// Visitors let in per minute.
    pub admit_per_minute: i32,
    /// How long an admission lasts.
    pub admission_minutes: i32,
    /// How long a place is kept after its visitor leaves.
    pub grace_minutes: i32,
}

/// Checks numbers as sent, each against its range, under its field name.
pub fn check_settings(
    errors: &mut FieldErrors,
    admit_per_minute: i64,
    admission_minutes: i64,
    grace_minutes: i64,
) {
    for (field, value, range) in [
        ("admitPerMinute", admit_per_minute, RATE),
        ("admissionMinutes", admission_minutes, ADMISSION_MINUTES),
        ("graceMinutes", grace_minutes, GRACE_MINUTES),
    ] {
        if !range.contains(&value) {
            errors.add(
                field,
                FieldError::OutOfRange {
                    min: *range.start(),
                    max: *range.end(),
                },
            );
        }
    }
}

/// Where a visitor stands, as they are told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PlaceStatus {
    /// Came before the on-sale time; the order is drawn when the sale opens.
    PreQueue,
    /// In line.
    Waiting,
    /// Let in: the admission is valid until it expires.
    Admitted,
    /// Was let in but did not register in time.
    Expired,
    /// Left; the place is kept until the grace period ends.
    Left,
    /// No seat is left; the waiting list is open instead.
    SoldOut,
}

/// What the room knows of one place, enough to tell its visitor where they stand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlaceFacts {
    /// The place's turn.
    pub ordinal: i64,
    /// The pre-queue has not been drawn yet and this place is in it.
    pub undrawn: bool,
    /// When its visitor left, if they did.
    pub left_at: Option<DateTime<Utc>>,
    /// When its visitor first saw the admission.
    pub admitted_at: Option<DateTime<Utc>>,
}

/// What the room knows of itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoomFacts {
    /// Every kept place up to here is admitted.
    pub admitted_through: i64,
    /// Admissions per minute.
    pub admit_per_minute: i32,
    /// How long an admission lasts.
    pub admission_minutes: i32,
    /// How long a place is kept after leaving.
    pub grace_minutes: i32,
    /// No seat is left.
    pub sold_out: bool,
}

/// Whether a place is still held: its visitor is there, or left less than the grace ago.
pub fn kept(left_at: Option<DateTime<Utc>>, grace_minutes: i32, now: DateTime<Utc>) -> bool {
    left_at.is_none_or(|left| now < left + Duration::minutes(i64::from(grace_minutes)))
}

/// The status of a place at `now`.
pub fn status_of(room: &RoomFacts, place: &PlaceFacts, now: DateTime<Utc>) -> PlaceStatus {
    if place.left_at.is_some() {
        return PlaceStatus::Left;
    }
    if place.undrawn {
        return PlaceStatus::PreQueue;
    }
    if place.ordinal <= room.admitted_through {
        return match place.admitted_at {
            Some(at) if now >= admission_expiry(at, room.admission_minutes) => PlaceStatus::Expired,
            _ => PlaceStatus::Admitted,
        };
    }
    if room.sold_out {
        PlaceStatus::SoldOut
    } else {
        PlaceStatus::Waiting
    }
}

/// When an admission first seen at `admitted_at` stops working.
pub fn admission_expiry(admitted_at: DateTime<Utc>, admission_minutes: i32) -> DateTime<Utc> {
    admitted_at + Duration::minutes(i64::from(admission_minutes))
}

/// How many places stand between the cursor and this one, at most: places left behind by
/// their visitors still count until the admitter passes them.
pub fn ahead(ordinal: i64, admitted_through: i64) -> i64 {
    (ordinal - admitted_through - 1).max(0)
}

/// The wait, at the room's rate, until `ahead` places have been let in and this one too.
pub fn estimated_wait(ahead: i64, admit_per_minute: i32) -> Duration {
    let rate = i64::from(admit_per_minute.max(1));
    // Rounded up to the second: the place itself is the (ahead + 1)-th to go.
    Duration::seconds(((ahead + 1) * 60 + rate - 1) / rate)
}

/// Admissions owed for the time from the room's clock to `now` at `admit_per_minute`, and
/// where the clock moves once they are given. The clock moves by exactly the time those
/// admissions took, so a fraction left over is owed at the next run and the rate holds
/// however often the admitter runs.
pub fn owed(
    clock: DateTime<Utc>,
    admit_per_minute: i32,
    now: DateTime<Utc>,
) -> (i64, DateTime<Utc>) {
    let rate = i64::from(admit_per_minute.max(1));
    let elapsed_ms = (now - clock).num_milliseconds();
    if elapsed_ms <= 0 {
        return (0, clock);
    }
    let due = elapsed_ms.saturating_mul(rate) / 60_000;
    let spent_ms = due * 60_000 / rate;
    (due, clock + Duration::milliseconds(spent_ms))
}

/// Where the clock goes when fewer places waited than were owed: to now. Admissions are not
/// banked while the line is empty, so later arrivals still come in at the rate.
pub fn clock_after(
    given: i64,
    owed: i64,
    moved: DateTime<Utc>,
    now: DateTime<Utc>,
) -> DateTime<Utc> {
    if given < owed { now } else { moved }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    fn room(admitted_through: i64) -> RoomFacts {
        RoomFacts {
            admitted_through,
            admit_per_minute: 60,
            admission_minutes: 10,
            grace_minutes: 5,
            sold_out: false,
        }
    }

    fn place(ordinal: i64) -> PlaceFacts {
        PlaceFacts {
            ordinal,
            undrawn: false,
            left_at: None,
            admitted_at: None,
        }
    }

    #[test]
    fn the_rate_holds_whatever_the_admitter_s_rhythm() {
        // 100 a minute, asked every 250 ms for a minute: exactly 100, none lost to rounding.
        let mut clock = at(0);
        let mut given = 0;
        for tick in 1..=240 {
            let (due, moved) = owed(clock, 100, at(0) + Duration::milliseconds(tick * 250));
            given += due;
            clock = moved;
        }
        assert_eq!(given, 100);
        // Asked once after a minute: the same.
        assert_eq!(owed(at(0), 100, at(60)).0, 100);
        // Nothing owed for no time, or for a clock ahead of now.
        assert_eq!(owed(at(5), 100, at(5)), (0, at(5)));
        assert_eq!(owed(at(6), 100, at(5)), (0, at(6)));
    }

    #[test]
    fn admissions_are_not_banked_while_nobody_waits() {
        let (due, moved) = owed(at(0), 60, at(10));
        assert_eq!(due, 10);
        assert_eq!(clock_after(3, due, moved, at(10)), at(10));
        assert_eq!(clock_after(10, due, moved, at(10)), moved);
    }

    #[test]
    fn a_place_is_told_where_it_stands() {
        let now = at(100);
        assert_eq!(status_of(&room(0), &place(1), now), PlaceStatus::Waiting);
        assert_eq!(status_of(&room(1), &place(1), now), PlaceStatus::Admitted);
        let seen = PlaceFacts {
            admitted_at: Some(at(0)),
            ..place(1)
        };
        assert_eq!(status_of(&room(1), &seen, now), PlaceStatus::Admitted);
        assert_eq!(
            status_of(&room(1), &seen, at(600)),
            PlaceStatus::Expired,
            "ten minutes after it was first seen"
        );
        let undrawn = PlaceFacts {
            undrawn: true,
            ..place(1)
        };
        assert_eq!(status_of(&room(0), &undrawn, now), PlaceStatus::PreQueue);
        let sold_out = RoomFacts {
            sold_out: true,
            ..room(1)
        };
        assert_eq!(status_of(&sold_out, &place(2), now), PlaceStatus::SoldOut);
        assert_eq!(
            status_of(&sold_out, &place(1), now),
            PlaceStatus::Admitted,
            "an admission given keeps working: a seat may free"
        );
        let left = PlaceFacts {
            left_at: Some(at(50)),
            ..place(1)
        };
        assert_eq!(status_of(&room(5), &left, now), PlaceStatus::Left);
    }

    #[test]
    fn a_place_is_kept_through_the_grace_period() {
        assert!(kept(None, 5, at(0)));
        assert!(kept(Some(at(0)), 5, at(299)));
        assert!(!kept(Some(at(0)), 5, at(300)));
        assert!(!kept(Some(at(0)), 0, at(0)));
    }

    #[test]
    fn the_wait_is_the_places_ahead_at_the_rate() {
        assert_eq!(ahead(10, 4), 5);
        assert_eq!(ahead(3, 4), 0);
        assert_eq!(estimated_wait(0, 60), Duration::seconds(1));
        assert_eq!(estimated_wait(119, 60), Duration::seconds(120));
        assert_eq!(estimated_wait(0, 1_000_000), Duration::seconds(1));
        assert_eq!(
            estimated_wait(5, 0),
            Duration::seconds(360),
            "no rate is one a minute"
        );
    }

    #[test]
    fn settings_out_of_range_are_named() {
        let mut errors = FieldErrors::new();
        check_settings(&mut errors, 0, 121, -1);
        let text = format!("{:?}", errors);
        for field in ["admitPerMinute", "admissionMinutes", "graceMinutes"] {
            assert!(text.contains(field), "{field} in {text}");
        }
        let mut fine = FieldErrors::new();
        check_settings(&mut fine, 1_000_000, 120, 0);
        assert!(fine.into_result().is_ok());
    }
}
