//! One broker interface, two implementations: an in-process bus (the embedded default) and
//! RabbitMQ. Both route by topic, give each consumer its own queue, retry a failing handler
//! with backoff a bounded number of times, and then park the message in a dead-letter queue
//! from which it can be replayed. A node's in-process bus keeps its deliveries, their retry
//! schedule and its dead letters in PostgreSQL (`deliveries`), so they survive a restart.

pub mod deliveries;
mod memory;
mod owner;
mod rabbit;
mod yielding;

pub use memory::{MemoryBroker, QUEUE_BOUND};
pub use rabbit::RabbitBroker;
pub use yielding::{Busy, Foreground, Yielding, patience};

use async_trait::async_trait;
use domain::config::BrokerConfig;
use domain::envelope::Envelope;
use std::sync::Arc;
use std::time::Duration;

/// What a handler returns when it could not apply an event; the broker retries it.
pub type HandlerError = Box<dyn std::error::Error + Send + Sync>;

/// Applies the events a consumer subscribed to.
#[async_trait]
pub trait Handler: Send + Sync + 'static {
    /// Applies one event. Must be idempotent: the same event can arrive twice.
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError>;

    /// Applies events that queued up together, in order. `Ok` means every one of them is
    /// applied. On `Err` the broker hands each of them to `handle` in turn, with the retries,
    /// outage handling and dead-lettering of a single message; since handlers are idempotent,
    /// what the batch did apply is harmless to see again. The batch's try counts as no
    /// attempt of any message. Handlers that can apply several events for the price of one
    /// (one transaction, one commit) override it; by default each is handled in turn.
    async fn handle_batch(&self, events: &[Envelope]) -> Result<(), HandlerError> {
        for event in events {
            self.handle(event).await?;
        }
        Ok(())
    }
}

/// A named consumer, its topic patterns and its handler.
#[derive(Clone)]
pub struct Subscription {
    /// The consumer name; it names the queue and is the dead-letter key.
    pub consumer: String,
    /// AMQP topic patterns (`registration.*`, `#`).
    pub patterns: Vec<String>,
    /// What to do with each event.
    pub handler: Arc<dyn Handler>,
}

/// A publish that was not fully confirmed. The first `confirmed` events were accepted.
#[derive(Debug, thiserror::Error)]
#[error("{confirmed} events confirmed, then: {reason}")]
pub struct PublishError {
    /// How many leading events of the batch the broker confirmed.
    pub confirmed: usize,
    /// Why the rest was not.
    pub reason: String,
    /// The broker is healthy but a consumer's queue is full: publish again shortly, without
    /// counting it as a failure.
    pub behind: bool,
}

/// Failure of a broker operation other than publishing.
#[derive(Debug, thiserror::Error)]
pub enum BrokerError {
    /// The broker cannot be reached.
    #[error("broker unavailable: {0}")]
    Unavailable(String),
    /// The operation does not exist for this broker.
    #[error("{0}")]
    Unsupported(&'static str),
}

/// A message parked in a dead-letter queue.
#[derive(Clone, Debug)]
pub struct DeadLetter {
    /// The consumer that gave up on it.
    pub consumer: String,
    /// How many times it was tried.
    pub attempts: u32,
    /// The event, if the payload could be decoded.
    pub event: Option<Envelope>,
    /// The raw payload, for messages that could not be decoded.
    pub raw: String,
    /// Why the last attempt failed, where the broker keeps it (the in-process one does).
    pub reason: Option<String>,
}

/// Publishing and consuming domain events.
#[async_trait]
pub trait Broker: Send + Sync + 'static {
    /// Publishes a batch in order; returns once the broker has confirmed every event.
    async fn publish(&self, events: &[Envelope]) -> Result<(), PublishError>;

    /// Publishes a batch read from the outbox of `outbox`, which keeps the events after they
    /// are published: a broker that stores what it delivers may store where each event is
    /// rather than a copy of it.
    async fn publish_from(
        &self,
        events: &[Envelope],
        outbox: crate::db::Schema,
    ) -> Result<(), PublishError> {
        let _ = outbox;
        self.publish(events).await
    }

    /// Starts consuming; each consumer handles its events in order, those that queued up
    /// meanwhile as one batch (`Handler::handle_batch`).
    async fn subscribe(&self, subscription: Subscription) -> Result<(), BrokerError>;

    /// Whether the broker can take events now.
    async fn ready(&self) -> bool;

    /// Messages parked in the dead-letter queue of `consumer`, or of every consumer.
    async fn dead_letters(&self, consumer: Option<&str>) -> Result<Vec<DeadLetter>, BrokerError>;

    /// Sends every dead letter of `consumer` back to it; returns how many.
    async fn replay(&self, consumer: &str) -> Result<usize, BrokerError>;
}

/// A handler's way to say that a backing service is down rather than that the message is bad
/// (PostgreSQL failures are recognised without it).
#[derive(Debug, thiserror::Error)]
#[error("backing service unavailable: {0}")]
pub struct Outage(pub String);

/// Whether a handler failed because something it needs is down (PostgreSQL unreachable or
/// restarting, or an `Outage`), not because of the message. Brokers retry such failures
/// without using up the message's attempts, so an outage never dead-letters good messages.
pub fn is_outage(error: &HandlerError) -> bool {
    if error.downcast_ref::<Outage>().is_some() {
        return true;
    }
    let db =
        error
            .downcast_ref::<crate::DbError>()
            .or(match error.downcast_ref::<crate::Error>() {
                Some(crate::Error::Db(e)) => Some(e),
                _ => None,
            });
    match db {
        Some(crate::DbError::Pool(_)) => true,
        Some(crate::DbError::Query(e)) => postgres_outage(e),
        Some(_) => false,
        None => error
            .downcast_ref::<tokio_postgres::Error>()
            .is_some_and(postgres_outage),
    }
}

