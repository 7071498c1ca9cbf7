//! Copying an event: the copy is a new draft with the source's details and ticket types, moved
//! in time as a whole, so an evening repeated next month keeps its shape (doors, sales windows
//! and the end stay where they were relative to the start).

use chrono::{DateTime, TimeDelta, Utc};

/// How a copy's times move: from the source's start to the copy's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shift(TimeDelta);

impl Shift {
    /// The move from `source_start` to `copy_start` (none when the copy keeps the date).
    pub fn between(source_start: DateTime<Utc>, copy_start: Option<DateTime<Utc>>) -> Shift {
        Shift(copy_start.map_or(TimeDelta::zero(), |start| start - source_start))
    }

    /// `time` moved with the start; None when it would leave the years the API writes
    /// (0001 to 9999, four digits): a copy into the year 200,000 or before Christ is a
    /// mistake, not a plan.
    pub fn apply(self, time: DateTime<Utc>) -> Option<DateTime<Utc>> {
        time.checked_add_signed(self.0)
            .filter(|t| (EARLIEST_SECONDS..LATEST_SECONDS).contains(&t.timestamp()))
    }

    /// An optional time moved with the start.
    pub fn apply_opt(
        self,
        time: Option<DateTime<Utc>>,
    ) -> Result<Option<DateTime<Utc>>, PastCalendar> {
        time.map(|t| self.apply(t).ok_or(PastCalendar)).transpose()
    }
}

/// A time moved past the year 9999.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PastCalendar;

/// 10000-01-01T00:00:00Z: the API writes years with four digits.
const LATEST_SECONDS: i64 = 253_402_300_800;
/// 0001-01-01T00:00:00Z.
const EARLIEST_SECONDS: i64 = -62_135_596_800;

/// A copy's title: the one asked for (trimmed; the API refuses a blank one), or the source's.
pub fn title(source: &str, asked: Option<&str>) -> String {
    asked.map_or(source, str::trim).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn every_time_moves_with_the_start() {
        let shift = Shift::between(at("2026-12-01T18:00:00Z"), Some(at("2027-01-12T19:30:00Z")));
        assert_eq!(
            shift.apply(at("2026-12-01T21:00:00Z")),
            Some(at("2027-01-12T22:30:00Z"))
        );
        assert_eq!(
            shift.apply_opt(Some(at("2026-11-01T09:00:00Z"))),
            Ok(Some(at("2026-12-13T10:30:00Z")))
        );
        assert_eq!(shift.apply_opt(None), Ok(None));
    }

    #[test]
    fn keeping_the_date_moves_nothing_and_the_far_future_is_refused() {
        let same = Shift::between(at("2026-12-01T18:00:00Z"), None);
        assert_eq!(
            same.apply(at("2026-12-01T21:00:00Z")),
            Some(at("2026-12-01T21:00:00Z"))
        );
        let far = Shift::between(at("2001-01-01T00:00:00Z"), Some(at("9999-01-01T00:00:00Z")));
        assert_eq!(
            far.apply(at("2001-06-01T00:00:00Z")),
            Some(at("9999-06-01T00:00:00Z"))
        );
        assert_eq!(
            far.apply_opt(Some(at("2003-01-01T00:00:00Z"))),
            Err(PastCalendar)
        );
        let back = Shift::between(at("9999-01-01T00:00:00Z"), Some(at("2000-01-01T00:00:00Z")));
        assert_eq!(
            back.apply(at("7000-01-01T00:00:00Z")),
            None,
            "before the year 1"
        );
    }

    #[test]
    fn the_title_is_the_asked_one_trimmed_or_the_sources() {
        assert_eq!(title("Jazz night", None), "Jazz night");
        assert_eq!(
            title("Jazz night", Some(" Jazz night II ")),
            "Jazz night II"
        );
    }
}
