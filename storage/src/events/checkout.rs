//! Checkouts: the payments opened at a provider for registrations awaiting payment. The row
//! is written before the provider is asked (status CREATING, with the idempotency key the
//! provider deduplicates by), so a request that timed out and is sent again finds it and asks
//! the provider again for the same payment. What the provider finally says goes through
//! `payments::receive`, the one function every payment passes.

use super::payments::{self, Notice};
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::error::Refusal;
use domain::events::checkout::{
    CheckoutStatus, ProviderKind, amount_due, description, idempotency_key, may_check_out,
};
use domain::events::payments::{Channel, PaymentKind};
use domain::events::registrations::RegistrationStatus;
use domain::ids::{TenantId, UserId};
use tokio_postgres::Row;
use uuid::Uuid;

/// One payment opened at a provider.
#[derive(Clone, Debug)]
pub struct Checkout {
    /// Id.
    pub id: Uuid,
    /// The event's organization.
    pub tenant_id: TenantId,
    /// The registration paid for.
    pub registration_id: Uuid,
    /// The participant.
    pub user_id: UserId,
    /// 1 for the first payment of the registration, then one more after each decline.
    pub attempt: i32,
    /// Where it is paid.
    pub provider: ProviderKind,
    /// Whose account at the provider: an organization's own, or the platform's (None).
    pub account: Option<TenantId>,
    /// The key the provider deduplicates the payment by.
    pub idempotency_key: String,
    /// The provider's id, once it answered.
    pub provider_payment_id: Option<String>,
    /// What a refund names at the provider when not the payment (Stripe's payment intent).
    pub provider_charge_id: Option<String>,
    /// Where it stands.
    pub status: CheckoutStatus,
    /// What is asked, in the smallest unit.
    pub amount_cents: i64,
    /// In what.
    pub currency: String,
    /// Where the participant pays.
    pub payment_url: Option<String>,
    /// Until when the participant may pay: the reservation's deadline, when it has one.
    pub expires_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "c.id, c.tenant_id, c.registration_id, c.user_id, c.attempt, c.provider, c.idempotency_key,
    c.provider_payment_id, c.provider_charge_id, c.status, c.amount_cents, c.currency, c.payment_url, c.expires_at,
    c.account_tenant_id";

fn from_row(row: &Row) -> Checkout {
    Checkout {
        id: row.get(0),
        tenant_id: TenantId::from(row.get::<_, Uuid>(1)),
        registration_id: row.get(2),
        user_id: UserId::from(row.get::<_, Uuid>(3)),
        attempt: row.get(4),
        provider: ProviderKind::parse(row.get(5)).unwrap_or(ProviderKind::Test),
        idempotency_key: row.get(6),
        provider_payment_id: row.get(7),
        provider_charge_id: row.get(8),
        status: CheckoutStatus::parse(row.get(9)).unwrap_or(CheckoutStatus::Closed),
        amount_cents: row.get(10),
        currency: row.get::<_, String>(11).trim().to_string(),
        payment_url: row.get(12),
        expires_at: row.get(13),
        account: row.get::<_, Option<Uuid>>(14).map(TenantId::from),
    }
}

/// What the provider is told about the payment besides its amount.
#[derive(Clone, Debug)]
pub struct Order {
    /// The event and ticket type, for the payer.
    pub description: String,
    /// The payer's email (receipts).
    pub email: Option<String>,
    /// The event's title.
    pub event_title: String,
}

/// A checkout and what the provider is to be told of it.
#[derive(Clone, Debug)]
pub struct Opening {
    /// The checkout.
    pub checkout: Checkout,
    /// What the provider shows.
    pub order: Order,
}

/// Description length providers take (YooKassa: 128 characters).
const DESCRIPTION_MAX: usize = 128;

/// The open checkout of `user`'s registration `id`, or a new one in CREATING at the provider
/// and account `choose` picks for the registration's currency. A registration not awaiting payment
/// is refused; another person's is not found.
pub async fn open(
    db: &Database,
    user: UserId,
    id: Uuid,
    choose: impl FnOnce(&str) -> std::result::Result<(ProviderKind, Option<TenantId>), Refusal>,
    now: DateTime<Utc>,
) -> Result<Opening> {
    // System scope: the row of one's own registration is readable as oneself, but the checkout
    // is written for the organization; the person is checked here instead.
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT r.user_id, r.status, r.price_cents, r.currency, r.expires_at, r.email, r.tenant_id,
                t.prepayment_percent, t.name, e.title
             FROM event_service.registrations r
             JOIN event_service.ticket_types t ON t.id = r.ticket_type_id
             JOIN event_service.events e ON e.id = r.event_id
             WHERE r.id = $1",
            &[&id],
        )
        .await?
        .filter(|row| row.get::<_, Uuid>(0) == user.as_uuid())
        .ok_or_else(Refusal::not_found)?;
    let status: RegistrationStatus = row
        .get::<_, String>(1)
        .parse()
        .map_err(|_| Refusal::not_found())?;
    may_check_out(status).map_err(Refusal::from)?;
    let expires_at: Option<DateTime<Utc>> = row.get(4);
    // Run out, though the timer has not said so yet.
    if expires_at.is_some_and(|at| at <= now) {
        return Err(
            Refusal::from(domain::events::refusals::EventRefusal::NotAwaitingPayment).into(),
        );
    }
    let currency = row.get::<_, String>(3).trim().to_string();
    let order = Order {
        description: description(row.get(9), row.get(8), DESCRIPTION_MAX),
        email: row.get(5),
        event_title: row.get(9),
    };
    if let Some(open) = open_of(&tx, id).await? {
        // A payment the provider gave up on (its own time ran out) is not offered again.
        if open.status == CheckoutStatus::Creating || open.expires_at.is_none_or(|at| at > now) {
            tx.commit().await?;
            return Ok(Opening {
                checkout: open,
                order,
            });
        }
        set_status(&tx, open.id, CheckoutStatus::Declined, now).await?;
    }
    let amount = amount_due(row.get(2), row.get(7));
    if amount <= 0 {
        return Err(
            Refusal::from(domain::events::refusals::EventRefusal::NotAwaitingPayment).into(),
        );
    }
    let (provider, account) = choose(&currency)?;
    let attempt: i32 = tx
        .query_one(
            "SELECT COALESCE(max(attempt), 0) + 1 FROM event_service.checkouts WHERE registration_id = $1",
            &[&id],
        )
        .await?
        .get(0);
    let inserted = tx
        .query_opt(
            &format!(
                "INSERT INTO event_service.checkouts AS c (id, tenant_id, registration_id, user_id, attempt, provider,
                    idempotency_key, status, amount_cents, currency, expires_at, created_at, updated_at, account_tenant_id)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'CREATING', $8, $9, $10, $11, $11, $12)
                 ON CONFLICT DO NOTHING
                 RETURNING {COLUMNS}"
            ),
            &[
                &Uuid::now_v7(),
                &row.get::<_, Uuid>(6),
                &id,
                &user.as_uuid(),
                &attempt,
                &provider.as_str(),
                &idempotency_key(id, attempt),
                &amount,
                &currency,
                &expires_at,
                &now,
                &account.map(|a| a.as_uuid()),
            ],
        )
        .await?;
    let checkout = match inserted {
        Some(row) => from_row(&row),
        // A request of the same person opened it a moment ago: that one is the payment.
        None => open_of(&tx, id)
            .await?
            .ok_or_else(|| Refusal::new(domain::ErrorCode::Conflict))?,
    };
    tx.commit().await?;
    Ok(Opening { checkout, order })
}

