//! Waiting rooms (docs/decisions.md, "The waiting room"): the room an organizer opens for an
//! on-sale (`rooms`), the places of the visitors in it (`places`) and the admitter that lets
//! them in at the room's rate (`admitter`). Everything lives in PostgreSQL, so every node
//! serves every room and a restart loses nobody's place.

pub mod admitter;
pub mod places;
pub mod rooms;

use chrono::{DateTime, Utc};
use domain::events::waiting_room::RoomFacts;
use domain::ids::TenantId;
use uuid::Uuid;

/// A waiting room as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Room {
    /// The event it belongs to.
    pub event_id: Uuid,
    /// The event's organization.
    pub tenant_id: TenantId,
    /// When the sale opens.
    pub on_sale_at: DateTime<Utc>,
    /// Admissions per minute.
    pub admit_per_minute: i32,
    /// How long an admission lasts.
    pub admission_minutes: i32,
    /// How long a place is kept after leaving.
    pub grace_minutes: i32,
    /// Places handed out.
    pub arrivals: i64,
    /// When the pre-queue was drawn (the sale opened).
    pub drawn_at: Option<DateTime<Utc>>,
    /// Every kept place up to this turn is admitted.
    pub admitted_through: i64,
    /// Visitors admitted.
    pub admitted_count: i64,
    /// Since when no seat is left, while none is.
    pub sold_out_at: Option<DateTime<Utc>>,
}

impl Room {
    /// What a visitor's status is judged against.
    pub fn facts(&self) -> RoomFacts {
        RoomFacts {
            admitted_through: self.admitted_through,
            admit_per_minute: self.admit_per_minute,
            admission_minutes: self.admission_minutes,
            grace_minutes: self.grace_minutes,
            sold_out: self.sold_out_at.is_some(),
        }
    }
}

const ROOM_COLUMNS: &str =
    "event_id, tenant_id, on_sale_at, admit_per_minute, admission_minutes, grace_minutes,
    arrivals, shuffled_at, admitted_through, admitted_count, sold_out_at";

/// The event's room as `tx` may see it; `None` when there is none.
async fn read_room(tx: &crate::db::Tx, event: Uuid) -> crate::error::Result<Option<Room>> {
    let row = tx
        .query_opt(
            &format!("SELECT {ROOM_COLUMNS} FROM event_service.waiting_rooms WHERE event_id = $1"),
            &[&event],
        )
        .await?;
    Ok(row.as_ref().map(room_from))
}

fn room_from(row: &tokio_postgres::Row) -> Room {
    Room {
        event_id: row.get(0),
        tenant_id: TenantId(row.get(1)),
        on_sale_at: row.get(2),
        admit_per_minute: row.get(3),
        admission_minutes: row.get(4),
        grace_minutes: row.get(5),
        arrivals: row.get(6),
        drawn_at: row.get(7),
        admitted_through: row.get(8),
        admitted_count: row.get(9),
        sold_out_at: row.get(10),
    }
}
