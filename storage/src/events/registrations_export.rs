//! The registrations of one event for the organizer's download: every row (no page cap), read
//! in pages in (created_at, id) order so a large event never sits in memory, each with its
//! ticket type's name and the time of its check-in. The names and email are those the
//! registration was made with (copied from the people projection when the seat was taken).

use super::registrations::RegistrationFilter;
use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::events::registrations::RegistrationStatus;
use domain::ids::{TenantId, UserId};
use tokio_postgres::Row;
use uuid::Uuid;

/// Rows read per page.
pub const PAGE: i64 = 1_000;

/// One registration as the download shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ExportRow {
    /// Id (the cursor of the next page, with `created_at`).
    pub id: Uuid,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Email, if any.
    pub email: Option<String>,
    /// The ticket type's name.
    pub ticket_type: String,
    /// Status.
    pub status: RegistrationStatus,
    /// Code for the door.
    pub confirmation_code: String,
    /// When the registration was made.
    pub created_at: DateTime<Utc>,
    /// When the participant was checked in, if they were.
    pub checked_in_at: Option<DateTime<Utc>>,
    /// Where the person came from, if the client said.
    pub source: Option<String>,
    /// The ticket's currency.
    pub currency: String,
    /// Received for it (every completed payment), in the smallest unit.
    pub paid_cents: i64,
    /// Returned by the provider.
    pub refunded_cents: i64,
}

fn from_row(row: &Row) -> ExportRow {
    let status: String = row.get(5);
    ExportRow {
        id: row.get(0),
        first_name: row.get(1),
        last_name: row.get(2),
        email: row.get(3),
        ticket_type: row.get(4),
        status: status.parse().unwrap_or(RegistrationStatus::Cancelled),
        confirmation_code: row.get(6),
        created_at: row.get(7),
        checked_in_at: row.get(8),
        source: row.get(9),
        currency: row.get::<_, String>(10).trim().to_string(),
        paid_cents: row.get(11),
        refunded_cents: row.get(12),
    }
}

/// Up to `limit` registrations of the tenant's event after the cursor `after` (created_at, id),
/// filtered like the registration list, oldest first. Runs in the tenant's scope: another
/// organization's rows are not there to read.
pub async fn page(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
    filter: &RegistrationFilter,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<ExportRow>> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let status = filter.status.map(|s| s.as_str());
    let after_time = after.map(|(at, _)| at);
    let after_id = after.map(|(_, id)| id);
    let rows = tx
        .query(
            "SELECT r.id, r.first_name, r.last_name, r.email, COALESCE(t.name, ''), r.status,
                    r.confirmation_code, r.created_at, c.checked_in_at, r.source, r.currency,
                    (SELECT COALESCE(sum(COALESCE(p.amount_cents, r.price_cents)), 0)::bigint
                       FROM event_service.payments p WHERE p.registration_id = r.id AND p.kind = 'COMPLETED'
                         AND p.outcome IN ('CONFIRMED', 'SEAT_TAKEN', 'REFUND_REQUESTED')),
                    (SELECT COALESCE(sum(f.amount_cents), 0)::bigint
                       FROM event_service.refunds f WHERE f.registration_id = r.id AND f.status = 'SUCCEEDED')
             FROM event_service.registrations r
             LEFT JOIN event_service.ticket_types t ON t.id = r.ticket_type_id
             LEFT JOIN event_service.check_ins c ON c.registration_id = r.id
             WHERE r.event_id = $1 AND r.tenant_id = $2
               AND ($3::text IS NULL OR r.status = $3) AND ($4::uuid IS NULL OR r.ticket_type_id = $4)
               AND (NOT $5 OR r.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'))
               AND ($6::timestamptz IS NULL OR (r.created_at, r.id) > ($6::timestamptz, $7::uuid))
             ORDER BY r.created_at, r.id
             LIMIT $8",
            &[
                &event,
                &tenant.as_uuid(),
                &status,
                &filter.ticket_type_id,
                &filter.active_only,
                &after_time,
                &after_id,
                &limit,
            ],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}