async fn open_of(tx: &Tx, registration: Uuid) -> Result<Option<Checkout>> {
    Ok(tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM event_service.checkouts c
                 WHERE c.registration_id = $1 AND c.status IN ('CREATING', 'OPEN') FOR UPDATE"
            ),
            &[&registration],
        )
        .await?
        .as_ref()
        .map(from_row))
}

async fn set_status(tx: &Tx, id: Uuid, status: CheckoutStatus, now: DateTime<Utc>) -> Result<()> {
    tx.execute(
        "UPDATE event_service.checkouts SET status = $2, updated_at = $3 WHERE id = $1",
        &[&id, &status.as_str(), &now],
    )
    .await?;
    Ok(())
}

/// What the provider answered when the payment was opened.
#[derive(Clone, Debug)]
pub struct Opened {
    /// Its id of the payment.
    pub payment_id: String,
    /// Where the person pays.
    pub payment_url: String,
    /// What a refund names, when not the payment.
    pub charge_id: Option<String>,
}

/// Records the provider's payment of a CREATING checkout (a checkout that moved on meanwhile,
/// closed by its reservation's end, keeps its status but learns the provider's id, so the
/// worker can cancel it there). Returns the checkout as it now is.
pub async fn opened(
    db: &Database,
    id: Uuid,
    answer: &Opened,
    now: DateTime<Utc>,
) -> Result<Checkout> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            &format!(
                "UPDATE event_service.checkouts c SET provider_payment_id = $2, payment_url = $3,
                    provider_charge_id = COALESCE($4, c.provider_charge_id),
                    status = CASE WHEN c.status = 'CREATING' THEN 'OPEN' ELSE c.status END,
                    cancel_due = c.cancel_due OR c.status = 'CLOSED', updated_at = $5
                 WHERE c.id = $1
                 RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &answer.payment_id,
                &answer.payment_url,
                &answer.charge_id,
                &now,
            ],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// The checkout a provider's payment id names (with its provider), if bilet opened it.
pub async fn by_payment(
    db: &Database,
    provider: ProviderKind,
    payment_id: &str,
) -> Result<Option<Checkout>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM event_service.checkouts c
                 WHERE c.provider = $1 AND c.provider_payment_id = $2"
            ),
            &[&provider.as_str(), &payment_id],
        )
        .await?;
    tx.commit().await?;
    Ok(row.as_ref().map(from_row))
}

/// The checkouts of a registration its owner (or its organization) may see, newest first.
pub async fn of_registration(
    db: &Database,
    scope: Scope,
    registration: Uuid,
) -> Result<Vec<Checkout>> {
    let tx = db.begin(scope).await?;
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM event_service.checkouts c WHERE c.registration_id = $1
                 ORDER BY c.attempt DESC"
            ),
            &[&registration],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}

