//! What the analytics service records from the other services' events: event.created starts
//! tracking an event (a draft, its organization's members only), event.published and
//! event.unpublished make it public or a draft again; registration.created (with the source the
//! registration came from), registration.cancelled, checkin.completed and registration.confirmed
//! (a payment that confirmed a seat, recorded as payment.completed) become records, and so do
//! the waiting room's queue.joined, queue.admitted (with the wait) and queue.left. Each broker event is recorded once: PostgreSQL skips a record whose id it
//! has; ClickHouse cannot commit with the inbox, so the event is first marked as being
//! recorded, and a delivery that finds the mark (a crash came between the write and the inbox
//! entry) looks in ClickHouse before writing again.

use crate::record::Record;
use crate::store::clickhouse::ClickHouseError;
use crate::store::{Store, StoreError};
use crate::tracked;
use async_trait::async_trait;
use domain::analytics::TrackType;
use domain::contract::events::Registration;
use domain::contract::{DomainEvent, Kind};
use domain::envelope::Envelope;
use serde_json::{Map, Value};
use std::collections::HashSet;
use storage::broker::{HandlerError, Outage};
use storage::db::Schema;
use storage::inbox::{Projection, Received};
use storage::{Database, Scope, Tx};
use uuid::Uuid;

/// Records the services' events (consumer `analytics`).
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

/// The life-cycle change a domain event reports, if it reports one, and the event it is about.
pub fn lifecycle_of(event: &DomainEvent) -> Option<(uuid::Uuid, Lifecycle)> {
    use domain::events::lifecycle::EventStatus;
    match event {
        // Events are created as drafts; the payload's status is read in case that changes.
        DomainEvent::EventCreated(e) => Some((
            e.event_id,
            Lifecycle::Created {
                draft: e.status == EventStatus::Draft,
            },
        )),
        DomainEvent::EventPublished(e) => Some((e.event_id, Lifecycle::Changed { draft: false })),
        DomainEvent::EventUnpublished(e) => Some((e.event_id, Lifecycle::Changed { draft: true })),
        _ => None,
    }
}

/// The record a service event becomes.
pub fn record_of(envelope: &Envelope, event: &DomainEvent) -> Option<Record> {
    let (kind, place) = match event {
        DomainEvent::QueueJoined(p) => (TrackType::QueueJoined, p),
        DomainEvent::QueueAdmitted(p) => (TrackType::QueueAdmitted, p),
        DomainEvent::QueueLeft(p) => (TrackType::QueueLeft, p),
        _ => return registration_record(envelope, event),
    };
    let mut properties = Map::new();
    properties.insert("early".into(), place.early.into());
    if kind == TrackType::QueueAdmitted {
        // The wait, for the dashboard's average: from the place taken (or the on-sale time's
        // draw, for the pre-queue, whose places were taken before anyone was let in).
        let waited = (envelope.occurred_at - place.joined_at)
            .num_seconds()
            .max(0);
        properties.insert("waitedSeconds".into(), waited.into());
    }
    Some(Record::new(
        envelope.id.as_uuid(),
        envelope.tenant_id?,
        kind,
        Some(place.event_id),
        Some(place.user_id.as_uuid()),
        Value::Object(properties),
        envelope.occurred_at,
    ))
}

/// The record of an event about a registration.
fn registration_record(envelope: &Envelope, event: &DomainEvent) -> Option<Record> {
    let (kind, registration, amount) = match event {
        DomainEvent::RegistrationCreated(r) => (TrackType::RegistrationCompleted, r, None),
        DomainEvent::RegistrationCancelled(r) => (TrackType::RegistrationCancelled, r, None),
        DomainEvent::CheckinCompleted(c) => (TrackType::CheckinCompleted, &c.registration, None),
        // A payment counts when the event service says it confirmed a seat: a payment that
        // came too late and is being refunded confirms nothing.
        DomainEvent::RegistrationConfirmed(c) => {
            (TrackType::PaymentCompleted, &c.registration, c.amount_cents)
        }
        _ => return None,
    };
    let tenant = envelope.tenant_id?;
    Some(Record::new(
        envelope.id.as_uuid(),
        tenant,
        kind,
        Some(registration.event_id),
        Some(registration.user_id.as_uuid()),
        properties(registration, amount),
        envelope.occurred_at,
    ))
}

