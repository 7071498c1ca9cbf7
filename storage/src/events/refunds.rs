//! Refunds on their way to the provider. Each `refund.requested` becomes one row (keyed by the
//! event's id, so a redelivery adds nothing); the payments worker claims due rows, marks them
//! SENT *before* calling the provider (a crash after the call leaves a SENT row that is sent
//! again under the same idempotency key, and the provider answers with the refund it already
//! made), then records the answer. Success is announced as `refund.succeeded`.

use super::registrations::{event_summary, lock, move_to, payload};
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::{RefundRequested, RefundSucceeded};
use domain::envelope::Envelope;
use domain::error::Refusal;
use domain::events::checkout::ProviderKind;
use domain::events::refunds::{MAX_REFUND_SENDS, RefundStatus, resend_after};
use domain::events::refusals::EventRefusal;
use domain::events::registrations::RegistrationStatus;
use domain::ids::{TenantId, UserId};
use tokio_postgres::Row;
use uuid::Uuid;

/// A refund as the organizer and the operator see it.
#[derive(Clone, Debug)]
pub struct Refund {
    /// Id (also the provider's idempotency key).
    pub id: Uuid,
    /// Organization.
    pub tenant_id: TenantId,
    /// Registration refunded.
    pub registration_id: Uuid,
    /// Its event.
    pub event_id: Uuid,
    /// The participant.
    pub user_id: UserId,
    /// The provider, when the money went through one.
    pub provider: Option<ProviderKind>,
    /// Whose account there: an organization's own, or the platform's (None).
    pub account: Option<TenantId>,
    /// The provider's id of the payment refunded.
    pub provider_payment_id: Option<String>,
    /// What the refund names at the provider when not the payment (Stripe's payment intent).
    pub provider_charge_id: Option<String>,
    /// The provider's id of the refund, once it answered.
    pub provider_refund_id: Option<String>,
    /// How much.
    pub amount_cents: i64,
    /// In what.
    pub currency: String,
    /// Why (`EVENT_CANCELLED`, `NO_SEAT`, `REFUNDED_BY_ORGANIZER`, …).
    pub reason: String,
    /// Where it stands.
    pub status: RefundStatus,
    /// How often it was sent.
    pub sends: i32,
    /// One more for each retry by an operator (part of the provider's idempotency key).
    pub generation: i32,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "f.id, f.tenant_id, f.registration_id, f.event_id, f.user_id, f.provider,
    c.provider_payment_id, c.provider_charge_id, f.provider_refund_id, f.amount_cents, f.currency, f.reason,
    f.status, f.sends, f.last_error, f.created_at, f.updated_at, f.generation, c.account_tenant_id";

const FROM: &str =
    "event_service.refunds f LEFT JOIN event_service.checkouts c ON c.id = f.checkout_id";

fn from_row(row: &Row) -> Refund {
    Refund {
        id: row.get(0),
        tenant_id: TenantId::from(row.get::<_, Uuid>(1)),
        registration_id: row.get(2),
        event_id: row.get(3),
        user_id: UserId::from(row.get::<_, Uuid>(4)),
        provider: row.get::<_, Option<&str>>(5).and_then(ProviderKind::parse),
        provider_payment_id: row.get(6),
        provider_charge_id: row.get(7),
        provider_refund_id: row.get(8),
        amount_cents: row.get(9),
        currency: row.get::<_, String>(10).trim().to_string(),
        reason: row.get(11),
        status: RefundStatus::parse(row.get(12)).unwrap_or(RefundStatus::Failed),
        sends: row.get(13),
        last_error: row.get(14),
        created_at: row.get(15),
        updated_at: row.get(16),
        generation: row.get(17),
        account: row.get::<_, Option<Uuid>>(18).map(TenantId::from),
    }
}

impl Refund {
    /// The key the provider deduplicates this refund by: every send of one generation is the
    /// same refund; a retried failure is a new one (providers replay a failure to its key).
    pub fn idempotency_key(&self) -> String {
        format!("{}-{}", self.id, self.generation)
    }
}

/// Why a refund cannot go through a provider: the money came another way.
pub const NOT_THROUGH_PROVIDER: &str =
    "paid outside a payment provider (cash, bank transfer or an outside system): return it by hand";

/// Records `request` (the `refund.requested` event `request_id`) as a refund to execute, inside
/// `tx`: through the provider of the payment it names, or of the registration's paid checkout.
/// Money that came another way is recorded as failed, for the organizer to return by hand.
/// A request already recorded adds nothing.
pub async fn record(
    tx: &Tx,
    request_id: Uuid,
    tenant: TenantId,
    request: &RefundRequested,
    now: DateTime<Utc>,
) -> Result<()> {
    if request.amount_cents <= 0 {
        return Ok(());
    }
    let checkout = tx
        .query_opt(
            "SELECT id, provider FROM event_service.checkouts
             WHERE registration_id = $1 AND provider_payment_id IS NOT NULL
               AND ($2::text IS NULL OR provider_payment_id = $2)
               AND ($2::text IS NOT NULL OR status = 'PAID')
             ORDER BY attempt DESC LIMIT 1",
            &[&request.registration_id, &request.payment_id],
        )
        .await?;
    let (checkout, provider, status, error): (Option<Uuid>, Option<String>, _, Option<&str>) =
        match &checkout {
            Some(row) => (
                Some(row.get(0)),
                Some(row.get(1)),
                RefundStatus::Requested,
                None,
            ),
            None => (None, None, RefundStatus::Failed, Some(NOT_THROUGH_PROVIDER)),
        };
    tx.execute(
        "INSERT INTO event_service.refunds (id, tenant_id, registration_id, event_id, user_id, request_id,
            checkout_id, provider, amount_cents, currency, reason, status, last_error, next_attempt_at,
            created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL, $14, $14)
         ON CONFLICT (request_id) DO NOTHING",
        &[
            &Uuid::now_v7(),
            &tenant.as_uuid(),
            &request.registration_id,
            &request.event_id,
            &request.user_id.as_uuid(),
            &request_id,
            &checkout,
            &provider,
            &request.amount_cents,
            &request.currency,
            &request.reason,
            &status.as_str(),
            &error,
            &now,
        ],
    )
    .await?;
    Ok(())
}

