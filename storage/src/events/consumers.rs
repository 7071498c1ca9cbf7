//! What the event service takes from other services' events: the groups behind private
//! events (group.created, group.member.added, group.deleted), the cancelling and archiving of
//! a deleted organization's events (organization.deleted), the people who register (names and
//! email from user.registered / user.updated, so tickets carry them), and payments
//! (payment.completed, payment.failed, payment.refunded: see `events::payments`). Each event
//! is applied once.

use crate::broker::HandlerError;
use crate::db::{Schema, Scope, Tx};
use crate::events::payments::{self, Notice};
use crate::inbox::{Projection, Received};
use async_trait::async_trait;
use domain::contract::identity::UserChanged;
use domain::contract::payments::Payment;
use domain::contract::{DomainEvent, Kind};
use domain::events::payments::{Channel, PaymentKind};

/// What the event service keeps from other services' events (consumer `events`).
pub struct Projections;

#[async_trait]
impl Projection for Projections {
    const NAME: &'static str = "events";
    const SCHEMA: Schema = Schema::EventService;
    const TAKES: &'static [Kind] = &[
        Kind::GroupCreated,
        Kind::GroupMemberAdded,
        Kind::GroupDeleted,
        Kind::OrganizationDeleted,
        Kind::PaymentCompleted,
        Kind::PaymentFailed,
        Kind::PaymentRefunded,
        Kind::UserRegistered,
        Kind::UserUpdated,
    ];
    type Done = ();

    /// Groups and organizations are written as their tenant (row level security); payments
    /// and people are not any one tenant's.
    fn scope(&self, received: &Received<'_>) -> Result<Scope, HandlerError> {
        let organization = match &received.event {
            DomainEvent::GroupCreated(g) | DomainEvent::GroupDeleted(g) => g.organization_id,
            DomainEvent::GroupMemberAdded(m) => m.organization_id,
            DomainEvent::OrganizationDeleted(o) => o.organization_id,
            _ => return Ok(Scope::system()),
        };
        Ok(Scope::tenant(
            received.envelope.tenant_id.unwrap_or(organization),
            None,
        ))
    }

    async fn apply(&self, tx: &Tx, received: &Received<'_>) -> Result<(), HandlerError> {
        let at = received.envelope.occurred_at;
        match &received.event {
            DomainEvent::GroupCreated(group) => {
                tx.execute(
                    "INSERT INTO event_service.groups (id, tenant_id, name) VALUES ($1, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name",
                    &[
                        &group.group_id,
                        &group.organization_id.as_uuid(),
                        &group.name,
                    ],
                )
                .await?;
            }
            DomainEvent::GroupMemberAdded(member) => {
                // The member may arrive before the group on another channel; create the group
                // row from the member event so access is never lost.
                tx.execute(
                    "INSERT INTO event_service.groups (id, tenant_id, name) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
                    &[&member.group_id, &member.organization_id.as_uuid(), &member.group_name],
                )
                .await?;
                tx.execute(
                    "INSERT INTO event_service.group_members (group_id, tenant_id, user_id) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                    &[&member.group_id, &member.organization_id.as_uuid(), &member.user_id.as_uuid()],
                )
                .await?;
            }
            DomainEvent::GroupDeleted(group) => {
                tx.execute(
                    "DELETE FROM event_service.groups WHERE id = $1",
                    &[&group.group_id],
                )
                .await?;
            }
            DomainEvent::OrganizationDeleted(org) => {
                // Its events end for their participants as a cancellation would, then go.
                let cancelled =
                    crate::events::catalog::cancel_all_of(tx, org.organization_id, at).await?;
                tracing::info!(tenant = %org.organization_id, cancelled, "events of a deleted organization cancelled and archived");
            }
            DomainEvent::PaymentCompleted(p) => {
                payment(tx, received, p, PaymentKind::Completed).await?
            }
            DomainEvent::PaymentFailed(p) => payment(tx, received, p, PaymentKind::Failed).await?,
            DomainEvent::PaymentRefunded(p) => {
                payment(tx, received, p, PaymentKind::Refunded).await?
            }
            DomainEvent::UserRegistered(user) | DomainEvent::UserUpdated(user) => {
                person(tx, user, at).await?
            }
            _ => {}
        }
        Ok(())
    }
}

