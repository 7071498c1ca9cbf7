//! What the analytics service records from the other services' events: event.published starts
//! tracking an event; registration.created, registration.cancelled, checkin.completed and
//! payment.completed become records. Each broker event is recorded once: PostgreSQL skips a
//! record whose id it has; ClickHouse cannot commit with the inbox, so the event is first marked
//! as being recorded, and a delivery that finds the mark (a crash came between the write and
//! the inbox entry) looks in ClickHouse before writing again.

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
    "event.published",
    "registration.created",
    "registration.cancelled",
    "checkin.completed",
    "payment.completed",
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

/// The record a service event becomes.
pub fn record_of(event: &Envelope) -> Option<Record> {
    let kind = match event.event_type.as_str() {
        "registration.created" => TrackType::RegistrationCompleted,
        "registration.cancelled" => TrackType::RegistrationCancelled,
        "checkin.completed" => TrackType::CheckinCompleted,
        "payment.completed" => TrackType::PaymentCompleted,
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
        if event.event_type == "event.published" {
            let (Some(id), Some(tenant)) = (uuid_at(&event.data, "eventId"), event.tenant_id)
            else {
                return Err("event.published without eventId or tenant".into());
            };
            tracked::start(&tx, id, tenant, event.occurred_at).await?;
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
