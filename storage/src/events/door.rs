//! What the door needs of an event: how many are in against how many hold a valid ticket, per
//! ticket type, and the valid tickets themselves (code, name, type, when checked in) so a
//! phone can check people in while the network is gone and tell a second use of a code.

use super::catalog;
use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::ids::{TenantId, UserId};
use uuid::Uuid;

/// One ticket type's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeCount {
    pub ticket_type_id: Uuid,
    pub name: String,
    /// Tickets that let someone in: confirmed or checked in.
    pub expected: i64,
    pub checked_in: i64,
}

/// A ticket as the door keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoorTicket {
    pub code: String,
    /// "First Last", possibly empty.
    pub name: String,
    pub ticket_type_id: Uuid,
    /// When it was checked in, if it was.
    pub checked_in_at: Option<DateTime<Utc>>,
}

/// The figures of `event` (the organization's own; not found otherwise), per ticket type in
/// the order they were made, and with `with_tickets` every ticket that lets someone in (by
/// code), read in one transaction so the two agree.
pub async fn read(
    db: &Database,
    tenant: TenantId,
    staff: UserId,
    event: Uuid,
    with_tickets: bool,
) -> Result<(Vec<TypeCount>, Option<Vec<DoorTicket>>)> {
    let tx = db.begin(Scope::tenant(tenant, Some(staff))).await?;
    catalog::require_own(&tx, tenant, event).await?;
    let counts = tx
        .query(
            "SELECT t.id, t.name,
                    count(r.id) FILTER (WHERE r.status IN ('CONFIRMED', 'CHECKED_IN')),
                    count(r.id) FILTER (WHERE r.status = 'CHECKED_IN')
             FROM event_service.ticket_types t
             LEFT JOIN event_service.registrations r ON r.ticket_type_id = t.id
             WHERE t.event_id = $1
             GROUP BY t.id, t.name, t.created_at
             ORDER BY t.created_at, t.id",
            &[&event],
        )
        .await?
        .iter()
        .map(|r| TypeCount {
            ticket_type_id: r.get(0),
            name: r.get(1),
            expected: r.get(2),
            checked_in: r.get(3),
        })
        .collect();
    let tickets = if with_tickets {
        let rows = tx
            .query(
                "SELECT r.confirmation_code, btrim(r.first_name || ' ' || r.last_name), r.ticket_type_id,
                        c.checked_in_at
                 FROM event_service.registrations r
                 LEFT JOIN event_service.check_ins c ON c.registration_id = r.id
                 WHERE r.event_id = $1 AND r.status IN ('CONFIRMED', 'CHECKED_IN')
                 ORDER BY r.confirmation_code",
                &[&event],
            )
            .await?;
        Some(
            rows.iter()
                .map(|r| DoorTicket {
                    code: r.get(0),
                    name: r.get(1),
                    ticket_type_id: r.get(2),
                    checked_in_at: r.get(3),
                })
                .collect(),
        )
    } else {
        None
    };
    tx.commit().await?;
    Ok((counts, tickets))
}
