//! What the analytics service records from the other services' events: event.created starts
//! tracking an event (a draft, its organization's members only), event.published and
//! event.unpublished make it public or a draft again; registration.created (with the source the
//! registration came from), registration.cancelled, checkin.completed and registration.confirmed
//! (a payment that confirmed a seat, recorded as payment.completed) become records. Each broker event is recorded once: PostgreSQL skips a record whose id it
//! has; ClickHouse cannot commit with the inbox, so the event is first marked as being
//! recorded, and a delivery that finds the mark (a crash came between the write and the inbox
//! entry) looks in ClickHouse before writing again.

use crate::record::Record;
use crate::store::clickhouse::ClickHouseError;
use crate::store::{Store, StoreError};
use crate::tracked;
use async_trait::async_trait;
use domain::analytics::TrackType;
use domain::envelope::Envelope;
use serde_json::{Map, Value};
use storage::broker::{Handler, HandlerError, Outage};
use storage::db::Schema;
use storage::{Database, Scope, inbox};
use uuid::Uuid;

/// The consumer name (queue `bilet.analytics`).
pub const CONSUMER: &str = "analytics";

/// The routing keys it listens to.
pub const PATTERNS: &[&str] = &[
    "event.created",
    "event.published",
    "event.unpublished",
    "registration.created",
    "registration.cancelled",
    "checkin.completed",
    "registration.confirmed",
];

/// Records the services' events.
pub struct Recorder {
    db: Database,
    store: Store,
}

impl Recorder {
    /// A consumer writing to `store`, deduplicating through `db`.
    pub fn new(db: Database, store: Store) -> Recorder {
        Recorder { db, store }
    }
}

fn uuid_at(data: &Value, field: &str) -> Option<Uuid> {
    data[field].as_str().and_then(|s| s.parse().ok())
}

/// What an event-service event says about an event's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// It was created (a draft, unless the payload says otherwise).
    Created {
        /// Whether it is a draft.
        draft: bool,
    },
    /// It was published (`draft` false) or unpublished (`draft` true).
    Changed {
        /// Whether it is a draft now.
        draft: bool,
    },
}

/// The life-cycle change a broker event reports, if it reports one.
pub fn lifecycle_of(event: &Envelope) -> Option<Lifecycle> {
    match event.event_type.as_str() {
        // Events are created as drafts; the payload's status is read in case that changes.
        "event.created" => Some(Lifecycle::Created {
            draft: event.data["status"]
                .as_str()
                .is_none_or(|s| s.eq_ignore_ascii_case("DRAFT")),
        }),
        "event.published" => Some(Lifecycle::Changed { draft: false }),
        "event.unpublished" => Some(Lifecycle::Changed { draft: true }),
        _ => None,
    }
}

/// The record a service event becomes.
pub fn record_of(event: &Envelope) -> Option<Record> {
    let kind = match event.event_type.as_str() {
        "registration.created" => TrackType::RegistrationCompleted,
        "registration.cancelled" => TrackType::RegistrationCancelled,
        "checkin.completed" => TrackType::CheckinCompleted,
        // A payment counts when the event service says it confirmed a seat: a payment that
        // came too late and is being refunded confirms nothing.
        "registration.confirmed" => TrackType::PaymentCompleted,
        _ => return None,
    };
    let tenant = event.tenant_id?;
    let data = &event.data;
    let mut properties = Map::new();
    for field in [
        "registrationId",
        "ticketTypeId",
        "status",
        "source",
        "amountCents",
        "currency",
    ] {
        if let Some(v) = data.get(field).filter(|v| !v.is_null()) {
            properties.insert(field.into(), v.clone());
        }
    }
    Some(Record::new(
        event.id.as_uuid(),
        tenant,
        kind,
        uuid_at(data, "eventId"),
        uuid_at(data, "userId").or(event.actor_id.map(|a| a.as_uuid())),
        Value::Object(properties),
        event.occurred_at,
    ))
}

/// A store failure as the broker should see it: PostgreSQL's own error (outages are recognised
/// from it), ClickHouse's through `clickhouse_failure`.
fn store_failure(error: StoreError) -> HandlerError {
    match error {
        StoreError::Postgres(e) => Box::new(e),
        StoreError::ClickHouse(e) => clickhouse_failure(e),
    }
}

/// ClickHouse not answering is an outage (retried without limit); an error answer is not.
fn clickhouse_failure(error: ClickHouseError) -> HandlerError {
    match error {
        ClickHouseError::Request(_) => Box::new(Outage(error.to_string())),
        other => other.to_string().into(),
    }
}

