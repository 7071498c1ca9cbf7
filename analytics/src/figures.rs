//! The figures the API answers with, built the same way from either store's counts.

use chrono::{DateTime, NaiveDate, Utc};
use domain::analytics::rate;
use serde::Serialize;
use uuid::Uuid;

/// The period asked for; both ends optional (from inclusive, to exclusive).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Period {
    /// From.
    pub from: Option<DateTime<Utc>>,
    /// To.
    pub to: Option<DateTime<Utc>>,
}

impl Period {
    /// The bounds with open ends filled in.
    pub fn bounds(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        (
            self.from.unwrap_or(
                DateTime::<Utc>::MIN_UTC.max(DateTime::from_timestamp(0, 0).unwrap_or_default()),
            ),
            self.to
                .unwrap_or_else(|| DateTime::from_timestamp(4_102_444_800, 0).unwrap_or_default()),
        )
    }
}

/// Raw counts of one event (or of all events of an organization).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// page.view records.
    pub views: u64,
    /// Distinct viewers.
    pub unique_views: u64,
    /// registration.started records.
    pub started: u64,
    /// registration.completed records.
    pub registrations: u64,
    /// Registrations confirmed at creation, plus payments.
    pub confirmed: u64,
    /// checkin.completed records.
    pub checked_in: u64,
}

/// The headline figures.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    /// Page views.
    pub total_views: u64,
    /// Distinct viewers.
    pub unique_views: u64,
    /// Registrations made.
    pub total_registrations: u64,
    /// Registrations confirmed (free at once, paid on payment).
    pub confirmed_registrations: u64,
    /// People checked in.
    pub checked_in: u64,
    /// totalRegistrations / totalViews.
    pub view_to_registration_rate: f64,
    /// checkedIn / totalRegistrations.
    pub registration_to_checkin_rate: f64,
}

impl From<Counts> for Totals {
    fn from(c: Counts) -> Totals {
        Totals {
            total_views: c.views,
            unique_views: c.unique_views,
            total_registrations: c.registrations,
            confirmed_registrations: c.confirmed,
            checked_in: c.checked_in,
            view_to_registration_rate: rate(c.registrations, c.views),
            registration_to_checkin_rate: rate(c.checked_in, c.registrations),
        }
    }
}

/// One day.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayFigures {
    /// The UTC day.
    pub date: NaiveDate,
    /// Page views.
    pub views: u64,
    /// Registrations.
    pub registrations: u64,
    /// Check-ins.
    pub checked_in: u64,
}

/// One ticket type.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TicketTypeFigures {
    /// The ticket type ("" when the records did not say).
    pub ticket_type_id: String,
    /// Registrations.
    pub registrations: u64,
    /// Check-ins.
    pub checked_in: u64,
}

/// One traffic source.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceFigures {
    /// The source ("direct" when none was given).
    pub source: String,
    /// Page views.
    pub views: u64,
    /// Registrations.
    pub registrations: u64,
}

/// An event's waiting room, from its records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueFigures {
    /// Places taken.
    pub joined: u64,
    /// Visitors let in.
    pub admitted: u64,
    /// Visitors who left.
    pub left: u64,
    /// Still in line: joined, neither let in nor gone (a visitor who came back within the
    /// grace period counts once more as gone).
    pub waiting: u64,
    /// Visitors let in who then registered.
    pub registered: u64,
    /// Let in and never registered.
    pub gave_up: u64,
    /// registered / admitted.
    pub admission_to_registration_rate: f64,
    /// The average wait of those let in, in seconds (0 with nobody let in).
    pub average_wait_seconds: f64,
}

/// The raw counts of a waiting room.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueCounts {
    /// queue.joined records.
    pub joined: u64,
    /// queue.admitted records.
    pub admitted: u64,
    /// queue.left records.
    pub left: u64,
    /// Distinct visitors with a queue.admitted and a registration.completed record.
    pub registered: u64,
    /// The average of the admitted records' waits.
    pub average_wait_seconds: f64,
}

impl From<QueueCounts> for QueueFigures {
    fn from(c: QueueCounts) -> QueueFigures {
        QueueFigures {
            joined: c.joined,
            admitted: c.admitted,
            left: c.left,
            waiting: c.joined.saturating_sub(c.admitted + c.left),
            registered: c.registered,
            gave_up: c.admitted.saturating_sub(c.registered),
            admission_to_registration_rate: rate(c.registered, c.admitted),
            average_wait_seconds: (c.average_wait_seconds * 10.0).round() / 10.0,
        }
    }
}

/// The event dashboard.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Dashboard {
    /// The event.
    pub event_id: Uuid,
    /// Headline figures.
    #[serde(flatten)]
    pub totals: Totals,
    /// Per UTC day, oldest first.
    pub by_day: Vec<DayFigures>,
    /// Per ticket type.
    pub by_ticket_type: Vec<TicketTypeFigures>,
    /// Per traffic source.
    pub by_source: Vec<SourceFigures>,
    /// The waiting room's queue (all zero for an event without one).
    pub queue: QueueFigures,
}

/// The registration funnel.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Funnel {
    /// The event.
    pub event_id: Uuid,
    /// Page views.
    pub views: u64,
    /// Registrations started.
    pub started: u64,
    /// Registrations completed.
    pub completed: u64,
    /// Checked in.
    pub checked_in: u64,
    /// started / views.
    pub start_rate: f64,
    /// completed / started.
    pub completion_rate: f64,
    /// checkedIn / completed.
    pub attendance_rate: f64,
}

impl Funnel {
    /// The funnel of `event` from its counts.
    pub fn from_counts(event_id: Uuid, c: Counts) -> Funnel {
        Funnel {
            event_id,
            views: c.views,
            started: c.started,
            completed: c.registrations,
            checked_in: c.checked_in,
            start_rate: rate(c.started, c.views),
            completion_rate: rate(c.registrations, c.started),
            attendance_rate: rate(c.checked_in, c.registrations),
        }
    }
}

/// One event in an organization's report.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventFigures {
    /// The event.
    pub event_id: Uuid,
    /// Its figures.
    #[serde(flatten)]
    pub totals: Totals,
}

/// The organization report.
#[derive(Clone, Debug, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The organization.
    pub organization_id: Uuid,
    /// All its events together.
    #[serde(flatten)]
    pub totals: Totals,
    /// Each event, by registrations then id.
    pub events: Vec<EventFigures>,
}
