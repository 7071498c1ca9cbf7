//! A participant's own ticket with what printing it or putting it in a wallet needs: its event
//! (title, time, zone, place) and its ticket type's name.

use super::registrations::{
    COLUMN_COUNT, COLUMNS, Registration, SUMMARY_COLUMNS, from_row, summary_from,
};
use crate::db::{Database, Scope};
use crate::error::Result;
use domain::contract::events::EventSummary;
use domain::error::Refusal;
use domain::ids::UserId;
use uuid::Uuid;

/// A ticket its holder asked for.
#[derive(Clone, Debug)]
pub struct HeldTicket {
    /// The registration.
    pub registration: Registration,
    /// Its event.
    pub event: EventSummary,
    /// Its ticket type's name.
    pub ticket_type: String,
}

/// `user`'s registration `id` with its event and ticket type; another person's, or none, is
/// not found (the same answer, so ids cannot be probed).
pub async fn held(db: &Database, user: UserId, id: Uuid) -> Result<HeldTicket> {
    // System scope, the holder checked in the query: one's own registration is readable as
    // oneself, but its event may no longer be (unpublished, or a group one has left) and its
    // ticket type may be off sale, and the ticket must still print.
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS}, {SUMMARY_COLUMNS}, t.name
                 FROM event_service.registrations r
                 JOIN event_service.events e ON e.id = r.event_id
                 JOIN event_service.ticket_types t ON t.id = r.ticket_type_id
                 WHERE r.id = $1 AND r.user_id = $2 AND e.deleted_at IS NULL"
            ),
            &[&id, &user.as_uuid()],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    tx.commit().await?;
    let registration = from_row(&row);
    let event = summary_from(&row, registration.event_id, COLUMN_COUNT);
    Ok(HeldTicket {
        ticket_type: row.get(COLUMN_COUNT + 7),
        event,
        registration,
    })
}
