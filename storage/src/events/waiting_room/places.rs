//! The places of visitors in a waiting room: joining (one place per account), where one
//! stands, and leaving. A place's turn (`ordinal`) comes from the room's arrival counter,
//! bumped in a transaction of its own that does not wait for the WAL flush: the room's row is
//! then locked only for the bump, not through an fsync, and the place written after it is
//! flushed with the bump before it, so no turn is given twice even across a crash.

use super::super::publish;
use super::super::registrations::event_summary;
use super::{ROOM_COLUMNS, Room, room_from};
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::QueuePlace;
use domain::error::Refusal;
use domain::events::refusals::EventRefusal;
use domain::events::waiting_room::{PlaceFacts, PlaceStatus, kept, status_of};
use domain::ids::{TenantId, UserId};
use uuid::Uuid;

/// A visitor's place, with the room it is in.
#[derive(Clone, Debug, PartialEq)]
pub struct Place {
    /// The room.
    pub room: Room,
    /// Its turn.
    pub ordinal: i64,
    /// Came before the on-sale time.
    pub early: bool,
    /// When its visitor joined (or joined again at the back).
    pub joined_at: DateTime<Utc>,
    /// When its visitor left, if they did.
    pub left_at: Option<DateTime<Utc>>,
    /// When its visitor first saw the admission.
    pub admitted_at: Option<DateTime<Utc>>,
}

impl Place {
    /// What the rules judge a place by.
    pub fn facts(&self) -> PlaceFacts {
        PlaceFacts {
            ordinal: self.ordinal,
            undrawn: self.early && self.room.drawn_at.is_none(),
            left_at: self.left_at,
            admitted_at: self.admitted_at,
        }
    }

    /// Where its visitor stands at `now`.
    pub fn status(&self, now: DateTime<Utc>) -> PlaceStatus {
        status_of(&self.room.facts(), &self.facts(), now)
    }
}

const PLACE_COLUMNS: &str = "p.ordinal, p.early, p.joined_at, p.left_at, p.admitted_at";

fn place_from(room: Room, row: &tokio_postgres::Row, at: usize) -> Place {
    Place {
        room,
        ordinal: row.get(at),
        early: row.get(at + 1),
        joined_at: row.get(at + 2),
        left_at: row.get(at + 3),
        admitted_at: row.get(at + 4),
    }
}

/// How a join went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Joined {
    /// A new place at the back of the line (or in the pre-queue).
    New,
    /// The account already held a place, kept as it was (or kept for it while it was away).
    Kept,
}

