//! Waiting lists. When a seat of a sold-out ticket type frees, the first WAITING person is
//! NOTIFIED and the seat is held for them for 24 hours (counted in reserved_count, so nobody
//! else can take it); they convert by registering, or the hold expires and the next person is
//! notified. Every change happens with the ticket type's row locked, like every seat change.

use super::publish;
use crate::cluster::Fence;
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::{EventSummary, WaitlistOffer};
use domain::error::Refusal;
use domain::events::lifecycle::EventStatus;
use domain::events::refusals::EventRefusal;
use domain::events::waitlist::{hold, may_wait, seats_to_offer, takes_entries};
use domain::ids::{TenantId, UserId};
use uuid::Uuid;

/// A waiting-list entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Id.
    pub id: Uuid,
    /// Event.
    pub event_id: Uuid,
    /// Ticket type.
    pub ticket_type_id: Uuid,
    /// Who waits.
    pub user_id: UserId,
    /// WAITING, NOTIFIED, CONVERTED, EXPIRED or LEFT.
    pub status: String,
    /// When the seat was offered.
    pub notified_at: Option<DateTime<Utc>>,
    /// Until when it is held.
    pub expires_at: Option<DateTime<Utc>>,
    /// Joined at.
    pub created_at: DateTime<Utc>,
}

const COLUMNS: &str =
    "id, event_id, ticket_type_id, user_id, status, notified_at, expires_at, created_at";

fn from_row(row: &tokio_postgres::Row) -> Entry {
    Entry {
        id: row.get(0),
        event_id: row.get(1),
        ticket_type_id: row.get(2),
        user_id: UserId(row.get(3)),
        status: row.get(4),
        notified_at: row.get(5),
        expires_at: row.get(6),
        created_at: row.get(7),
    }
}

