//! The consumer side of exactly-once, written once for every service. A service declares a
//! [`Projection`] (its name, the kinds it takes, what an event does to its tables); [`Inbox`]
//! decodes each delivery through the domain contract, claims the event id inside the
//! transaction that applies it and commits both together. A redelivered event finds its id
//! taken and changes nothing.

use crate::broker::{Handler, HandlerError, Subscription};
use crate::db::{Database, DbError, Schema, Scope, Tx};
use async_trait::async_trait;
use domain::contract::{ContractError, DomainEvent, Kind};
use domain::envelope::Envelope;
use domain::ids::EventId;
use std::sync::Arc;

/// A delivered event: its envelope (id, time, tenant, actor) and its decoded payload.
pub struct Received<'a> {
    /// The envelope as it came off the broker.
    pub envelope: &'a Envelope,
    /// Its payload, read through the contract.
    pub event: DomainEvent,
}

/// What one service does with the events it takes.
#[async_trait]
pub trait Projection: Send + Sync + 'static {
    /// The consumer's name: it names the queue, the dead letters and the inbox rows.
    const NAME: &'static str;
    /// The schema whose `processed_events` keeps this consumer's claims.
    const SCHEMA: Schema;
    /// The kinds of event it subscribes to.
    const TAKES: &'static [Kind];
    /// What `apply` hands on to `committed`.
    type Done: Send;

    /// The scope of the transaction an event is applied in.
    fn scope(&self, _event: &Received<'_>) -> Result<Scope, HandlerError> {
        Ok(Scope::system())
    }

    /// Applies one claimed event inside `tx`; an error rolls the claim back and the broker
    /// delivers the event again.
    async fn apply(&self, tx: &Tx, event: &Received<'_>) -> Result<Self::Done, HandlerError>;

    /// Runs once the event and its claim have committed.
    fn committed(&self, _event: &Received<'_>, _done: Self::Done) {}
}

/// A projection behind the broker: decode, claim, apply, commit.
pub struct Inbox<P> {
    db: Database,
    projection: P,
}

impl<P: Projection> Inbox<P> {
    /// `projection` as a broker handler applying through `db` (tests call it directly).
    pub fn new(db: Database, projection: P) -> Inbox<P> {
        Inbox { db, projection }
    }

    /// The broker subscription of `projection`, applying through `db`.
    pub fn subscription(db: Database, projection: P) -> Subscription {
        Subscription {
            consumer: P::NAME.to_string(),
            patterns: P::TAKES.iter().map(|k| k.as_str().to_string()).collect(),
            handler: Arc::new(Inbox { db, projection }),
        }
    }

    /// The payload of `envelope` as this consumer reads it; `None` for a kind it does not
    /// take (a topic pattern can bring more than it asked for).
    pub fn decode(envelope: &Envelope) -> Result<Option<DomainEvent>, ContractError> {
        match envelope.decode() {
            Ok(event) if P::TAKES.contains(&event.kind()) => Ok(Some(event)),
            Ok(_) | Err(ContractError::Unknown(_)) => Ok(None),
            Err(malformed) => Err(malformed),
        }
    }
}

#[async_trait]
impl<P: Projection> Handler for Inbox<P> {
    async fn handle(&self, envelope: &Envelope) -> Result<(), HandlerError> {
        // A payload that does not read is a bad message: retried, then dead-lettered.
        let Some(event) = Self::decode(envelope)? else {
            return Ok(());
        };
        let received = Received { envelope, event };
        let tx = self.db.begin(self.projection.scope(&received)?).await?;
        // The claim's row stays locked until commit, so a concurrent second delivery of the
        // same event waits here and then finds it taken.
        if !claim(&tx, P::SCHEMA, P::NAME, envelope.id).await? {
            return Ok(());
        }
        let done = self.projection.apply(&tx, &received).await?;
        tx.commit().await?;
        self.projection.committed(&received, done);
        Ok(())
    }
}

/// Claims `event` for `consumer` within `tx`. Returns false when it was already processed,
/// in which case the caller must skip its work (and may simply drop the transaction).
pub async fn claim(
    tx: &Tx,
    schema: Schema,
    consumer: &str,
    event: EventId,
) -> Result<bool, DbError> {
    let inserted = tx
        .execute(
            &format!(
                "INSERT INTO {}.processed_events (consumer, event_id) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING",
                schema.name()
            ),
            &[&consumer, &event.as_uuid()],
        )
        .await?;
    Ok(inserted == 1)
}
