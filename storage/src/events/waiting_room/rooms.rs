//! Opening, changing, reading and closing an event's waiting room. While a room is open the
//! event's row says so (`events.waiting_room`), which every seat transaction reads with it:
//! from then on a seat needs an admission.

use super::{ROOM_COLUMNS, Room, read_room, room_from};
use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::error::Refusal;
use domain::events::lifecycle::EventStatus;
use domain::events::patch::may_change;
use domain::events::refusals::EventRefusal;
use domain::events::waiting_room::RoomSettings;
use domain::ids::{TenantId, UserId};
use uuid::Uuid;

/// Opens the waiting room of an event of the tenant, or changes its settings. The on-sale
/// time can move only until the sale opens.
pub async fn open(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
    settings: RoomSettings,
    now: DateTime<Utc>,
) -> Result<Room> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let status: String = tx
        .query_opt(
            "SELECT status FROM event_service.events
             WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL FOR UPDATE",
            &[&event, &tenant.as_uuid()],
        )
        .await?
        .ok_or_else(Refusal::not_found)?
        .get(0);
    may_change(status.parse().unwrap_or(EventStatus::Cancelled))?;
    let before = tx
        .query_opt(
            "SELECT on_sale_at, shuffled_at IS NOT NULL FROM event_service.waiting_rooms
             WHERE event_id = $1 FOR UPDATE",
            &[&event],
        )
        .await?;
    if let Some(row) = before {
        let (on_sale_at, drawn): (DateTime<Utc>, bool) = (row.get(0), row.get(1));
        // The pre-queue was drawn at the old time: moving it would say the sale opened when
        // it did not.
        if drawn && on_sale_at != settings.on_sale_at {
            return Err(Refusal::from(EventRefusal::OnSaleOpened).into());
        }
    }
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO event_service.waiting_rooms (event_id, tenant_id, on_sale_at, admit_per_minute,
                    admission_minutes, grace_minutes, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
                 ON CONFLICT (event_id) DO UPDATE SET on_sale_at = EXCLUDED.on_sale_at,
                    admit_per_minute = EXCLUDED.admit_per_minute, admission_minutes = EXCLUDED.admission_minutes,
                    grace_minutes = EXCLUDED.grace_minutes, updated_at = EXCLUDED.updated_at
                 RETURNING {ROOM_COLUMNS}"
            ),
            &[
                &event,
                &tenant.as_uuid(),
                &settings.on_sale_at,
                &settings.admit_per_minute,
                &settings.admission_minutes,
                &settings.grace_minutes,
                &now,
            ],
        )
        .await?;
    let room = room_from(&row);
    tx.execute(
        "UPDATE event_service.events SET waiting_room = true WHERE id = $1",
        &[&event],
    )
    .await?;
    tx.commit().await?;
    Ok(room)
}

/// The event's waiting room, as the scope may see it.
pub async fn get(db: &Database, tenant: TenantId, event: Uuid) -> Result<Room> {
    let tx = db.begin(Scope::tenant(tenant, None)).await?;
    let room = read_room(&tx, event)
        .await?
        .ok_or_else(|| Refusal::from(EventRefusal::NoWaitingRoom))?;
    tx.commit().await?;
    Ok(room)
}

/// The event's waiting room, whoever asks: for a node that serves visitors holding signed
/// passes to it (their pass is their right to read it); `None` when it has none.
pub async fn watched(db: &Database, event: Uuid) -> Result<Option<Room>> {
    let tx = db.begin(Scope::system()).await?;
    let room = read_room(&tx, event).await?;
    tx.commit().await?;
    Ok(room)
}

/// Closes the event's waiting room: registrations no longer need an admission, and the
/// places in it are gone.
pub async fn close(db: &Database, tenant: TenantId, user: UserId, event: Uuid) -> Result<()> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    tx.query_opt(
        "SELECT 1 FROM event_service.events WHERE id = $1 AND tenant_id = $2 FOR UPDATE",
        &[&event, &tenant.as_uuid()],
    )
    .await?
    .ok_or_else(Refusal::not_found)?;
    let gone = tx
        .execute(
            "DELETE FROM event_service.waiting_rooms WHERE event_id = $1",
            &[&event],
        )
        .await?;
    if gone == 0 {
        return Err(Refusal::from(EventRefusal::NoWaitingRoom).into());
    }
    tx.execute(
        "UPDATE event_service.events SET waiting_room = false WHERE id = $1",
        &[&event],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
