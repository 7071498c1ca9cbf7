//! Payments reaching a registration, by whichever door they come: a payment event on the
//! broker, the provider's signed webhook, or an organizer confirming cash. Each payment is
//! kept under the provider's id, so the same payment twice takes effect once; what it does is
//! `domain::events::payments::effect`: confirm, take a free seat for a reservation that ran
//! out, cancel on failure or refund, or ask for a refund when it can buy nothing. The
//! registration's ticket type is locked first, like every seat change.

use super::publish;
use super::registrations::{
    Registration, event_summary, lock as lock_registration, move_to, payload,
};
use crate::db::Tx;
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::{RefundRequested, RegistrationConfirmed};
use domain::contract::payments::Payment;
use domain::events::payments::{
    Channel, PaymentKind, PaymentOutcome, SeatChance, cancellation_reason, covers, effect,
    manual_effect,
};
use domain::events::refunds::refund_reason;
use domain::events::registrations::RegistrationStatus;
use domain::events::seats::on_sale;
use uuid::Uuid;

/// A payment as it reached bilet.
#[derive(Clone, Debug)]
pub struct Notice {
    /// The provider's id of the payment (deduplicates it).
    pub id: String,
    /// What happened.
    pub kind: PaymentKind,
    /// The registration it pays for.
    pub registration: Uuid,
    /// The amount, when told.
    pub amount_cents: Option<i64>,
    /// Its currency, when told.
    pub currency: Option<String>,
    /// Which door it came by.
    pub channel: Channel,
}

/// What a payment did.
#[derive(Clone, Debug)]
pub struct Receipt {
    /// The effect.
    pub outcome: PaymentOutcome,
    /// The registration afterwards.
    pub registration: Registration,
    /// The payment had been received before; nothing happened this time.
    pub replayed: bool,
}

