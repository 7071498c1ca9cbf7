//! What the event service takes from other services' events: the groups behind private
//! events (group.created, group.member.added, group.deleted), the archiving of a deleted
//! organization's events (organization.deleted), and payments (payment.completed confirms,
//! payment.failed and payment.refunded cancel). Each event is applied once.

use crate::broker::{Handler, HandlerError};
use crate::db::{Database, Schema, Scope};
use crate::events::registrations::{self, Payment};
use crate::inbox;
use async_trait::async_trait;
use domain::envelope::Envelope;
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
        if let Some(payment) = match event.event_type.as_str() {
            "payment.completed" => Some(Payment::Completed),
            "payment.failed" => Some(Payment::Failed),
            "payment.refunded" => Some(Payment::Refunded),
            _ => None,
        } {
            // A payment names a registration; which tenant it belongs to is the registration's.
            let tx = self.db.begin(Scope::system()).await?;
            if !inbox::claim(&tx, Schema::EventService, CONSUMER, event.id).await? {
                return Ok(());
            }
            let registration = uuid_of(event, "registrationId")?;
            if registrations::apply_payment(&tx, registration, payment, event.occurred_at)
                .await?
                .is_none()
            {
                tracing::warn!(%registration, kind = %event.event_type, "payment event changed nothing");
            }
            tx.commit().await?;
            return Ok(());
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
                let archived = tx
                    .execute(
                        "UPDATE event_service.events SET deleted_at = $1, updated_at = $1 WHERE deleted_at IS NULL",
                        &[&event.occurred_at],
                    )
                    .await?;
                tracing::info!(tenant = %tenant, archived, "events of a deleted organization archived");
            }
            _ => {}
        }
        tx.commit().await?;
        Ok(())
    }
}