/// A lost connection, or a server shutting down, starting or refusing connections.
fn postgres_outage(error: &tokio_postgres::Error) -> bool {
    if error.is_closed()
        || std::error::Error::source(error).is_some_and(|s| s.is::<std::io::Error>())
    {
        return true;
    }
    error.code().is_some_and(|code| {
        let code = code.code();
        code.starts_with("08") || ["57P01", "57P02", "57P03", "53300"].contains(&code)
    })
}

/// The wait before redelivering a message whose handler met an outage.
pub fn outage_delay(base: Duration) -> Duration {
    base.max(Duration::from_secs(1))
}

/// How long to wait before delivery attempt `attempt + 1` (attempts count from 1).
pub fn retry_delay(base: Duration, attempt: u32) -> Duration {
    base.saturating_mul(1u32 << attempt.saturating_sub(1).min(10))
}

/// Whether the configuration names the in-process broker (`memory`, the default).
pub fn is_in_process(config: &BrokerConfig) -> bool {
    config.url == "memory" || config.url.is_empty()
}

/// The retry rules of the configuration.
pub fn policy_of(config: &BrokerConfig) -> RetryPolicy {
    RetryPolicy {
        max_attempts: config.max_attempts.max(1),
        base_delay: Duration::from_millis(config.retry_base_ms),
    }
}

/// Builds the broker of a node: RabbitMQ, or the in-process bus keeping its deliveries and
/// dead letters in `db` (migrated), so that a restart loses none.
pub async fn open(
    config: &BrokerConfig,
    db: &crate::Database,
) -> Result<Arc<dyn Broker>, BrokerError> {
    if is_in_process(config) {
        Ok(Arc::new(
            MemoryBroker::durable(policy_of(config), db.clone()).await?,
        ))
    } else {
        from_config(config).await
    }
}

/// Builds the broker named by the configuration: `memory` or an `amqp://` URL. Without a
/// database the in-process bus keeps everything in memory; nodes use `open`.
pub async fn from_config(config: &BrokerConfig) -> Result<Arc<dyn Broker>, BrokerError> {
    let policy = policy_of(config);
    if is_in_process(config) {
        Ok(Arc::new(MemoryBroker::new(policy)))
    } else if config.exchange.trim().is_empty() {
        // An empty name is RabbitMQ's default exchange, which every installation shares.
        Err(BrokerError::Unavailable(
            "broker.exchange is empty (Config::name_installation names it after the database)"
                .into(),
        ))
    } else if config.url.starts_with("amqp://") || config.url.starts_with("amqps://") {
        Ok(Arc::new(RabbitBroker::new(
            &config.url,
            &config.exchange,
            policy,
        )))
    } else {
        Err(BrokerError::Unavailable(format!(
            "broker url must be `memory` or amqp://…, got `{}`",
            domain::config::mask_url_password(&config.url)
        )))
    }
}

/// Retry rules shared by both brokers.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Deliveries before a message is dead-lettered.
    pub max_attempts: u32,
    /// Delay before the second delivery; doubles each time.
    pub base_delay: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_are_told_from_bad_messages() {
        let closed = || crate::DbError::Pool(deadpool_postgres::PoolError::Closed);
        assert!(is_outage(
            &(Box::new(Outage("clickhouse".into())) as HandlerError)
        ));
        assert!(is_outage(&(Box::new(closed()) as HandlerError)));
        assert!(is_outage(
            &(Box::new(crate::Error::Db(closed())) as HandlerError)
        ));
        assert!(!is_outage(&HandlerError::from("payload without userId")));
        assert!(!is_outage(
            &(Box::new(crate::DbError::Url("x".into())) as HandlerError)
        ));
        assert_eq!(
            outage_delay(Duration::from_millis(50)),
            Duration::from_secs(1)
        );
    }

    /// Fails with an outage `outages` times, then applies.
    struct Flaky {
        outages: std::sync::atomic::AtomicU32,
        applied: std::sync::atomic::AtomicU32,
    }

    #[async_trait]
    impl Handler for Flaky {
        async fn handle(&self, _: &Envelope) -> Result<(), HandlerError> {
            use std::sync::atomic::Ordering;
            if self.outages.load(Ordering::SeqCst) > 0 {
                self.outages.fetch_sub(1, Ordering::SeqCst);
                return Err(Box::new(Outage("database restarting".into())));
            }
            self.applied.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    #[tokio::test]
    async fn an_outage_longer_than_the_attempts_dead_letters_nothing() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let broker = MemoryBroker::new(RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(10),
        });
        let flaky = Arc::new(Flaky {
            outages: AtomicU32::new(3),
            applied: AtomicU32::new(0),
        });
        broker
            .subscribe(Subscription {
                consumer: "c".into(),
                patterns: vec!["#".into()],
                handler: flaky.clone(),
            })
            .await
            .unwrap();
        broker
            .publish(&[Envelope::new("x.y", None, None, serde_json::json!({}))])
            .await
            .unwrap();
        // Three outages of a second each, more than the two attempts a bad message gets.
        for _ in 0..100 {
            if flaky.applied.load(Ordering::SeqCst) == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(flaky.applied.load(Ordering::SeqCst), 1);
        assert!(broker.dead_letters(Some("c")).await.unwrap().is_empty());
    }

    #[test]
    fn retry_delay_doubles_and_is_bounded() {
        let base = Duration::from_millis(100);
        assert_eq!(retry_delay(base, 1), Duration::from_millis(100));
        assert_eq!(retry_delay(base, 3), Duration::from_millis(400));
        assert_eq!(retry_delay(base, 50), Duration::from_millis(100 * 1024));
    }
}