/// Claims up to `limit` refunds due at `now` (or due at once: no time set) for sending: each becomes SENT, counts the send,
/// and is not due again before `resend_after` (unless its answer is recorded first). Another
/// process's worker skips the rows this one holds.
pub async fn claim_due(db: &Database, now: DateTime<Utc>, limit: i64) -> Result<Vec<Refund>> {
    let tx = db.begin(Scope::system()).await?;
    let rows = tx
        .query(
            "SELECT id, sends FROM event_service.refunds
             WHERE status IN ('REQUESTED', 'SENT') AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
             ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED",
            &[&now, &limit],
        )
        .await?;
    let mut claimed = Vec::with_capacity(rows.len());
    for row in &rows {
        let id: Uuid = row.get(0);
        let sends = row.get::<_, i32>(1) + 1;
        let again = now
            + chrono::Duration::from_std(resend_after(sends)).unwrap_or(chrono::Duration::hours(1));
        tx.execute(
            "UPDATE event_service.refunds SET status = 'SENT', sends = $2, next_attempt_at = $3, updated_at = $4
             WHERE id = $1",
            &[&id, &sends, &again, &now],
        )
        .await?;
        claimed.push(id);
    }
    let refunds = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM {FROM} WHERE f.id = ANY($1) ORDER BY f.next_attempt_at"
            ),
            &[&claimed],
        )
        .await?;
    tx.commit().await?;
    Ok(refunds.iter().map(from_row).collect())
}

/// What the provider answered to a refund.
#[derive(Clone, Debug)]
pub enum Answer {
    /// The money went back, under the provider's refund id.
    Succeeded(String),
    /// The provider accepted it and will finish later (its refund id): asked again later.
    Pending(String),
    /// The provider refused it for good.
    Refused(String),
    /// No answer (timeout, connection, the provider's own failure): sent again later.
    Unavailable(String),
}