/// Applies a payment inside `tx` (a system-scope transaction: the payment names only its
/// registration). An unknown registration is `not_found`.
pub async fn receive(tx: &Tx, notice: &Notice, now: DateTime<Utc>) -> Result<Receipt> {
    // The registration's lock first: two copies of one payment arriving together then take
    // turns, and the second finds the first kept.
    let current = lock_registration(tx, notice.registration).await?;
    if let Some(row) = tx
        .query_opt(
            "SELECT outcome FROM event_service.payments WHERE id = $1",
            &[&notice.id],
        )
        .await?
    {
        let outcome =
            PaymentOutcome::parse(row.get::<_, &str>(0)).unwrap_or(PaymentOutcome::NoChange);
        return Ok(Receipt {
            outcome,
            registration: current,
            replayed: true,
        });
    }
    let (chance, event_cancelled, prepayment) = seat_chance(tx, &current, now).await?;
    let covered = covers(
        notice.amount_cents,
        notice.currency.as_deref(),
        current.price_cents,
        &current.currency,
        prepayment,
    );
    let outcome = match notice.channel {
        Channel::Manual => manual_effect(current.status, chance)?,
        _ => effect(notice.kind, current.status, chance, covered),
    };
    let registration = match outcome {
        PaymentOutcome::Confirmed | PaymentOutcome::SeatTaken => {
            let confirmed = move_to(tx, &current, RegistrationStatus::Confirmed, None, now).await?;
            let summary = event_summary(tx, confirmed.event_id).await?;
            let data = RegistrationConfirmed {
                registration: payload(&confirmed, &summary),
                payment_id: Some(notice.id.clone()),
                amount_cents: Some(notice.amount_cents.unwrap_or(confirmed.price_cents)),
            };
            publish(
                tx,
                Some(confirmed.tenant_id),
                None,
                DomainEvent::RegistrationConfirmed(data),
            )
            .await?;
            confirmed
        }
        PaymentOutcome::Cancelled => {
            let reason = cancellation_reason(notice.kind);
            let cancelled = move_to(
                tx,
                &current,
                RegistrationStatus::Cancelled,
                Some(reason),
                now,
            )
            .await?;
            super::waitlist::notify_next(tx, cancelled.ticket_type_id, now).await?;
            let summary = event_summary(tx, cancelled.event_id).await?;
            publish(
                tx,
                Some(cancelled.tenant_id),
                None,
                DomainEvent::RegistrationCancelled(payload(&cancelled, &summary)),
            )
            .await?;
            cancelled
        }
        PaymentOutcome::RefundRequested => {
            // A late payment for a cancelled event is told of its refund (the cancellation's own
            // refunds, reason EVENT_CANCELLED, ride on the one cancellation notice).
            let reason = refund_reason(covered, event_cancelled, current.status);
            let summary = event_summary(tx, current.event_id).await?;
            let refund = RefundRequested {
                registration_id: current.id,
                event_id: current.event_id,
                user_id: current.user_id,
                email: current.email.clone(),
                payment_id: Some(notice.id.clone()),
                amount_cents: notice.amount_cents.unwrap_or(current.price_cents),
                currency: notice
                    .currency
                    .clone()
                    .unwrap_or_else(|| current.currency.clone()),
                reason: reason.to_string(),
                event: summary,
            };
            publish(
                tx,
                Some(current.tenant_id),
                None,
                DomainEvent::RefundRequested(refund),
            )
            .await?;
            current
        }
        PaymentOutcome::NoChange => current,
    };
    tx.execute(
        "INSERT INTO event_service.payments (id, tenant_id, registration_id, kind, amount_cents, currency,
            channel, outcome, received_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &notice.id,
            &registration.tenant_id.as_uuid(),
            &registration.id,
            &notice.kind.as_str(),
            &notice.amount_cents,
            &notice.currency,
            &notice.channel.as_str(),
            &outcome.as_str(),
            &now,
        ],
    )
    .await?;
    // A payment that came by the webhook or by hand is announced like a broker payment, so
    // receipts and analytics see every payment the same way. (Our own consumer finds it kept
    // under its id and leaves it.)
    if notice.channel != Channel::Broker {
        let payment = Payment {
            payment_id: Some(notice.id.clone()),
            registration_id: registration.id,
            event_id: Some(registration.event_id),
            amount_cents: Some(notice.amount_cents.unwrap_or(registration.price_cents)),
            currency: Some(
                notice
                    .currency
                    .clone()
                    .unwrap_or_else(|| registration.currency.clone()),
            ),
            channel: Some(notice.channel),
            outcome: Some(outcome),
        };
        let event = match notice.kind {
            PaymentKind::Completed => DomainEvent::PaymentCompleted(payment),
            PaymentKind::Failed => DomainEvent::PaymentFailed(payment),
            PaymentKind::Refunded => DomainEvent::PaymentRefunded(payment),
        };
        publish(tx, Some(registration.tenant_id), None, event).await?;
    }
    Ok(Receipt {
        outcome,
        registration,
        replayed: false,
    })
}

/// Whether a seat of the registration's (locked) type could still be had, whether the event
/// was cancelled, and the prepayment percentage of the type.
async fn seat_chance(
    tx: &Tx,
    r: &Registration,
    now: DateTime<Utc>,
) -> Result<(SeatChance, bool, i32)> {
    let row = tx
        .query_one(
            "SELECT e.status, e.deleted_at IS NULL, t.is_active, t.sales_start, t.sales_end,
                t.quantity - t.sold_count - t.reserved_count,
                EXISTS (SELECT 1 FROM event_service.registrations o WHERE o.event_id = t.event_id
                    AND o.user_id = $2 AND o.id <> $3 AND o.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN')),
                t.prepayment_percent
             FROM event_service.ticket_types t JOIN event_service.events e ON e.id = t.event_id
             WHERE t.id = $1",
            &[&r.ticket_type_id, &r.user_id.as_uuid(), &r.id],
        )
        .await?;
    let status: String = row.get(0);
    let open = status == "PUBLISHED"
        && row.get::<_, bool>(1)
        && on_sale(row.get(2), row.get(3), row.get(4), now);
    Ok((
        SeatChance {
            open,
            seat_free: row.get::<_, i32>(5) > 0,
            registered_otherwise: row.get(6),
        },
        status == "CANCELLED",
        row.get(7),
    ))
}