/// What the provider finally said of a payment.
#[derive(Clone, Debug)]
pub enum Settlement {
    /// The money arrived: this much, in this currency (as the provider reports it).
    Paid {
        /// Amount in the smallest unit.
        amount_cents: i64,
        /// Currency.
        currency: String,
        /// What a refund will name, when not the payment (Stripe's payment intent).
        charge_id: Option<String>,
    },
    /// The person declined, or the provider cancelled it.
    Declined,
}

/// What a settlement did.
#[derive(Clone, Debug)]
pub enum Settled {
    /// The payment reached the registration, with this effect (confirmed, seat taken, refund
    /// asked for).
    Paid(domain::events::payments::PaymentOutcome),
    /// The checkout is declined; the registration keeps waiting for another attempt.
    Declined,
    /// Nothing changed (the checkout had already settled that way, or cannot move so).
    Unchanged,
}

/// Applies what the provider said of `checkout`'s payment: a success is a payment notice for
/// its registration (confirm, take a free seat after a lapse, or ask for a refund), a decline
/// only ends the checkout. The same word twice changes nothing the second time.
pub async fn settle(
    db: &Database,
    checkout: &Checkout,
    settlement: &Settlement,
    now: DateTime<Utc>,
) -> Result<Settled> {
    let Some(payment_id) = checkout.provider_payment_id.clone() else {
        return Ok(Settled::Unchanged);
    };
    let tx = db.begin(Scope::system()).await?;
    let status: CheckoutStatus = tx
        .query_one(
            "SELECT status FROM event_service.checkouts WHERE id = $1 FOR UPDATE",
            &[&checkout.id],
        )
        .await
        .map(|row| CheckoutStatus::parse(row.get(0)).unwrap_or(CheckoutStatus::Closed))?;
    let settled = match settlement {
        Settlement::Paid {
            amount_cents,
            currency,
            charge_id,
        } => {
            if status.may_become(CheckoutStatus::Paid) {
                tx.execute(
                    "UPDATE event_service.checkouts SET status = 'PAID', cancel_due = false,
                        provider_charge_id = COALESCE($2, provider_charge_id), updated_at = $3
                     WHERE id = $1",
                    &[&checkout.id, charge_id, &now],
                )
                .await?;
            }
            let notice = Notice {
                id: payment_id,
                kind: PaymentKind::Completed,
                registration: checkout.registration_id,
                amount_cents: Some(*amount_cents),
                currency: Some(currency.clone()),
                channel: Channel::Webhook,
            };
            // Kept under the provider's id: a repeated success finds it received.
            let receipt = payments::receive(&tx, &notice, now).await?;
            if receipt.replayed {
                Settled::Unchanged
            } else {
                Settled::Paid(receipt.outcome)
            }
        }
        Settlement::Declined if status.may_become(CheckoutStatus::Declined) => {
            set_status(&tx, checkout.id, CheckoutStatus::Declined, now).await?;
            Settled::Declined
        }
        Settlement::Declined => Settled::Unchanged,
    };
    tx.commit().await?;
    Ok(settled)
}

/// Closes the open checkout of a registration whose reservation ended (expired or
/// cancelled), marking its provider payment to be cancelled where the provider allows.
pub async fn close_for(tx: &Tx, registration: Uuid, now: DateTime<Utc>) -> Result<u64> {
    Ok(tx
        .execute(
            "UPDATE event_service.checkouts SET status = 'CLOSED', cancel_due = provider_payment_id IS NOT NULL
                OR status = 'CREATING', updated_at = $2
             WHERE registration_id = $1 AND status IN ('CREATING', 'OPEN')",
            &[&registration, &now],
        )
        .await?)
}

/// Closed checkouts whose provider payment is still to be cancelled (at most `limit`).
pub async fn cancel_due(db: &Database, limit: i64) -> Result<Vec<Checkout>> {
    let tx = db.begin(Scope::system()).await?;
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM event_service.checkouts c WHERE c.cancel_due
                 ORDER BY c.updated_at LIMIT $1"
            ),
            &[&limit],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}

/// The provider cancelled (or cannot cancel, or never created) a closed checkout's payment:
/// nothing more to do with it.
pub async fn cancelled(db: &Database, id: Uuid, now: DateTime<Utc>) -> Result<()> {
    let tx = db.begin(Scope::system()).await?;
    tx.execute(
        "UPDATE event_service.checkouts SET cancel_due = false, updated_at = $2 WHERE id = $1",
        &[&id, &now],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The provider refused to open a CREATING checkout's payment: it is declined, and the next
/// checkout is a new attempt.
pub async fn declined(db: &Database, id: Uuid, now: DateTime<Utc>) -> Result<()> {
    let tx = db.begin(Scope::system()).await?;
    tx.execute(
        "UPDATE event_service.checkouts SET status = 'DECLINED', updated_at = $2
         WHERE id = $1 AND status = 'CREATING'",
        &[&id, &now],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