/// Records the provider's answer to a SENT refund; a success is announced (`refund.succeeded`).
/// An answer to a refund already settled changes nothing. Returns the refund as it now is.
pub async fn answer(
    db: &Database,
    id: Uuid,
    answer: &Answer,
    now: DateTime<Utc>,
) -> Result<Refund> {
    let tx = db.begin(Scope::system()).await?;
    let current = tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM {FROM} WHERE f.id = $1 FOR UPDATE OF f"),
            &[&id],
        )
        .await?
        .as_ref()
        .map(from_row)
        .ok_or_else(Refusal::not_found)?;
    if !current.status.is_pending() {
        tx.commit().await?;
        return Ok(current);
    }
    match answer {
        Answer::Succeeded(refund_id) => {
            tx.execute(
                "UPDATE event_service.refunds SET status = 'SUCCEEDED', provider_refund_id = $2, last_error = NULL,
                    next_attempt_at = NULL, settled_at = $3, updated_at = $3
                 WHERE id = $1",
                &[&id, refund_id, &now],
            )
            .await?;
            announce(&tx, &current, refund_id).await?;
        }
        Answer::Pending(refund_id) => {
            tx.execute(
                "UPDATE event_service.refunds SET provider_refund_id = $2, last_error = NULL, updated_at = $3
                 WHERE id = $1",
                &[&id, refund_id, &now],
            )
            .await?;
        }
        Answer::Refused(why) => {
            tx.execute(
                "UPDATE event_service.refunds SET status = 'FAILED', last_error = $2, next_attempt_at = NULL,
                    updated_at = $3
                 WHERE id = $1",
                &[&id, why, &now],
            )
            .await?;
        }
        Answer::Unavailable(why) => {
            // Its next send was set when it was claimed; past the last one it has failed.
            let status = if current.sends >= MAX_REFUND_SENDS {
                RefundStatus::Failed
            } else {
                RefundStatus::Sent
            };
            tx.execute(
                "UPDATE event_service.refunds SET status = $2, last_error = $3, updated_at = $4,
                    next_attempt_at = CASE WHEN $2 = 'FAILED' THEN NULL ELSE next_attempt_at END
                 WHERE id = $1",
                &[&id, &status.as_str(), why, &now],
            )
            .await?;
        }
    }
    let after = tx
        .query_one(
            &format!("SELECT {COLUMNS} FROM {FROM} WHERE f.id = $1"),
            &[&id],
        )
        .await?;
    tx.commit().await?;
    Ok(from_row(&after))
}

async fn announce(tx: &Tx, refund: &Refund, provider_refund_id: &str) -> Result<()> {
    let summary = event_summary(tx, refund.event_id).await?;
    let email: Option<String> = tx
        .query_one(
            "SELECT email FROM event_service.registrations WHERE id = $1",
            &[&refund.registration_id],
        )
        .await?
        .get(0);
    super::publish(
        tx,
        Some(refund.tenant_id),
        None,
        DomainEvent::RefundSucceeded(RefundSucceeded {
            refund_id: refund.id,
            registration_id: refund.registration_id,
            event_id: refund.event_id,
            user_id: refund.user_id,
            email,
            amount_cents: refund.amount_cents,
            currency: refund.currency.clone(),
            provider: refund
                .provider
                .map(|p| p.as_str())
                .unwrap_or("")
                .to_string(),
            provider_refund_id: provider_refund_id.to_string(),
            event: summary,
        }),
    )
    .await?;
    Ok(())
}

/// Which refunds to list.
#[derive(Clone, Debug, Default)]
pub struct RefundFilter {
    /// Only those of this event.
    pub event: Option<Uuid>,
    /// Only those of this registration.
    pub registration: Option<Uuid>,
    /// Only those in this status.
    pub status: Option<RefundStatus>,
}

/// Refunds the scope may see, newest first, at most `limit`.
pub async fn list(
    db: &Database,
    scope: Scope,
    filter: &RefundFilter,
    limit: i64,
) -> Result<Vec<Refund>> {
    let tx = db.begin(scope).await?;
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM {FROM}
                 WHERE ($1::uuid IS NULL OR f.event_id = $1) AND ($2::uuid IS NULL OR f.registration_id = $2)
                   AND ($3::text IS NULL OR f.status = $3)
                 ORDER BY f.created_at DESC LIMIT $4"
            ),
            &[
                &filter.event,
                &filter.registration,
                &filter.status.map(|s| s.as_str()),
                &limit,
            ],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}

/// The refunds of `tenant`'s event `event` (at most `limit`, newest first); an event of
/// another organization is not found, even a public one.
pub async fn of_event(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    event: Uuid,
    limit: i64,
) -> Result<Vec<Refund>> {
    let scope = Scope::tenant(tenant, Some(user));
    let tx = db.begin(scope).await?;
    super::catalog::require_own(&tx, tenant, event).await?;
    tx.commit().await?;
    let filter = RefundFilter {
        event: Some(event),
        ..RefundFilter::default()
    };
    list(db, scope, &filter, limit).await
}