/// The details a record keeps of a registration (its source counted by `bySource`).
fn properties(r: &Registration, amount_cents: Option<i64>) -> Value {
    let mut properties = Map::new();
    properties.insert(
        "registrationId".into(),
        r.registration_id.to_string().into(),
    );
    properties.insert("ticketTypeId".into(), r.ticket_type_id.to_string().into());
    properties.insert(
        "status".into(),
        serde_json::to_value(r.status).unwrap_or_default(),
    );
    if let Some(source) = &r.source {
        properties.insert("source".into(), source.clone().into());
    }
    if let Some(amount) = amount_cents {
        properties.insert("amountCents".into(), amount.into());
    }
    properties.insert("currency".into(), r.currency.clone().into());
    Value::Object(properties)
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
    /// Marks `events` as being recorded, in a transaction of its own; returns those an earlier
    /// delivery had marked and not finished.
    async fn mark_recording(&self, events: &[Uuid]) -> Result<HashSet<Uuid>, HandlerError> {
        let tx = self.db.begin(Scope::system()).await?;
        let rows = tx
            .query(
                "INSERT INTO analytics_service.recording (event_id, started_at)
                 SELECT id, now() FROM UNNEST($1::uuid[]) AS marked (id) ORDER BY id
                 ON CONFLICT DO NOTHING
                 RETURNING event_id",
                &[&events],
            )
            .await?;
        tx.commit().await?;
        let fresh: HashSet<Uuid> = rows.iter().map(|r| r.get(0)).collect();
        Ok(events
            .iter()
            .filter(|id| !fresh.contains(id))
            .copied()
            .collect())
    }

    /// Writes the records of `events` (one each, in order) once, before their claims commit
    /// with `tx`: a failure leaves them unclaimed for the broker's retry.
    async fn record(
        &self,
        tx: &Tx,
        events: &[&Received<'_>],
        records: &[Record],
    ) -> Result<(), HandlerError> {
        let ch = match &self.store {
            Store::Postgres(_) => return self.store.insert(records).await.map_err(store_failure),
            Store::ClickHouse(ch) => ch,
        };
        let ids: Vec<Uuid> = events.iter().map(|r| r.envelope.id.as_uuid()).collect();
        let interrupted = self.mark_recording(&ids).await?;
        let mut fresh = Vec::with_capacity(records.len());
        for (id, record) in ids.iter().zip(records) {
            if interrupted.contains(id) && ch.contains(record).await.map_err(clickhouse_failure)? {
                continue;
            }
            fresh.push(record.clone());
        }
        if !fresh.is_empty() {
            ch.insert(&fresh).await.map_err(clickhouse_failure)?;
        }
        tx.execute(
            "DELETE FROM analytics_service.recording WHERE event_id = ANY($1)",
            &[&ids],
        )
        .await?;
        Ok(())
    }
}

#[async_trait]
impl Projection for Recorder {
    const NAME: &'static str = "analytics";
    const SCHEMA: Schema = Schema::AnalyticsService;
    const TAKES: &'static [Kind] = &[
        Kind::EventCreated,
        Kind::EventPublished,
        Kind::EventUnpublished,
        Kind::RegistrationCreated,
        Kind::RegistrationCancelled,
        Kind::CheckinCompleted,
        Kind::RegistrationConfirmed,
        Kind::QueueJoined,
        Kind::QueueAdmitted,
        Kind::QueueLeft,
    ];
    type Done = ();

    async fn apply(&self, tx: &Tx, received: &Received<'_>) -> Result<(), HandlerError> {
        let envelope = received.envelope;
        if let Some((id, change)) = lifecycle_of(&received.event) {
            let tenant = envelope
                .tenant_id
                .ok_or_else(|| format!("{} without tenant", envelope.event_type))?;
            match change {
                Lifecycle::Created { draft } => {
                    tracked::created(tx, id, tenant, draft, envelope.occurred_at).await?
                }
                Lifecycle::Changed { draft } => {
                    tracked::status_changed(tx, id, tenant, draft, envelope.occurred_at).await?
                }
            }
            return Ok(());
        }
        let Some(record) = record_of(envelope, &received.event) else {
            tracing::warn!(kind = %envelope.event_type, id = %envelope.id, "event without a tenant not recorded");
            return Ok(());
        };
        self.record(tx, &[received], std::slice::from_ref(&record))
            .await
    }

    /// The records `apply_all` writes at once: `record_of` gives one for each of them.
    fn in_set(&self, received: &Received<'_>) -> bool {
        received.envelope.tenant_id.is_some() && lifecycle_of(&received.event).is_none()
    }

    /// A run of events that are all records (what a sale publishes) is written at once: one
    /// insert, and for ClickHouse one mark and one unmark, for the whole run.
    async fn apply_all(
        &self,
        tx: &Tx,
        events: &[&Received<'_>],
    ) -> Option<Result<Vec<()>, HandlerError>> {
        let records: Vec<Record> = events
            .iter()
            .map(|r| match lifecycle_of(&r.event) {
                Some(_) => None,
                None => record_of(r.envelope, &r.event),
            })
            .collect::<Option<_>>()?;
        let recorded = self.record(tx, events, &records).await;
        Some(recorded.map(|()| vec![(); events.len()]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::contract::samples;
    use domain::ids::TenantId;

    fn received(event: DomainEvent) -> (Envelope, DomainEvent) {
        (Envelope::of(&event, Some(TenantId::new()), None), event)
    }

    #[test]
    fn a_registration_keeps_its_source() {
        let DomainEvent::RegistrationCreated(mut r) = samples::of(Kind::RegistrationCreated) else {
            unreachable!()
        };
        r.source = Some("vk".into());
        let (envelope, event) = received(DomainEvent::RegistrationCreated(r.clone()));
        let record = record_of(&envelope, &event).unwrap();
        assert_eq!(record.event_type, TrackType::RegistrationCompleted);
        assert_eq!(record.source(), "vk");
        assert_eq!(record.event_id, Some(r.event_id));
        r.source = None;
        let (envelope, event) = received(DomainEvent::RegistrationCreated(r));
        let record = record_of(&envelope, &event).unwrap();
        assert_eq!(record.source(), "direct");
        assert!(record.properties.get("source").is_none());
    }

    #[test]
    fn a_confirmation_is_a_payment_with_its_amount() {
        let (envelope, event) = received(samples::of(Kind::RegistrationConfirmed));
        let record = record_of(&envelope, &event).unwrap();
        assert_eq!(record.event_type, TrackType::PaymentCompleted);
        assert_eq!(record.properties["amountCents"], 150_000);
        assert_eq!(record.properties["currency"], "RUB");
    }

    #[test]
    fn event_life_cycle_events_say_whether_it_is_a_draft() {
        let of = |kind| lifecycle_of(&samples::of(kind)).map(|(_, l)| l);
        assert_eq!(
            of(Kind::EventCreated),
            Some(Lifecycle::Created { draft: true })
        );
        assert_eq!(
            of(Kind::EventPublished),
            Some(Lifecycle::Changed { draft: false })
        );
        assert_eq!(
            of(Kind::EventUnpublished),
            Some(Lifecycle::Changed { draft: true })
        );
        assert_eq!(of(Kind::EventCancelled), None);
        assert_eq!(of(Kind::RegistrationCreated), None);
    }
}
