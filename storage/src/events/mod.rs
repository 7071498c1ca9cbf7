//! Storage of the event service (schema event_service): events, ticket types, and the
//! projections it keeps from other services' events. Tenant isolation is the database's:
//! every query runs in a scoped transaction under row level security.

pub mod cancellation;
pub mod catalog;
pub mod consumers;
pub mod payments;
pub mod registrations;
pub mod registrations_export;
pub mod seats;
pub mod ticket_types;
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
