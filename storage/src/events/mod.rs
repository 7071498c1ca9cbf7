//! Storage of the event service (schema event_service): events, ticket types, and the
//! projections it keeps from other services' events. Tenant isolation is the database's:
//! every query runs in a scoped transaction under row level security.

pub mod cancellation;
pub mod catalog;
pub mod checkout;
pub mod consumers;
pub mod door;
pub mod payment_accounts;
pub mod payments;
pub mod refunds;
pub mod registrations;
pub mod registrations_export;
pub mod revenue;
pub mod seats;
pub mod ticket_types;
pub mod tickets;
pub mod waiting_room;
pub mod waitlist;

use crate::db::{DbError, Schema, Tx};
use domain::contract::DomainEvent;
use domain::envelope::Envelope;
use domain::ids::{TenantId, UserId};

/// Writes an event-service event into the outbox of `tx`.
pub(crate) async fn publish(
    tx: &Tx,
    tenant: Option<TenantId>,
    actor: Option<UserId>,
    event: DomainEvent,
) -> Result<(), DbError> {
    crate::outbox::enqueue(
        tx,
        Schema::EventService,
        &Envelope::of(&event, tenant, actor),
    )
    .await
}

/// Longest a sweep (reservation or hold expiry) keeps working in one transaction; what is left
/// waits for the timer's next look. Together with `SWEEP_LOCK_WAIT` it keeps the sweep's share
/// lock on its shards' lease rows far shorter than a lease, so a hand-over never waits on it.
pub const SWEEP_BUDGET: std::time::Duration = std::time::Duration::from_millis(500);

/// How long a sweep waits for a row a seat batch holds before it gives up for this look.
const SWEEP_LOCK_WAIT: &str = "300ms";

/// A sweep's transaction: system scope, lock waits bounded by `SWEEP_LOCK_WAIT` (a lock it
/// cannot get ends the transaction as contention; the timer looks again).
async fn sweep(db: &crate::Database) -> Result<crate::Tx, crate::DbError> {
    let tx = db.begin(crate::Scope::system()).await?;
    tx.batch_execute(&format!("SET LOCAL lock_timeout = '{SWEEP_LOCK_WAIT}'"))
        .await?;
    Ok(tx)
}
