//! Ticket types of an event: price, seats, reservation time, sales window. Seats can never
//! drop below what is sold and reserved; a type with sales is retired (deactivated) instead of
//! deleted.

use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::error::Refusal;
use domain::events::lifecycle::EventStatus;
use domain::events::patch::may_change;
use domain::events::ticket_types::{check_quantity, retire_instead};
use domain::ids::{TenantId, UserId};
use tokio_postgres::Row;
use uuid::Uuid;

/// A ticket type.
#[derive(Clone, Debug, PartialEq)]
pub struct TicketType {
    /// Id.
    pub id: Uuid,
    /// Event.
    pub event_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Price in the smallest unit of the currency.
    pub price_cents: i64,
    /// ISO 4217 code.
    pub currency: String,
    /// Seats.
    pub quantity: i32,
    /// Seats sold.
    pub sold_count: i32,
    /// Seats held by reservations.
    pub reserved_count: i32,
    /// Minutes a paid reservation is held (none: it waits without a timer).
    pub reservation_minutes: Option<i32>,
    /// Share paid upfront.
    pub prepayment_percent: i32,
    /// Sales open.
    pub sales_start: Option<DateTime<Utc>>,
    /// Sales close.
    pub sales_end: Option<DateTime<Utc>>,
    /// Position in lists.
    pub sort_order: i32,
    /// Whether it is on sale.
    pub is_active: bool,
    /// Creation.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

pub(crate) const COLUMNS: &str = "id, event_id, name, description, price_cents, currency, quantity, sold_count, reserved_count,
    reservation_minutes, prepayment_percent, sales_start, sales_end, sort_order, is_active, created_at, updated_at";

pub(crate) fn from_row(row: &Row) -> TicketType {
    TicketType {
        id: row.get(0),
        event_id: row.get(1),
        name: row.get(2),
        description: row.get(3),
        price_cents: row.get(4),
        currency: row.get(5),
        quantity: row.get(6),
        sold_count: row.get(7),
        reserved_count: row.get(8),
        reservation_minutes: row.get(9),
        prepayment_percent: row.get(10),
        sales_start: row.get(11),
        sales_end: row.get(12),
        sort_order: row.get(13),
        is_active: row.get(14),
        created_at: row.get(15),
        updated_at: row.get(16),
    }
}

/// Fields of a ticket type (validated).
#[derive(Clone, Debug)]
pub struct TicketFields {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Price.
    pub price_cents: i64,
    /// Currency.
    pub currency: String,
    /// Seats.
    pub quantity: i32,
    /// Reservation minutes.
    pub reservation_minutes: Option<i32>,
    /// Prepayment.
    pub prepayment_percent: i32,
    /// Sales open.
    pub sales_start: Option<DateTime<Utc>>,
    /// Sales close.
    pub sales_end: Option<DateTime<Utc>>,
    /// Position.
    pub sort_order: i32,
    /// On sale.
    pub is_active: bool,
}

/// Ticket types of an event the scope may see (organizers: all; others: active ones).
pub async fn list(db: &Database, scope: Scope, event: Uuid) -> Result<Vec<TicketType>> {
    let tx = db.begin(scope).await?;
    let visible: bool = tx
        .query_one("SELECT EXISTS (SELECT 1 FROM event_service.events WHERE id = $1 AND deleted_at IS NULL)", &[&event])
        .await?
        .get(0);
    if !visible {
        return Err(Refusal::not_found().into());
    }
    let types = of_event(&tx, event).await?;
    tx.commit().await?;
    Ok(types)
}

/// Locks the tenant's event for a change of its ticket types; a final event is refused.
async fn lock_event(tx: &crate::Tx, event: Uuid) -> Result<()> {
    let row = tx
        .query_opt("SELECT status FROM event_service.events WHERE id = $1 AND deleted_at IS NULL FOR UPDATE", &[&event])
        .await?
        .ok_or_else(Refusal::not_found)?;
    if let Ok(status) = row.get::<_, &str>(0).parse::<EventStatus>() {
        may_change(status)?;
    }
    Ok(())
}

/// Adds a ticket type to an event of the tenant.
pub async fn create(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
    f: &TicketFields,
    now: DateTime<Utc>,
) -> Result<TicketType> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    lock_event(&tx, event).await?;
    let created = insert(&tx, tenant, event, f, now).await?;
    tx.commit().await?;
    Ok(created)
}

