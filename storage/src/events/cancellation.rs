//! A cancelled event follows through for everyone it touches, in the transaction that cancels
//! it: every active registration is cancelled (reason `EVENT_CANCELLED`) and its seat released,
//! the waiting list is closed without offers (held seats released), each cancelled registration
//! is announced (`registration.cancelled`, which the notification service leaves to the one
//! `event.cancelled` notice) and every paid ticket gets its `refund.requested`. One transaction:
//! a crash halfway leaves the event as it was, and a retried cancel finds nothing left to do.

use super::registrations::{COLUMN_COUNT, COLUMNS, from_row, payload};
use crate::db::Tx;
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::envelope::Envelope;
use domain::events::registrations::{EVENT_CANCELLED, RegistrationStatus, Seat};
use domain::ids::{TenantId, UserId};
use serde_json::json;
use std::collections::BTreeMap;
use uuid::Uuid;

/// Outbox rows written per statement: large events are announced in slices.
const OUTBOX_SLICE: usize = 5_000;

/// What the cancellation touched.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FollowThrough {
    /// Registrations cancelled.
    pub registrations: usize,
    /// Refunds asked for.
    pub refunds: usize,
    /// Waiting-list entries closed.
    pub waiting_closed: usize,
}

/// Cancels everything hanging on `event`, whose row `tx` holds locked and has just set
/// CANCELLED. `summary` is the event summary carried by the registration events.
pub(super) async fn follow_through(
    tx: &Tx,
    tenant: TenantId,
    actor: Option<UserId>,
    event: Uuid,
    summary: &serde_json::Value,
    now: DateTime<Utc>,
) -> Result<FollowThrough> {
    // The caller locked the ticket types before the event (a batch waiting on them then finds
    // the event cancelled); taking them again here costs nothing and keeps this safe alone.
    tx.execute(
        "SELECT 1 FROM event_service.ticket_types WHERE event_id = $1 ORDER BY id FOR UPDATE",
        &[&event],
    )
    .await?;

    // Seats held for people on the waiting list go back, and nobody is offered one again.
    let closed = tx
        .query(
            "UPDATE event_service.waiting_list SET status = 'CLOSED'
             WHERE event_id = $1 AND status IN ('WAITING', 'NOTIFIED')
             RETURNING ticket_type_id, notified_at IS NOT NULL",
            &[&event],
        )
        .await?;
    let mut released: BTreeMap<Uuid, (i32, i32)> = BTreeMap::new();
    for row in &closed {
        if row.get::<_, bool>(1) {
            released.entry(row.get(0)).or_default().1 += 1;
        }
    }

    let rows = tx
        .query(
            &format!(
                "WITH old AS (
                    SELECT id, status FROM event_service.registrations
                    WHERE event_id = $1 AND status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN')
                    FOR UPDATE
                 ), r AS (
                    UPDATE event_service.registrations r SET status = 'CANCELLED', cancelled_at = $2,
                        cancellation_reason = $3, expires_at = NULL, updated_at = $2
                    FROM old WHERE r.id = old.id
                    RETURNING r.*, old.status AS was
                 )
                 SELECT {COLUMNS}, r.was,
                    (SELECT COALESCE(sum(p.amount_cents), 0)::bigint FROM event_service.payments p
                      WHERE p.registration_id = r.id AND p.outcome IN ('CONFIRMED', 'SEAT_TAKEN'))
                 FROM r"
            ),
            &[&event, &now, &EVENT_CANCELLED],
        )
        .await?;
    let mut events = Vec::with_capacity(rows.len());
    let mut refunds = 0;
    for row in &rows {
        let registration = from_row(row);
        let was: RegistrationStatus = row
            .get::<_, String>(COLUMN_COUNT)
            .parse()
            .unwrap_or(RegistrationStatus::Confirmed);
        let paid: i64 = row.get(COLUMN_COUNT + 1);
        let seats = released.entry(registration.ticket_type_id).or_default();
        match was.seat() {
            Seat::Sold => seats.0 += 1,
            Seat::Reserved => seats.1 += 1,
            Seat::None => {}
        }
        events.push(Envelope::new(
            "registration.cancelled",
            Some(tenant),
            actor,
            payload(&registration, summary),
        ));
        if let Some(amount) = refund_due(was, paid, registration.price_cents) {
            refunds += 1;
            events.push(Envelope::new(
                "refund.requested",
                Some(tenant),
                actor,
                json!({
                    "registrationId": registration.id,
                    "eventId": registration.event_id,
                    "userId": registration.user_id,
                    "email": registration.email,
                    "amountCents": amount,
                    "currency": registration.currency,
                    "reason": EVENT_CANCELLED,
                    "event": summary,
                }),
            ));
        }
    }

    if !released.is_empty() {
        let ids: Vec<Uuid> = released.keys().copied().collect();
        let sold: Vec<i32> = released.values().map(|v| v.0).collect();
        let reserved: Vec<i32> = released.values().map(|v| v.1).collect();
        tx.execute(
            "UPDATE event_service.ticket_types t
                SET sold_count = t.sold_count - d.sold, reserved_count = t.reserved_count - d.reserved
             FROM UNNEST($1::uuid[], $2::int[], $3::int[]) AS d(id, sold, reserved)
             WHERE t.id = d.id",
            &[&ids, &sold, &reserved],
        )
        .await?;
    }
    for slice in events.chunks(OUTBOX_SLICE) {
        crate::outbox::enqueue_many(tx, crate::Schema::EventService, slice).await?;
    }
    Ok(FollowThrough {
        registrations: rows.len(),
        refunds,
        waiting_closed: closed.len(),
    })
}

/// The refund a cancelled registration is owed: what was paid for it, or its price when it
/// was confirmed before payments were recorded; nothing for free or unpaid tickets.
fn refund_due(was: RegistrationStatus, paid: i64, price_cents: i64) -> Option<i64> {
    if paid > 0 {
        return Some(paid);
    }
    (was.seat() == Seat::Sold && price_cents > 0).then_some(price_cents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paid_tickets_are_refunded() {
        use RegistrationStatus::*;
        assert_eq!(refund_due(Confirmed, 0, 0), None, "free ticket");
        assert_eq!(refund_due(Reserved, 0, 1500), None, "never paid");
        assert_eq!(refund_due(Pending, 0, 1500), None, "never paid");
        assert_eq!(refund_due(Confirmed, 1500, 1500), Some(1500));
        assert_eq!(
            refund_due(CheckedIn, 0, 900),
            Some(900),
            "paid before payments were kept"
        );
        assert_eq!(
            refund_due(Reserved, 700, 1500),
            Some(700),
            "a part was paid"
        );
    }
}
