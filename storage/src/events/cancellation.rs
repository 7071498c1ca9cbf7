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
use domain::contract::DomainEvent;
use domain::contract::events::{EventSummary, RefundRequested};
use domain::envelope::Envelope;
use domain::events::refunds::refund_due;
use domain::events::registrations::{EVENT_CANCELLED, RegistrationStatus};
use domain::ids::{TenantId, UserId};
use std::collections::BTreeMap;
use uuid::Uuid;

/// Outbox rows written per statement at most (a registration gives one or two): large events
/// are announced in slices.
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
    summary: &EventSummary,
    now: DateTime<Utc>,
) -> Result<FollowThrough> {
    // The caller locked the event, then its ticket types (a batch waiting on the event then
    // finds it cancelled); taking the types again here costs nothing.
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
    // Announced slice by slice: building every envelope of a stadium before the first insert
    // would leave the session idle in its transaction for seconds, past the idle limit that
    // exists to end the sessions of paused processes.
    let mut refunds = 0;
    for slice in rows.chunks(OUTBOX_SLICE / 2) {
        let mut events = Vec::with_capacity(slice.len() * 2);
        for row in slice {
            let registration = from_row(row);
            let was: RegistrationStatus = row
                .get::<_, String>(COLUMN_COUNT)
                .parse()
                .unwrap_or(RegistrationStatus::Confirmed);
            let paid: i64 = row.get(COLUMN_COUNT + 1);
            let seats = released.entry(registration.ticket_type_id).or_default();
            let (sold, reserved) = was.seat().counts();
            seats.0 += sold;
            seats.1 += reserved;
            events.push(Envelope::of(
                &DomainEvent::RegistrationCancelled(payload(&registration, summary)),
                Some(tenant),
                actor,
            ));
            if let Some(amount) = refund_due(was, paid, registration.price_cents) {
                refunds += 1;
                let refund = RefundRequested {
                    registration_id: registration.id,
                    event_id: registration.event_id,
                    user_id: registration.user_id,
                    email: registration.email.clone(),
                    payment_id: None,
                    amount_cents: amount,
                    currency: registration.currency.clone(),
                    reason: EVENT_CANCELLED.to_string(),
                    event: summary.clone(),
                };
                events.push(Envelope::of(
                    &DomainEvent::RefundRequested(refund),
                    Some(tenant),
                    actor,
                ));
            }
        }
        crate::outbox::enqueue_many(tx, crate::Schema::EventService, &events).await?;
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
    Ok(FollowThrough {
        registrations: rows.len(),
        refunds,
        waiting_closed: closed.len(),
    })
}