/// Writes a ticket type with no seats taken.
pub(crate) async fn insert(
    tx: &crate::Tx,
    tenant: TenantId,
    event: Uuid,
    f: &TicketFields,
    now: DateTime<Utc>,
) -> Result<TicketType> {
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO event_service.ticket_types (id, tenant_id, event_id, name, description, price_cents, currency,
                    quantity, reservation_minutes, prepayment_percent, sales_start, sales_end, sort_order, is_active,
                    created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15) RETURNING {COLUMNS}"
            ),
            &[
                &Uuid::now_v7(),
                &tenant.as_uuid(),
                &event,
                &f.name,
                &f.description,
                &f.price_cents,
                &f.currency,
                &f.quantity,
                &f.reservation_minutes,
                &f.prepayment_percent,
                &f.sales_start,
                &f.sales_end,
                &f.sort_order,
                &f.is_active,
                &now,
            ],
        )
        .await?;
    Ok(from_row(&row))
}

/// Every ticket type of an event the transaction sees, in list order.
pub(crate) async fn of_event(tx: &crate::Tx, event: Uuid) -> Result<Vec<TicketType>> {
    let rows = tx
        .query(&format!("SELECT {COLUMNS} FROM event_service.ticket_types WHERE event_id = $1 ORDER BY sort_order, created_at"), &[&event])
        .await?;
    Ok(rows.iter().map(from_row).collect())
}

async fn lock_type(tx: &crate::Tx, event: Uuid, id: Uuid) -> Result<TicketType> {
    lock_event(tx, event).await?;
    let row = tx
        .query_opt(&format!("SELECT {COLUMNS} FROM event_service.ticket_types WHERE id = $1 AND event_id = $2 FOR UPDATE"), &[&id, &event])
        .await?
        .ok_or_else(Refusal::not_found)?;
    Ok(from_row(&row))
}

/// Replaces a ticket type's fields; seats never drop below sold + reserved.
pub async fn update(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
    id: Uuid,
    f: &TicketFields,
    now: DateTime<Utc>,
) -> Result<TicketType> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let current = lock_type(&tx, event, id).await?;
    check_quantity(f.quantity, current.sold_count, current.reserved_count)?;
    let row = tx
        .query_one(
            &format!(
                "UPDATE event_service.ticket_types SET name = $2, description = $3, price_cents = $4, currency = $5,
                    quantity = $6, reservation_minutes = $7, prepayment_percent = $8, sales_start = $9, sales_end = $10,
                    sort_order = $11, is_active = $12, updated_at = $13
                 WHERE id = $1 RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &f.name,
                &f.description,
                &f.price_cents,
                &f.currency,
                &f.quantity,
                &f.reservation_minutes,
                &f.prepayment_percent,
                &f.sales_start,
                &f.sales_end,
                &f.sort_order,
                &f.is_active,
                &now,
            ],
        )
        .await?;
    // Seats added (or a type put back on sale) go to the waiting list first.
    let row = if super::waitlist::notify_next(&tx, id, now).await? > 0 {
        tx.query_one(
            &format!("SELECT {COLUMNS} FROM event_service.ticket_types WHERE id = $1"),
            &[&id],
        )
        .await?
    } else {
        row
    };
    tx.commit().await?;
    Ok(from_row(&row))
}

/// What deleting a ticket type did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deletion {
    /// Nothing referred to it: it is gone.
    Deleted,
    /// It had sales: retired (`is_active = false`, off sale) and kept for its tickets.
    Retired,
}

/// Deletes a ticket type that never sold anything, or retires one with sales: seats sold or
/// reserved, or any registration (a cancelled or expired one too, whose ticket history points
/// at it) or waiting-list entry. Those rows keep their ticket type, so it cannot go.
pub async fn delete(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Deletion> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    // Locked: a registration for it waits on this row, so none can appear after the check.
    let current = lock_type(&tx, event, id).await?;
    let referenced: bool = tx
        .query_one(
            // By event first: registrations are indexed by event, not by ticket type.
            "SELECT EXISTS (SELECT 1 FROM event_service.registrations WHERE event_id = $2 AND ticket_type_id = $1)
                 OR EXISTS (SELECT 1 FROM event_service.waiting_list WHERE ticket_type_id = $1)",
            &[&id, &event],
        )
        .await?
        .get(0);
    let done = if retire_instead(referenced, current.sold_count, current.reserved_count) {
        tx.execute(
            "UPDATE event_service.ticket_types SET is_active = false, updated_at = $2 WHERE id = $1",
            &[&id, &now],
        )
        .await?;
        Deletion::Retired
    } else {
        tx.execute(
            "DELETE FROM event_service.ticket_types WHERE id = $1",
            &[&id],
        )
        .await?;
        Deletion::Deleted
    };
    tx.commit().await?;
    Ok(done)
}

/// One ticket type of an event, if the scope may see it.
pub async fn get(db: &Database, scope: Scope, event: Uuid, id: Uuid) -> Result<TicketType> {
    let tx = db.begin(scope).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM event_service.ticket_types WHERE id = $1 AND event_id = $2"
            ),
            &[&id, &event],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    tx.commit().await?;
    Ok(from_row(&row))
}
