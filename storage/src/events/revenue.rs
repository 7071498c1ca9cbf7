//! Money of an organization's events, as the event service holds it: what was received (every
//! completed payment, the late ones being returned included), what went back (refunds the
//! provider made), what is on its way back, and the difference. Per currency: an event may sell
//! in more than one.

use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::ids::{TenantId, UserId};
use uuid::Uuid;

/// The money of one event in one currency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revenue {
    /// The event.
    pub event_id: Uuid,
    /// Its title.
    pub title: String,
    /// ISO 4217 code.
    pub currency: String,
    /// Received, in the smallest unit.
    pub paid_cents: i64,
    /// Payments received.
    pub payments: i64,
    /// Returned by the provider.
    pub refunded_cents: i64,
    /// Refunds made.
    pub refunds: i64,
    /// Asked for or sent, not yet returned.
    pub refund_pending_cents: i64,
}

impl Revenue {
    /// What stays: received less returned.
    pub fn net_cents(&self) -> i64 {
        self.paid_cents - self.refunded_cents
    }
}

// A payment told without its amount paid the ticket's price (mark-paid's rule).
const SQL: &str = "
    WITH paid AS (
        SELECT r.event_id, r.currency, sum(COALESCE(p.amount_cents, r.price_cents))::bigint AS cents, count(*) AS n
        FROM event_service.payments p JOIN event_service.registrations r ON r.id = p.registration_id
        WHERE p.kind = 'COMPLETED' AND p.outcome IN ('CONFIRMED', 'SEAT_TAKEN', 'REFUND_REQUESTED')
          AND r.tenant_id = $1 AND ($2::uuid IS NULL OR r.event_id = $2)
          AND ($3::timestamptz IS NULL OR p.received_at >= $3) AND ($4::timestamptz IS NULL OR p.received_at < $4)
        GROUP BY r.event_id, r.currency
    ), back AS (
        SELECT f.event_id, f.currency,
            COALESCE(sum(f.amount_cents) FILTER (WHERE f.status = 'SUCCEEDED'), 0)::bigint AS cents,
            count(*) FILTER (WHERE f.status = 'SUCCEEDED') AS n,
            COALESCE(sum(f.amount_cents) FILTER (WHERE f.status IN ('REQUESTED', 'SENT')), 0)::bigint AS pending
        FROM event_service.refunds f
        WHERE f.tenant_id = $1 AND ($2::uuid IS NULL OR f.event_id = $2)
          AND ($3::timestamptz IS NULL OR f.created_at >= $3) AND ($4::timestamptz IS NULL OR f.created_at < $4)
        GROUP BY f.event_id, f.currency
    )
    SELECT e.id, e.title, COALESCE(p.currency, b.currency), COALESCE(p.cents, 0), COALESCE(p.n, 0),
        COALESCE(b.cents, 0), COALESCE(b.n, 0), COALESCE(b.pending, 0)
    FROM paid p FULL JOIN back b ON b.event_id = p.event_id AND b.currency = p.currency
    JOIN event_service.events e ON e.id = COALESCE(p.event_id, b.event_id)
    ORDER BY COALESCE(p.cents, 0) DESC, e.id, 3";

async fn read(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Option<Uuid>,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> Result<Vec<Revenue>> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    if let Some(event) = event {
        super::catalog::require_own(&tx, tenant, event).await?;
    }
    let rows = tx
        .query(SQL, &[&tenant.as_uuid(), &event, &from, &to])
        .await?;
    tx.commit().await?;
    Ok(rows
        .iter()
        .map(|row| Revenue {
            event_id: row.get(0),
            title: row.get(1),
            currency: row.get::<_, String>(2).trim().to_string(),
            paid_cents: row.get(3),
            payments: row.get(4),
            refunded_cents: row.get(5),
            refunds: row.get(6),
            refund_pending_cents: row.get(7),
        })
        .collect())
}

/// The money of `tenant`'s event, per currency (another organization's event: not found).
pub async fn of_event(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
) -> Result<Vec<Revenue>> {
    read(db, tenant, user, Some(event), None, None).await
}

/// The money of each of `tenant`'s events with any, per currency, received (or refunded)
/// within `[from, to)` when given.
pub async fn of_organization(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
) -> Result<Vec<Revenue>> {
    read(db, tenant, user, None, from, to).await
}