/// Sends a failed refund again (an operator's `bilet refunds retry`, or an organizer's): it is
/// requested anew, with its own key, so the provider still makes it at most once.
pub async fn retry(db: &Database, scope: Scope, id: Uuid, now: DateTime<Utc>) -> Result<Refund> {
    let tx = db.begin(scope).await?;
    let current = tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM {FROM} WHERE f.id = $1 FOR UPDATE OF f"),
            &[&id],
        )
        .await?
        .as_ref()
        .map(from_row)
        .ok_or_else(Refusal::not_found)?;
    if !current.status.may_become(RefundStatus::Requested) {
        return Err(Refusal::from(EventRefusal::RefundNotFailed).into());
    }
    if current.provider.is_none() {
        return Err(Refusal::from(EventRefusal::NothingToRefund).into());
    }
    tx.execute(
        "UPDATE event_service.refunds SET status = 'REQUESTED', sends = 0, generation = generation + 1,
            next_attempt_at = NULL, updated_at = $2
         WHERE id = $1",
        &[&id, &now],
    )
    .await?;
    let after = tx
        .query_one(
            &format!("SELECT {COLUMNS} FROM {FROM} WHERE f.id = $1"),
            &[&id],
        )
        .await?;
    tx.commit().await?;
    Ok(from_row(&after))
}

/// Why an organizer refunds one ticket.
pub const REFUNDED_BY_ORGANIZER: &str = "REFUNDED_BY_ORGANIZER";

/// An organizer gives back what was paid for one registration of `tenant`: a registration that
/// still holds a seat is cancelled (its seat freed, the waiting list offered it), and what was
/// paid and not yet given back is asked for (`refund.requested`) and recorded for the worker,
/// in one transaction. A second refund of the same money is refused.
pub async fn refund_registration(
    db: &Database,
    tenant: TenantId,
    actor: UserId,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<Refund> {
    let tx = db.begin(Scope::tenant(tenant, Some(actor))).await?;
    let current = lock(&tx, id).await?;
    let owed: i64 = tx
        .query_one(
            // A payment told without its amount paid the ticket's price (mark-paid's rule).
            "SELECT (SELECT COALESCE(sum(COALESCE(p.amount_cents, r.price_cents)), 0)
                      FROM event_service.payments p JOIN event_service.registrations r ON r.id = p.registration_id
                      WHERE p.registration_id = $1 AND p.outcome IN ('CONFIRMED', 'SEAT_TAKEN'))::bigint
                  - (SELECT COALESCE(sum(amount_cents), 0) FROM event_service.refunds
                      WHERE registration_id = $1 AND status <> 'FAILED')::bigint",
            &[&id],
        )
        .await?
        .get(0);
    if owed <= 0 {
        let refunded: bool = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM event_service.refunds WHERE registration_id = $1 AND status <> 'FAILED')",
                &[&id],
            )
            .await?
            .get(0);
        return Err(Refusal::from(if refunded {
            EventRefusal::AlreadyRefunded
        } else {
            EventRefusal::NothingToRefund
        })
        .into());
    }
    let summary = event_summary(&tx, current.event_id).await?;
    let registration = if current.status.is_active() {
        let cancelled = move_to(
            &tx,
            &current,
            RegistrationStatus::Cancelled,
            Some(REFUNDED_BY_ORGANIZER),
            now,
        )
        .await?;
        super::waitlist::notify_next(&tx, cancelled.ticket_type_id, now).await?;
        super::publish(
            &tx,
            Some(tenant),
            Some(actor),
            DomainEvent::RegistrationCancelled(payload(&cancelled, &summary)),
        )
        .await?;
        cancelled
    } else {
        current
    };
    let request = RefundRequested {
        registration_id: registration.id,
        event_id: registration.event_id,
        user_id: registration.user_id,
        email: registration.email.clone(),
        payment_id: None,
        amount_cents: owed,
        currency: registration.currency.clone(),
        reason: REFUNDED_BY_ORGANIZER.to_string(),
        event: summary,
    };
    // Recorded here as well as by the consumer of the event: the refund exists (and a second
    // click finds it) before this answer, and the event's delivery adds nothing.
    let envelope = Envelope::of(
        &DomainEvent::RefundRequested(request.clone()),
        Some(tenant),
        Some(actor),
    );
    crate::outbox::enqueue(&tx, crate::Schema::EventService, &envelope).await?;
    record(&tx, envelope.id.as_uuid(), tenant, &request, now).await?;
    let refund = tx
        .query_one(
            &format!("SELECT {COLUMNS} FROM {FROM} WHERE f.request_id = $1"),
            &[&envelope.id.as_uuid()],
        )
        .await?;
    tx.commit().await?;
    Ok(from_row(&refund))
}

/// The refund a provider's refund id names, if bilet made it.
pub async fn by_provider_id(
    db: &Database,
    provider: ProviderKind,
    refund_id: &str,
) -> Result<Option<Refund>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM {FROM} WHERE f.provider = $1 AND f.provider_refund_id = $2"
            ),
            &[&provider.as_str(), &refund_id],
        )
        .await?;
    tx.commit().await?;
    Ok(row.as_ref().map(from_row))
}