/// Joins the waiting list of a sold-out ticket type.
pub async fn join(
    db: &Database,
    tenant: TenantId,
    event: Uuid,
    ticket_type: Uuid,
    user: UserId,
    email: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Entry> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    // The event, then the ticket type: the one lock order. A cancellation in flight holds the
    // event, so this waits for it and an entry never joins a list it just closed.
    let status: String = tx
        .query_opt(
            "SELECT status FROM event_service.events WHERE id = $1 FOR KEY SHARE",
            &[&event],
        )
        .await?
        .ok_or_else(Refusal::not_found)?
        .get(0);
    let row = tx
        .query_opt(
            "SELECT quantity - sold_count - reserved_count FROM event_service.ticket_types
             WHERE id = $1 AND event_id = $2 FOR UPDATE",
            &[&ticket_type, &event],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    may_wait(row.get(0))?;
    takes_entries(status.parse().unwrap_or(EventStatus::Draft))?;
    let registered: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM event_service.registrations WHERE event_id = $1 AND user_id = $2
               AND status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'))",
            &[&event, &user.as_uuid()],
        )
        .await?
        .get(0);
    if registered {
        return Err(Refusal::from(EventRefusal::AlreadyRegistered).into());
    }
    let row = tx
        .query_opt(
            &format!(
                "INSERT INTO event_service.waiting_list (id, tenant_id, event_id, ticket_type_id, user_id, email, status, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, 'WAITING', $7) ON CONFLICT DO NOTHING RETURNING {COLUMNS}"
            ),
            &[&Uuid::now_v7(), &tenant.as_uuid(), &event, &ticket_type, &user.as_uuid(), &email, &now],
        )
        .await?
        .ok_or_else(|| Refusal::from(EventRefusal::AlreadyWaiting))?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// Leaves every open entry of the user for the event; a held seat goes to the next person.
pub async fn leave(
    db: &Database,
    tenant: TenantId,
    event: Uuid,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<usize> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let types: Vec<Uuid> = tx
        .query(
            "SELECT DISTINCT ticket_type_id FROM event_service.waiting_list
             WHERE event_id = $1 AND user_id = $2 AND status IN ('WAITING', 'NOTIFIED')",
            &[&event, &user.as_uuid()],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    if types.is_empty() {
        return Err(Refusal::not_found().into());
    }
    let mut left = 0;
    for ticket_type in types {
        tx.execute(
            "SELECT 1 FROM event_service.ticket_types WHERE id = $1 FOR UPDATE",
            &[&ticket_type],
        )
        .await?;
        let rows = tx
            .query(
                "UPDATE event_service.waiting_list SET status = 'LEFT' WHERE ticket_type_id = $1 AND user_id = $2
                   AND status IN ('WAITING', 'NOTIFIED') RETURNING notified_at IS NOT NULL",
                &[&ticket_type, &user.as_uuid()],
            )
            .await?;
        for row in rows {
            left += 1;
            if row.get::<_, bool>(0) {
                release_hold(&tx, ticket_type).await?;
                notify_next(&tx, ticket_type, now).await?;
            }
        }
    }
    tx.commit().await?;
    Ok(left)
}

async fn release_hold(tx: &Tx, ticket_type: Uuid) -> Result<()> {
    tx.execute(
        "UPDATE event_service.ticket_types SET reserved_count = reserved_count - 1 WHERE id = $1",
        &[&ticket_type],
    )
    .await?;
    Ok(())
}

/// Registering ends one's wait: the WAITING entries of `users` for `event` are closed.
/// Entries another transaction holds (serving another type's list) are skipped rather than
/// waited for, since this batch holds only its own type: `notify_next` closes them later. A
/// seat held for them on another type is released by the next sweep.
pub async fn close_for(tx: &Tx, event: Uuid, users: &[Uuid]) -> Result<u64> {
    if users.is_empty() {
        return Ok(0);
    }
    Ok(tx
        .execute(
            "UPDATE event_service.waiting_list SET status = 'CLOSED'
             WHERE id IN (SELECT id FROM event_service.waiting_list
                          WHERE event_id = $1 AND user_id = ANY($2) AND status = 'WAITING'
                          FOR UPDATE SKIP LOCKED)",
            &[&event, &users],
        )
        .await?)
}

/// Offers every free seat of a (locked) ticket type to the next people waiting, but only
/// seats they can use: the event takes registrations, the type is on sale, and the person
/// holds no other registration for the event (their entry is closed instead).
pub async fn notify_next(tx: &Tx, ticket_type: Uuid, now: DateTime<Utc>) -> Result<usize> {
    let row = tx
        .query_one(
            "SELECT t.quantity - t.sold_count - t.reserved_count, e.status = 'PUBLISHED' AND e.deleted_at IS NULL,
                t.is_active, t.sales_start, t.sales_end
             FROM event_service.ticket_types t JOIN event_service.events e ON e.id = t.event_id
             WHERE t.id = $1",
            &[&ticket_type],
        )
        .await?;
    let open = row.get::<_, bool>(1)
        && domain::events::seats::on_sale(row.get(2), row.get(3), row.get(4), now);
    let offered = seats_to_offer(row.get(0), open);
    if offered == 0 {
        return Ok(0);
    }
    tx.execute(
        "UPDATE event_service.waiting_list w SET status = 'CLOSED'
         WHERE w.ticket_type_id = $1 AND w.status = 'WAITING' AND EXISTS (
            SELECT 1 FROM event_service.registrations r WHERE r.event_id = w.event_id AND r.user_id = w.user_id
              AND r.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'))",
        &[&ticket_type],
    )
    .await?;
    let until = now + hold();
    let rows = tx
        .query(
            &format!(
                "UPDATE event_service.waiting_list SET status = 'NOTIFIED', notified_at = $2, expires_at = $3
                 WHERE id IN (SELECT id FROM event_service.waiting_list WHERE ticket_type_id = $1 AND status = 'WAITING'
                              ORDER BY created_at, id LIMIT $4 FOR UPDATE)
                 RETURNING {COLUMNS}, tenant_id, email"
            ),
            &[&ticket_type, &now, &until, &offered],
        )
        .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    tx.execute(
        "UPDATE event_service.ticket_types SET reserved_count = reserved_count + $2 WHERE id = $1",
        &[&ticket_type, &(rows.len() as i32)],
    )
    .await?;
    for row in &rows {
        let entry = from_row(row);
        let tenant: Uuid = row.get(8);
        let email: Option<String> = row.get(9);
        let event = tx
            .query_one(
                "SELECT title, starts_at, slug, timezone FROM event_service.events WHERE id = $1",
                &[&entry.event_id],
            )
            .await?;
        let offer = WaitlistOffer {
            entry_id: entry.id,
            event_id: entry.event_id,
            ticket_type_id: entry.ticket_type_id,
            user_id: entry.user_id,
            email,
            expires_at: entry.expires_at,
            event: EventSummary {
                event_id: entry.event_id,
                title: event.get(0),
                starts_at: event.get(1),
                ends_at: None,
                timezone: Some(event.get(3)),
                location_address: None,
                location_url: None,
                slug: event.get(2),
            },
        };
        publish(
            tx,
            Some(tenant.into()),
            None,
            DomainEvent::WaitlistAvailable(offer),
        )
        .await?;
    }
    Ok(rows.len())
}

/// Inside a group commit: the users of `users` holding a seat of this (locked) type get it
/// released for their own registration and their entry converted. Returns who they are.
pub async fn convert_holds(
    tx: &Tx,
    ticket_type: Uuid,
    users: &[Uuid],
    now: DateTime<Utc>,
) -> Result<Vec<Uuid>> {
    let rows = tx
        .query(
            "UPDATE event_service.waiting_list SET status = 'CONVERTED'
             WHERE ticket_type_id = $1 AND user_id = ANY($2) AND status = 'NOTIFIED' AND expires_at > $3
             RETURNING user_id",
            &[&ticket_type, &users, &now],
        )
        .await?;
    if !rows.is_empty() {
        tx.execute(
            "UPDATE event_service.ticket_types SET reserved_count = reserved_count - $2 WHERE id = $1",
            &[&ticket_type, &(rows.len() as i32)],
        )
        .await?;
    }
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Expires holds (of the fence's shards) not used within 24 hours, and releases holds of
/// people who registered for another ticket type of the event meanwhile; offers their seats
/// to the next people.
pub async fn expire_due(db: &Database, fence: &Fence, now: DateTime<Utc>) -> Result<usize> {
    if fence.is_empty() {
        return Ok(0);
    }
    let tx = super::sweep(db).await?;
    let started = std::time::Instant::now();
    let rows = tx
        .query(
            "SELECT w.id, w.ticket_type_id, e.shard FROM event_service.waiting_list w
               JOIN event_service.events e ON e.id = w.event_id
             WHERE w.status = 'NOTIFIED'
               AND (w.expires_at <= $1 OR EXISTS (
                   SELECT 1 FROM event_service.registrations r WHERE r.event_id = w.event_id AND r.user_id = w.user_id
                     AND r.ticket_type_id <> w.ticket_type_id AND r.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN')))
               AND e.shard = ANY($2)
             ORDER BY w.ticket_type_id LIMIT 500",
            &[&now, &fence.shards()],
        )
        .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let shards: Vec<i16> = rows.iter().map(|r| r.get(2)).collect();
    fence.only(&shards).check(&tx).await?;
    let mut expired = 0;
    for (id, ticket_type) in rows
        .iter()
        .map(|r| (r.get::<_, Uuid>(0), r.get::<_, Uuid>(1)))
    {
        if started.elapsed() >= super::SWEEP_BUDGET {
            break;
        }
        tx.execute(
            "SELECT 1 FROM event_service.ticket_types WHERE id = $1 FOR UPDATE",
            &[&ticket_type],
        )
        .await?;
        let changed = tx
            .execute(
                "UPDATE event_service.waiting_list w SET status = CASE WHEN w.expires_at <= $2 THEN 'EXPIRED' ELSE 'CLOSED' END
                 WHERE w.id = $1 AND w.status = 'NOTIFIED'",
                &[&id, &now],
            )
            .await?;
        if changed == 1 {
            release_hold(&tx, ticket_type).await?;
            notify_next(&tx, ticket_type, now).await?;
            expired += 1;
        }
    }
    tx.commit().await?;
    Ok(expired)
}

/// The user's entries for an event.
pub async fn mine(db: &Database, user: UserId, event: Uuid) -> Result<Vec<Entry>> {
    let tx = db.begin(Scope::user(user)).await?;
    let rows = tx
        .query(&format!("SELECT {COLUMNS} FROM event_service.waiting_list WHERE event_id = $1 AND user_id = $2 ORDER BY created_at"), &[&event, &user.as_uuid()])
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}

/// The user's open entries for an event (WAITING, or NOTIFIED with a seat held until
/// `expires_at`): at most one per ticket type, oldest first. Read in the user's own scope, so
/// only their entries are visible whatever organization the token is for.
pub async fn open_of(db: &Database, user: UserId, event: Uuid) -> Result<Vec<Entry>> {
    let tx = db.begin(Scope::user(user)).await?;
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM event_service.waiting_list
                 WHERE event_id = $1 AND user_id = $2 AND status IN ('WAITING', 'NOTIFIED')
                 ORDER BY created_at, id"
            ),
            &[&event, &user.as_uuid()],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}