/// Gives `user` a place in the event's room, or the one they hold. A place left more than the
/// grace period ago, or whose admission lapsed, is given again at the back of the line.
pub async fn join(
    db: &Database,
    tenant: TenantId,
    event: Uuid,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<(Place, Joined)> {
    let scope = Scope::tenant(tenant, Some(user));
    let tx = db.begin(scope).await?;
    let current = read(&tx, event, user).await?;
    if let Some(place) = &current {
        let gone = !kept(place.left_at, place.room.grace_minutes, now)
            || place.status(now) == PlaceStatus::Expired;
        if !gone {
            let place = if place.left_at.is_some() {
                tx.execute(
                    "UPDATE event_service.waiting_room_places SET left_at = NULL
                     WHERE event_id = $1 AND user_id = $2",
                    &[&event, &user.as_uuid()],
                )
                .await?;
                Place {
                    left_at: None,
                    ..place.clone()
                }
            } else {
                place.clone()
            };
            tx.commit().await?;
            return Ok((place, Joined::Kept));
        }
    }
    tx.commit().await?;

    let (ordinal, early) = next_turn(db, scope, event, now).await?;
    let tx = db.begin(scope).await?;
    tx.execute(
        "INSERT INTO event_service.waiting_room_places (event_id, user_id, tenant_id, ordinal, early, joined_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (event_id, user_id) DO UPDATE SET ordinal = EXCLUDED.ordinal, early = EXCLUDED.early,
            joined_at = EXCLUDED.joined_at, left_at = NULL, admitted_at = NULL
         WHERE waiting_room_places.joined_at = $7",
        &[
            &event,
            &user.as_uuid(),
            &tenant.as_uuid(),
            &ordinal,
            &early,
            &now,
            // Only the place this join found is replaced: a join racing it keeps its own.
            &current.as_ref().map(|p| p.joined_at),
        ],
    )
    .await?;
    let place = read(&tx, event, user)
        .await?
        .ok_or_else(|| Refusal::from(EventRefusal::NoWaitingRoom))?;
    let joined = if place.ordinal == ordinal {
        announce(&tx, &place, user, DomainEvent::QueueJoined).await?;
        Joined::New
    } else {
        Joined::Kept
    };
    tx.commit().await?;
    Ok((place, joined))
}

/// The next turn of the room, and whether it falls in the pre-queue: before the on-sale time
/// and before the draw (read under the row's lock, so a join waiting on the draw is not early).
async fn next_turn(
    db: &Database,
    scope: Scope,
    event: Uuid,
    now: DateTime<Utc>,
) -> Result<(i64, bool)> {
    let tx = db.begin_unflushed(scope).await?;
    let row = tx
        .query_opt(
            "UPDATE event_service.waiting_rooms SET arrivals = arrivals + 1 WHERE event_id = $1
             RETURNING arrivals, $2 < on_sale_at AND shuffled_at IS NULL",
            &[&event, &now],
        )
        .await?
        .ok_or_else(|| Refusal::from(EventRefusal::NoWaitingRoom))?;
    tx.commit().await?;
    Ok((row.get(0), row.get(1)))
}

/// The user's place in the event's room; the admission's clock starts the first time an
/// admitted visitor is told.
pub async fn of(
    db: &Database,
    tenant: TenantId,
    event: Uuid,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<Place> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let mut place = read(&tx, event, user)
        .await?
        .ok_or_else(|| Refusal::from(EventRefusal::NoPlaceInQueue))?;
    if place.status(now) == PlaceStatus::Admitted && place.admitted_at.is_none() {
        // A second reader racing this one keeps the first time.
        let row = tx
            .query_one(
                "UPDATE event_service.waiting_room_places SET admitted_at = coalesce(admitted_at, $3)
                 WHERE event_id = $1 AND user_id = $2 RETURNING admitted_at",
                &[&event, &user.as_uuid(), &now],
            )
            .await?;
        place.admitted_at = row.get(0);
    }
    tx.commit().await?;
    Ok(place)
}

/// Leaves the room; the place is kept for the grace period. Leaving twice changes nothing.
pub async fn leave(
    db: &Database,
    tenant: TenantId,
    event: Uuid,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<()> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let found = tx
        .query_opt(
            "UPDATE event_service.waiting_room_places SET left_at = coalesce(left_at, $3)
             WHERE event_id = $1 AND user_id = $2 RETURNING left_at = $3",
            &[&event, &user.as_uuid(), &now],
        )
        .await?;
    let Some(row) = found else {
        // No room at all, or no place in it.
        read_room(&tx, event).await?;
        return Err(Refusal::from(EventRefusal::NoPlaceInQueue).into());
    };
    // Announced once: leaving again changes nothing.
    if row.get::<_, bool>(0)
        && let Some(place) = read(&tx, event, user).await?
    {
        announce(&tx, &place, user, DomainEvent::QueueLeft).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Tells the other services about `user`'s place (analytics records the queue's life).
async fn announce(
    tx: &Tx,
    place: &Place,
    user: UserId,
    kind: fn(QueuePlace) -> DomainEvent,
) -> Result<()> {
    let event = place.room.event_id;
    let said = QueuePlace {
        event_id: event,
        user_id: user,
        early: place.early,
        joined_at: place.joined_at,
        admission_minutes: None,
        event: event_summary(tx, event).await?,
    };
    publish(tx, Some(place.room.tenant_id), Some(user), kind(said)).await?;
    Ok(())
}

/// The room and the user's place in it; `None` without a place, refused without a room.
async fn read(tx: &Tx, event: Uuid, user: UserId) -> Result<Option<Place>> {
    let columns = ROOM_COLUMNS
        .split(',')
        .map(|c| format!("r.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ");
    let row = tx
        .query_opt(
            &format!(
                "SELECT {columns}, p.user_id IS NOT NULL, {PLACE_COLUMNS}
                 FROM event_service.waiting_rooms r
                 LEFT JOIN event_service.waiting_room_places p ON p.event_id = r.event_id AND p.user_id = $2
                 WHERE r.event_id = $1"
            ),
            &[&event, &user.as_uuid()],
        )
        .await?
        .ok_or_else(|| Refusal::from(EventRefusal::NoWaitingRoom))?;
    let room = room_from(&row);
    Ok(row.get::<_, bool>(11).then(|| place_from(room, &row, 12)))
}

async fn read_room(tx: &Tx, event: Uuid) -> Result<Room> {
    super::read_room(tx, event)
        .await?
        .ok_or_else(|| Refusal::from(EventRefusal::NoWaitingRoom).into())
}