/// What follows a payment from the event service's own events (consumer `payments`): each
/// refund.requested becomes a refund for the payments worker to execute, and a reservation
/// that ended (reservation.expired, registration.cancelled) closes its open checkout, whose
/// provider payment the worker then cancels where the provider allows.
pub struct PaymentFollowUps;

#[async_trait]
impl Projection for PaymentFollowUps {
    const NAME: &'static str = "payments";
    const SCHEMA: Schema = Schema::EventService;
    const TAKES: &'static [Kind] = &[
        Kind::RefundRequested,
        Kind::ReservationExpired,
        Kind::RegistrationCancelled,
    ];
    type Done = ();

    async fn apply(&self, tx: &Tx, received: &Received<'_>) -> Result<(), HandlerError> {
        let at = received.envelope.occurred_at;
        match &received.event {
            DomainEvent::RefundRequested(request) => {
                let tenant = match received.envelope.tenant_id {
                    Some(tenant) => tenant,
                    None => match tx
                        .query_opt(
                            "SELECT tenant_id FROM event_service.registrations WHERE id = $1",
                            &[&request.registration_id],
                        )
                        .await?
                    {
                        Some(row) => domain::ids::TenantId::from(row.get::<_, uuid::Uuid>(0)),
                        None => {
                            tracing::warn!(registration = %request.registration_id,
                                "refund asked for an unknown registration; nothing to execute");
                            return Ok(());
                        }
                    },
                };
                crate::events::refunds::record(
                    tx,
                    received.envelope.id.as_uuid(),
                    tenant,
                    request,
                    at,
                )
                .await?;
            }
            DomainEvent::ReservationExpired(r) | DomainEvent::RegistrationCancelled(r) => {
                crate::events::checkout::close_for(tx, r.registration_id, at).await?;
            }
            _ => {}
        }
        Ok(())
    }
}

/// A payment event: kept under the provider's id (`paymentId`, else the event's own id), so
/// one that also came by the webhook takes effect once.
async fn payment(
    tx: &Tx,
    received: &Received<'_>,
    payment: &Payment,
    kind: PaymentKind,
) -> Result<(), HandlerError> {
    let notice = Notice {
        id: payment
            .payment_id
            .clone()
            .unwrap_or_else(|| received.envelope.id.to_string()),
        kind,
        registration: payment.registration_id,
        amount_cents: payment.amount_cents,
        currency: payment.currency.clone(),
        channel: Channel::Broker,
    };
    match payments::receive(tx, &notice, received.envelope.occurred_at).await {
        Ok(receipt) => {
            tracing::info!(registration = %notice.registration, outcome = receipt.outcome.as_str(),
                replayed = receipt.replayed, "payment applied");
        }
        // A payment for a registration nobody knows cannot be applied now or later.
        Err(crate::Error::Refused(r)) if r.code == domain::ErrorCode::NotFound => {
            tracing::warn!(registration = %notice.registration, kind = %received.envelope.event_type,
                "payment for an unknown registration ignored");
        }
        Err(e) => return Err(e.into()),
    }
    Ok(())
}

/// Keeps a person's name and email, for the tickets they take later.
async fn person(
    tx: &Tx,
    user: &UserChanged,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<(), HandlerError> {
    if user.deleted {
        tx.execute(
            "DELETE FROM event_service.people WHERE user_id = $1",
            &[&user.user_id.as_uuid()],
        )
        .await?;
        return Ok(());
    }
    tx.execute(
        "INSERT INTO event_service.people (user_id, email, first_name, last_name, updated_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email,
            first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name, updated_at = EXCLUDED.updated_at
         WHERE event_service.people.updated_at <= EXCLUDED.updated_at",
        &[
            &user.user_id.as_uuid(),
            &user.email,
            &user.first_name,
            &user.last_name,
            &at,
        ],
    )
    .await?;
    Ok(())
}
