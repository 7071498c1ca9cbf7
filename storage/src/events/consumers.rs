//! What the event service takes from other services' events: the groups behind private
//! events (group.created, group.member.added, group.deleted), the cancelling and archiving of
//! a deleted organization's events (organization.deleted), the people who register (names and
//! email from user.registered / user.updated, so tickets carry them), and payments
//! (payment.completed, payment.failed, payment.refunded: see `events::payments`). Each event
//! is applied once.

use crate::broker::{Handler, HandlerError};
use crate::db::{Database, Schema, Scope};
use crate::events::payments::{self, Notice};
use crate::inbox;
use async_trait::async_trait;
use domain::envelope::Envelope;
use domain::events::payments::{Channel, PaymentKind};
use uuid::Uuid;

/// The consumer name (queue `bilet.events`).
pub const CONSUMER: &str = "events";

/// The routing keys it listens to.
pub const PATTERNS: &[&str] = &[
    "group.created",
    "group.member.added",
    "group.deleted",
    "organization.deleted",
    "payment.completed",
    "payment.failed",
    "payment.refunded",
    "user.registered",
    "user.updated",
];

/// Applies identity events to the event service's projections.
pub struct Projections {
    db: Database,
}

impl Projections {
    /// A consumer writing through `db`.
    pub fn new(db: Database) -> Projections {
        Projections { db }
    }
}

fn uuid_of(event: &Envelope, field: &str) -> Result<Uuid, HandlerError> {
    event.data[field]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{} without {field}", event.event_type).into())
}

#[async_trait]
impl Handler for Projections {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        if let Some(kind) = PaymentKind::from_type(&event.event_type) {
            return self.payment(event, kind).await;
        }
        if matches!(
            event.event_type.as_str(),
            "user.registered" | "user.updated"
        ) {
            return self.person(event).await;
        }
        let tenant = match event.tenant_id {
            Some(t) => t,
            None => uuid_of(event, "organizationId")?.into(),
        };
        let tx = self.db.begin(Scope::tenant(tenant, None)).await?;
        if !inbox::claim(&tx, Schema::EventService, CONSUMER, event.id).await? {
            return Ok(());
        }
        match event.event_type.as_str() {
            "group.created" => {
                let name = event.data["name"].as_str().unwrap_or_default();
                tx.execute(
                    "INSERT INTO event_service.groups (id, tenant_id, name) VALUES ($1, $2, $3)
                     ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name",
                    &[&uuid_of(event, "groupId")?, &tenant.as_uuid(), &name],
                )
                .await?;
            }
            "group.member.added" => {
                let group = uuid_of(event, "groupId")?;
                // The member may arrive before the group on another channel; create the group
                // row from the member event so access is never lost.
                tx.execute(
                    "INSERT INTO event_service.groups (id, tenant_id, name) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
                    &[&group, &tenant.as_uuid(), &event.data["groupName"].as_str().unwrap_or_default()],
                )
                .await?;
                tx.execute(
                    "INSERT INTO event_service.group_members (group_id, tenant_id, user_id) VALUES ($1, $2, $3)
                     ON CONFLICT DO NOTHING",
                    &[&group, &tenant.as_uuid(), &uuid_of(event, "userId")?],
                )
                .await?;
            }
            "group.deleted" => {
                tx.execute(
                    "DELETE FROM event_service.groups WHERE id = $1",
                    &[&uuid_of(event, "groupId")?],
                )
                .await?;
            }
            "organization.deleted" => {
                // Its events end for their participants as a cancellation would, then go.
                let cancelled =
                    crate::events::catalog::cancel_all_of(&tx, tenant, event.occurred_at).await?;
                tracing::info!(tenant = %tenant, cancelled, "events of a deleted organization cancelled and archived");
            }
            _ => {}
        }
        tx.commit().await?;
        Ok(())
    }
}

impl Projections {
    /// A payment event: kept under the provider's id (`paymentId`, else the event's own id),
    /// so one that also came by the webhook takes effect once.
    async fn payment(&self, event: &Envelope, kind: PaymentKind) -> Result<(), HandlerError> {
        let tx = self.db.begin(Scope::system()).await?;
        if !inbox::claim(&tx, Schema::EventService, CONSUMER, event.id).await? {
            return Ok(());
        }
        let notice = Notice {
            id: event.data["paymentId"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| event.id.to_string()),
            kind,
            registration: uuid_of(event, "registrationId")?,
            amount_cents: event.data["amountCents"].as_i64(),
            currency: event.data["currency"].as_str().map(str::to_string),
            channel: Channel::Broker,
        };
        match payments::receive(&tx, &notice, event.occurred_at).await {
            Ok(receipt) => {
                tracing::info!(registration = %notice.registration, outcome = receipt.outcome.as_str(),
                    replayed = receipt.replayed, "payment applied");
            }
            // A payment for a registration nobody knows cannot be applied now or later.
            Err(crate::Error::Refused(r)) if r.code == domain::ErrorCode::NotFound => {
                tracing::warn!(registration = %notice.registration, kind = %event.event_type,
                    "payment for an unknown registration ignored");
            }
            Err(e) => return Err(e.into()),
        }
        tx.commit().await?;
        Ok(())
    }

    /// Keeps a person's name and email, for the tickets they take later.
    async fn person(&self, event: &Envelope) -> Result<(), HandlerError> {
        let tx = self.db.begin(Scope::system()).await?;
        if !inbox::claim(&tx, Schema::EventService, CONSUMER, event.id).await? {
            return Ok(());
        }
        let user = uuid_of(event, "userId")?;
        if event.data["deleted"].as_bool() == Some(true) {
            tx.execute(
                "DELETE FROM event_service.people WHERE user_id = $1",
                &[&user],
            )
            .await?;
        } else {
            let text = |field: &str| event.data[field].as_str().unwrap_or_default().to_string();
            tx.execute(
                "INSERT INTO event_service.people (user_id, email, first_name, last_name, updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email,
                    first_name = EXCLUDED.first_name, last_name = EXCLUDED.last_name, updated_at = EXCLUDED.updated_at
                 WHERE event_service.people.updated_at <= EXCLUDED.updated_at",
                &[
                    &user,
                    &event.data["email"].as_str(),
                    &text("firstName"),
                    &text("lastName"),
                    &event.occurred_at,
                ],
            )
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}