impl Recorder {
    /// Marks `event` as being recorded, in a transaction of its own; true when an earlier
    /// delivery had marked it and not finished.
    async fn mark_recording(&self, event: &Envelope) -> Result<bool, HandlerError> {
        let tx = self.db.begin(Scope::system()).await?;
        let fresh = tx
            .execute(
                "INSERT INTO analytics_service.recording (event_id, started_at) VALUES ($1, now())
                 ON CONFLICT DO NOTHING",
                &[&event.id.as_uuid()],
            )
            .await?;
        tx.commit().await?;
        Ok(fresh == 0)
    }
}

#[async_trait]
impl Handler for Recorder {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        let tx = self.db.begin(Scope::system()).await?;
        if !inbox::claim(&tx, Schema::AnalyticsService, CONSUMER, event.id).await? {
            return Ok(());
        }
        if let Some(change) = lifecycle_of(event) {
            let (Some(id), Some(tenant)) = (uuid_at(&event.data, "eventId"), event.tenant_id)
            else {
                return Err(format!("{} without eventId or tenant", event.event_type).into());
            };
            match change {
                Lifecycle::Created { draft } => {
                    tracked::created(&tx, id, tenant, draft, event.occurred_at).await?
                }
                Lifecycle::Changed { draft } => {
                    tracked::status_changed(&tx, id, tenant, draft, event.occurred_at).await?
                }
            }
            tx.commit().await?;
            return Ok(());
        }
        let Some(record) = record_of(event) else {
            tracing::warn!(kind = %event.event_type, id = %event.id, "event without a tenant not recorded");
            tx.commit().await?;
            return Ok(());
        };
        // Written before the inbox entry commits: a failure leaves the event unclaimed for the
        // broker's retry.
        match &self.store {
            Store::Postgres(_) => {
                self.store
                    .insert(std::slice::from_ref(&record))
                    .await
                    .map_err(store_failure)?;
            }
            Store::ClickHouse(ch) => {
                let interrupted = self.mark_recording(event).await?;
                if !(interrupted && ch.contains(&record).await.map_err(clickhouse_failure)?) {
                    ch.insert(std::slice::from_ref(&record))
                        .await
                        .map_err(clickhouse_failure)?;
                }
                tx.execute(
                    "DELETE FROM analytics_service.recording WHERE event_id = $1",
                    &[&event.id.as_uuid()],
                )
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::ids::{EventId, TenantId};
    use serde_json::json;

    fn envelope(kind: &str, data: Value) -> Envelope {
        Envelope {
            id: EventId::new(),
            event_type: kind.into(),
            occurred_at: chrono::Utc::now(),
            tenant_id: Some(TenantId::new()),
            actor_id: None,
            data,
        }
    }

    #[test]
    fn a_registration_keeps_its_source() {
        let event = Uuid::now_v7();
        let from_vk = envelope(
            "registration.created",
            json!({"eventId": event, "status": "CONFIRMED", "source": "vk"}),
        );
        let record = record_of(&from_vk).unwrap();
        assert_eq!(record.event_type, TrackType::RegistrationCompleted);
        assert_eq!(record.source(), "vk");
        for data in [
            json!({"eventId": event, "status": "CONFIRMED"}),
            json!({"eventId": event, "status": "CONFIRMED", "source": null}),
        ] {
            let record = record_of(&envelope("registration.created", data)).unwrap();
            assert_eq!(record.source(), "direct");
            assert!(record.properties.get("source").is_none());
        }
    }

    #[test]
    fn event_life_cycle_events_say_whether_it_is_a_draft() {
        let of = |kind: &str, data: Value| lifecycle_of(&envelope(kind, data));
        assert_eq!(
            of("event.created", json!({"status": "DRAFT"})),
            Some(Lifecycle::Created { draft: true })
        );
        assert_eq!(
            of("event.created", json!({})),
            Some(Lifecycle::Created { draft: true })
        );
        assert_eq!(
            of("event.published", json!({"status": "PUBLISHED"})),
            Some(Lifecycle::Changed { draft: false })
        );
        assert_eq!(
            of("event.unpublished", json!({"status": "DRAFT"})),
            Some(Lifecycle::Changed { draft: true })
        );
        assert_eq!(of("event.cancelled", json!({})), None);
        assert_eq!(of("registration.created", json!({})), None);
    }
}
