//! Time as a dependency, so rules that depend on it (lockouts, token lifetimes, reservations)
//! are tested by moving a clock rather than by sleeping.

use chrono::{DateTime, Duration, NaiveTime, Utc};
use std::sync::Mutex;

/// A source of the current time.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now(&self) -> DateTime<Utc>;

    /// How long a timer may sleep towards a deadline before it reads this clock again. The
    /// system clock moves with the sleep, so timers sleep until their deadline (up to an
    /// hour, in case the host's clock is corrected); a clock that jumps is read often.
    fn recheck(&self) -> std::time::Duration {
        std::time::Duration::from_secs(3600)
    }

    /// Whether this clock claims to tell the real time, so it is checked against the
    /// database's (an events node whose clock is off owns no shards). A test's clock, moved on
    /// purpose, is not.
    fn tells_real_time(&self) -> bool {
        true
    }
}

/// The most a node's clock may differ from the database's before the node refuses to judge
/// deadlines (it owns no shards until its clock is right again).
pub const MAX_SKEW: Duration = Duration::seconds(1);

/// Whether a clock `off` from the database's is too far off to judge deadlines.
pub fn too_far_off(off: Duration) -> bool {
    off.abs() > MAX_SKEW
}

/// The system clock moved by a fixed offset: a host whose clock is wrong, for tests.
#[derive(Clone, Copy, Debug)]
pub struct OffsetClock(pub Duration);

impl Clock for OffsetClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now() + self.0
    }
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock that moves only when told to, for tests.
#[derive(Debug)]
pub struct ManualClock(Mutex<DateTime<Utc>>);

impl ManualClock {
    /// A clock stopped at `start`.
    pub fn new(start: DateTime<Utc>) -> ManualClock {
        ManualClock(Mutex::new(start))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Tests move it at any moment: timers look again within a fifth of a second.
    fn recheck(&self) -> std::time::Duration {
        std::time::Duration::from_millis(200)
    }

    /// Moved by the test on purpose: never checked against the database.
    fn tells_real_time(&self) -> bool {
        false
    }
}

/// The first moment strictly after `now` whose UTC time of day is `at`.
pub fn next_daily(now: DateTime<Utc>, at: NaiveTime) -> DateTime<Utc> {
    let today = now.date_naive().and_time(at).and_utc();
    if today > now {
        today
    } else {
        // Strictly after: a run that ends at `at` must not be scheduled again for `at`.
        today + Duration::days(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn three() -> NaiveTime {
        NaiveTime::from_hms_opt(3, 0, 0).unwrap()
    }

    #[test]
    fn next_daily_before_the_time_is_today() {
        assert_eq!(
            next_daily(at("2026-11-22T02:59:59Z"), three()),
            at("2026-11-22T03:00:00Z")
        );
        assert_eq!(
            next_daily(at("2026-11-22T00:00:00Z"), three()),
            at("2026-11-22T03:00:00Z")
        );
    }

    #[test]
    fn next_daily_at_the_time_is_tomorrow() {
        assert_eq!(
            next_daily(at("2026-11-22T03:00:00Z"), three()),
            at("2026-11-23T03:00:00Z")
        );
    }

    #[test]
    fn next_daily_after_the_time_is_tomorrow() {
        assert_eq!(
            next_daily(at("2026-11-22T03:00:01Z"), three()),
            at("2026-11-23T03:00:00Z")
        );
        assert_eq!(
            next_daily(at("2026-11-22T18:00:00Z"), three()),
            at("2026-11-23T03:00:00Z")
        );
    }

    #[test]
    fn next_daily_crosses_midnight_months_and_years() {
        let late = NaiveTime::from_hms_opt(23, 30, 0).unwrap();
        assert_eq!(
            next_daily(at("2026-12-31T23:45:00Z"), late),
            at("2027-01-01T23:30:00Z")
        );
        assert_eq!(
            next_daily(at("2026-12-31T23:59:59Z"), three()),
            at("2027-01-01T03:00:00Z")
        );
        assert_eq!(
            next_daily(at("2026-02-28T12:00:00Z"), NaiveTime::MIN),
            at("2026-03-01T00:00:00Z")
        );
    }

    #[test]
    fn a_clock_more_than_a_second_off_either_way_is_too_far_off() {
        assert!(!too_far_off(Duration::zero()));
        assert!(!too_far_off(Duration::milliseconds(-40)), "a round trip");
        assert!(!too_far_off(MAX_SKEW));
        assert!(too_far_off(Duration::milliseconds(1001)));
        assert!(too_far_off(Duration::minutes(10)), "ahead");
        assert!(too_far_off(Duration::minutes(-10)), "behind");
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(at("2026-11-22T02:00:00Z"));
        assert_eq!(clock.now(), at("2026-11-22T02:00:00Z"));
        clock.advance(Duration::hours(1));
        assert_eq!(clock.now(), at("2026-11-22T03:00:00Z"));
    }
}
