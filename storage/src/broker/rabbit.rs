//! RabbitMQ through lapin. Topology per consumer `c` of exchange `x` (`broker.exchange`,
//! `bilet.<database>.events` by default):
//! - `x.c` (durable), bound to the topic exchange with the consumer's patterns, with the
//!   dead-letter exchange `x.dlx` (routing key `c`) for rejected messages;
//! - `x.c.retry` (durable) with no consumer: a failed message waits there for its
//!   per-message TTL, then is dead-lettered back into `x.c`;
//! - `x.c.dlq` (durable), bound to `x.dlx` with key `c`: messages that failed
//!   `max_attempts` times, kept until `bilet dlq replay c`.
//!
//! Publishing uses publisher confirms; every connection is re-established after a broker
//! restart, so an outage delays delivery but loses nothing that was confirmed.

use super::{
    Broker, BrokerError, DeadLetter, PublishError, RetryPolicy, Subscription, retry_delay,
};
use async_trait::async_trait;
use domain::envelope::Envelope;
use futures_util::{FutureExt, StreamExt};
use lapin::message::Delivery;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions,
    BasicQosOptions, ConfirmSelectOptions, ExchangeDeclareOptions, QueueBindOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Mutex;

const ATTEMPT_HEADER: &str = "x-bilet-attempt";
/// Deliveries a consumer holds unacknowledged at once, and so the most it handles as one
/// batch: at 16, an on-sale's backlog would be applied sixteen events per commit at best; at
/// 512, an inbox's longest run (SET_RUN).
const PREFETCH: u16 = 512;

/// The RabbitMQ broker.
#[derive(Clone)]
pub struct RabbitBroker {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    exchange: String,
    policy: RetryPolicy,
    publisher: Mutex<Option<(Connection, Channel)>>,
}

impl RabbitBroker {
    /// A broker at `url`; it connects on first use and after every failure.
    pub fn new(url: &str, exchange: &str, policy: RetryPolicy) -> RabbitBroker {
        RabbitBroker {
            inner: Arc::new(Inner {
                url: url.to_string(),
                exchange: exchange.to_string(),
                policy,
                publisher: Mutex::new(None),
            }),
        }
    }

    fn dlx(&self) -> String {
        format!("{}.dlx", self.inner.exchange)
    }

    /// A consumer's queue, named under the exchange so installations sharing a RabbitMQ do not
    /// share queues.
    fn queue_name(&self, consumer: &str) -> String {
        format!("{}.{consumer}", self.inner.exchange)
    }

    fn retry_queue_name(&self, consumer: &str) -> String {
        format!("{}.{consumer}.retry", self.inner.exchange)
    }

    fn dlq_name(&self, consumer: &str) -> String {
        format!("{}.{consumer}.dlq", self.inner.exchange)
    }

    async fn open(&self) -> lapin::Result<(Connection, Channel)> {
        let connection = tokio::time::timeout(
            Duration::from_secs(5),
            Connection::connect(&self.inner.url, ConnectionProperties::default()),
        )
        .await
        .map_err(|_| lapin::Error::from(std::io::Error::from(std::io::ErrorKind::TimedOut)))??;
        let channel = connection.create_channel().await?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await?;
        let durable = ExchangeDeclareOptions {
            durable: true,
            ..Default::default()
        };
        channel
            .exchange_declare(
                s(&self.inner.exchange),
                ExchangeKind::Topic,
                durable,
                FieldTable::default(),
            )
            .await?;
        channel
            .exchange_declare(
                s(&self.dlx()),
                ExchangeKind::Direct,
                durable,
                FieldTable::default(),
            )
            .await?;
        Ok((connection, channel))
    }

    /// The publishing channel, reconnecting if the previous one died.
    async fn publisher(&self) -> lapin::Result<Channel> {
        let mut guard = self.inner.publisher.lock().await;
        if let Some((connection, channel)) = guard.as_ref()
            && connection.status().connected()
            && channel.status().connected()
        {
            return Ok(channel.clone());
        }
        *guard = None;
        let (connection, channel) = self.open().await?;
        *guard = Some((connection, channel.clone()));
        Ok(channel)
    }

    async fn forget_publisher(&self) {
        *self.inner.publisher.lock().await = None;
    }

    async fn declare_consumer(&self, channel: &Channel, sub: &Subscription) -> lapin::Result<()> {
        let consumer = &sub.consumer;
        let main = self.queue_name(consumer);
        let durable = QueueDeclareOptions {
            durable: true,
            ..Default::default()
        };
        let mut main_args = FieldTable::default();
        main_args.insert(
            s("x-dead-letter-exchange"),
            AMQPValue::LongString(self.dlx().into()),
        );
        main_args.insert(
            s("x-dead-letter-routing-key"),
            AMQPValue::LongString(consumer.as_str().into()),
        );
        channel.queue_declare(s(&main), durable, main_args).await?;
        for pattern in &sub.patterns {
            channel
                .queue_bind(
                    s(&main),
                    s(&self.inner.exchange),
                    s(pattern),
                    QueueBindOptions::default(),
                    FieldTable::default(),
                )
                .await?;
        }
        let mut retry_args = FieldTable::default();
        retry_args.insert(
            s("x-dead-letter-exchange"),
            AMQPValue::LongString("".into()),
        );
        retry_args.insert(
            s("x-dead-letter-routing-key"),
            AMQPValue::LongString(main.as_str().into()),
        );
        channel
            .queue_declare(s(&self.retry_queue_name(consumer)), durable, retry_args)
            .await?;
        channel
            .queue_declare(s(&self.dlq_name(consumer)), durable, FieldTable::default())
            .await?;
        channel
            .queue_bind(
                s(&self.dlq_name(consumer)),
                s(&self.dlx()),
                s(consumer),
                QueueBindOptions::default(),
                FieldTable::default(),
            )
            .await?;
        Ok(())
    }

    /// Parks the message in the consumer's retry queue for `delay`, to come back as attempt
    /// `attempt`; acknowledged only once the retry queue has it.
    async fn retry_later(
        &self,
        channel: &Channel,
        sub: &Subscription,
        delivery: &Delivery,
        event: &Envelope,
        attempt: u32,
        delay: std::time::Duration,
    ) -> lapin::Result<()> {
        let props = message_properties(event, attempt)
            .with_expiration(delay.as_millis().to_string().into());
        let confirm = channel
            .basic_publish(
                s(""),
                s(&self.retry_queue_name(&sub.consumer)),
                BasicPublishOptions::default(),
                &delivery.data,
                props,
            )
            .await?
            .await?;
        if confirm.is_ack() {
            delivery.ack(BasicAckOptions::default()).await?;
        } else {
            delivery
                .nack(BasicNackOptions {
                    requeue: true,
                    ..Default::default()
                })
                .await?;
        }
        Ok(())
    }

    /// One consuming session; returns when the connection is lost.
    async fn consume(&self, sub: &Subscription) -> lapin::Result<()> {
        let (_connection, channel) = self.open().await?;
        self.declare_consumer(&channel, sub).await?;
        channel
            .basic_qos(PREFETCH, BasicQosOptions::default())
            .await?;
        let mut deliveries = channel
            .basic_consume(
                s(&self.queue_name(&sub.consumer)),
                s(&format!("{}-{}", sub.consumer, uuid::Uuid::now_v7())),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await?;
        tracing::info!(consumer = %sub.consumer, "consuming from RabbitMQ");
        while let Some(first) = deliveries.next().await {
            let mut ready = vec![first?];
            let ended = take_ready(&mut deliveries, &mut ready)?;
            self.handle_ready(&channel, sub, ready).await?;
            if ended {
                break;
            }
        }
        Ok(())
    }

    /// Handles deliveries in the order they came: the undecodable ones dead-lettered, first
    /// attempts in batches, a retried message alone (its attempts are counted one by one).
    async fn handle_ready(
        &self,
        channel: &Channel,
        sub: &Subscription,
        ready: Vec<Delivery>,
    ) -> lapin::Result<()> {
        let mut batch = Batch::default();
        for delivery in ready {
            let Some(event) = decode(sub, &delivery).await? else {
                continue;
            };
            let attempt = attempt_of(&delivery.properties);
            if attempt > 1 {
                self.handle_batch(channel, sub, std::mem::take(&mut batch))
                    .await?;
                self.handle_one(channel, sub, &delivery, &event, attempt)
                    .await?;
            } else {
                batch.deliveries.push(delivery);
                batch.events.push(event);
            }
        }
        self.handle_batch(channel, sub, batch).await
    }

    /// Hands first attempts to the handler at once: acknowledged together once all are
    /// applied; if that fails, each message goes its own way.
    async fn handle_batch(
        &self,
        channel: &Channel,
        sub: &Subscription,
        batch: Batch,
    ) -> lapin::Result<()> {
        if batch.events.len() >= 2 {
            match sub.handler.handle_batch(&batch.events).await {
                Ok(()) => {
                    for delivery in &batch.deliveries {
                        delivery.ack(BasicAckOptions::default()).await?;
                    }
                    return Ok(());
                }
                Err(error) => {
                    tracing::debug!(consumer = %sub.consumer, count = batch.events.len(), %error, "batch failed; handling its messages one by one");
                }
            }
        }
        // Alone, a message is tried once per attempt, exactly as before batching.
        for (delivery, event) in batch.deliveries.iter().zip(&batch.events) {
            self.handle_one(channel, sub, delivery, event, 1).await?;
        }
        Ok(())
    }

    /// One message: acknowledged once handled, or parked in the retry queue with backoff (an
    /// outage counting no attempt), or dead-lettered after its last attempt.
    async fn handle_one(
        &self,
        channel: &Channel,
        sub: &Subscription,
        delivery: &Delivery,
        event: &Envelope,
        attempt: u32,
    ) -> lapin::Result<()> {
        match sub.handler.handle(event).await {
            Ok(()) => {
                delivery.ack(BasicAckOptions::default()).await?;
            }
            Err(error) if super::is_outage(&error) => {
                let delay = super::outage_delay(self.inner.policy.base_delay);
                tracing::warn!(consumer = %sub.consumer, event_id = %event.id, %error, retry_in_ms = delay.as_millis() as u64, "backing service down; will retry without counting an attempt");
                self.retry_later(channel, sub, delivery, event, attempt, delay)
                    .await?;
            }
            Err(error) if attempt >= self.inner.policy.max_attempts => {
                tracing::error!(consumer = %sub.consumer, event_id = %event.id, attempts = attempt, %error, "handler gave up; message dead-lettered");
                // The DLX of the main queue moves it to the consumer's dead-letter queue.
                reject(delivery).await?;
            }
            Err(error) => {
                let delay = retry_delay(self.inner.policy.base_delay, attempt);
                tracing::warn!(consumer = %sub.consumer, event_id = %event.id, attempt, %error, retry_in_ms = delay.as_millis() as u64, "handler failed; will retry");
                self.retry_later(channel, sub, delivery, event, attempt + 1, delay)
                    .await?;
            }
        }
        Ok(())
    }
}

/// First attempts handed to the handler together, and their deliveries to settle.
#[derive(Default)]
struct Batch {
    deliveries: Vec<Delivery>,
    events: Vec<Envelope>,
}

/// Adds to `ready` the deliveries that have already arrived, without waiting for more, up to
/// PREFETCH (all the broker sends before an acknowledgement). True if the consumer ended.
fn take_ready(deliveries: &mut lapin::Consumer, ready: &mut Vec<Delivery>) -> lapin::Result<bool> {
    while ready.len() < usize::from(PREFETCH) {
        match deliveries.next().now_or_never() {
            Some(Some(delivery)) => ready.push(delivery?),
            Some(None) => return Ok(true),
            None => break,
        }
    }
    Ok(false)
}

/// The event of a delivery; `None` for a payload that is no envelope, which is dead-lettered
/// at once (no retry can make it readable).
async fn decode(sub: &Subscription, delivery: &Delivery) -> lapin::Result<Option<Envelope>> {
    match serde_json::from_slice(&delivery.data) {
        Ok(event) => Ok(Some(event)),
        Err(error) => {
            tracing::error!(consumer = %sub.consumer, %error, "undecodable message dead-lettered");
            reject(delivery).await?;
            Ok(None)
        }
    }
}

/// Rejects a delivery without requeueing it: the main queue's DLX moves it to the consumer's
/// dead-letter queue.
async fn reject(delivery: &Delivery) -> lapin::Result<()> {
    delivery
        .nack(BasicNackOptions {
            requeue: false,
            ..Default::default()
        })
        .await?;
    Ok(())
}

#[async_trait]
impl Broker for RabbitBroker {
    async fn publish(&self, events: &[Envelope]) -> Result<(), PublishError> {
        let fail = |confirmed: usize, reason: String| PublishError {
            confirmed,
            reason,
            behind: false,
        };
        let channel = self.publisher().await.map_err(|e| fail(0, e.to_string()))?;
        let mut confirms = Vec::with_capacity(events.len());
        for event in events {
            let payload = serde_json::to_vec(event).map_err(|e| fail(0, e.to_string()))?;
            match channel
                .basic_publish(
                    s(&self.inner.exchange),
                    s(&event.event_type),
                    BasicPublishOptions::default(),
                    &payload,
                    message_properties(event, 1),
                )
                .await
            {
                Ok(confirm) => confirms.push(confirm),
                Err(e) => {
                    // Publishing is pipelined: what was sent before the error may still be
                    // confirmed, so count those before giving up.
                    let confirmed = count_acks(confirms).await;
                    self.forget_publisher().await;
                    return Err(fail(confirmed, e.to_string()));
                }
            }
        }
        let total = confirms.len();
        let confirmed = count_acks(confirms).await;
        if confirmed == total {
            Ok(())
        } else {
            self.forget_publisher().await;
            Err(fail(
                confirmed,
                "broker did not confirm every message".into(),
            ))
        }
    }

    async fn subscribe(&self, subscription: Subscription) -> Result<(), BrokerError> {
        // Declare once up front so the queue exists before the first publish. A broker that
        // is down at start-up is not fatal: the consuming loop declares and retries until it
        // is back, and readiness reports it meanwhile.
        match self.open().await {
            Ok((connection, channel)) => {
                if let Err(e) = self.declare_consumer(&channel, &subscription).await {
                    tracing::warn!(consumer = %subscription.consumer, error = %e, "queue declaration failed; will retry");
                }
                let _ = connection.close(200, "declared".into()).await;
            }
            Err(e) => {
                tracing::warn!(consumer = %subscription.consumer, error = %e, "RabbitMQ unreachable; consumer will retry")
            }
        }
        let broker = self.clone();
        tokio::spawn(async move {
            let mut failures = 0u32;
            loop {
                match broker.consume(&subscription).await {
                    Ok(()) => failures = 0,
                    Err(error) => {
                        failures = failures.saturating_add(1);
                        tracing::warn!(consumer = %subscription.consumer, %error, "RabbitMQ consumer lost; reconnecting");
                    }
                }
                tokio::time::sleep(Duration::from_millis(250u64 << failures.min(5))).await;
            }
        });
        Ok(())
    }

    async fn ready(&self) -> bool {
        self.publisher().await.is_ok()
    }

    async fn dead_letters(&self, consumer: Option<&str>) -> Result<Vec<DeadLetter>, BrokerError> {
        let consumer = consumer.ok_or(BrokerError::Unsupported(
            "RabbitMQ keeps one dead-letter queue per consumer: name the consumer",
        ))?;
        let unavailable = |e: lapin::Error| BrokerError::Unavailable(e.to_string());
        let (connection, channel) = self.open().await.map_err(unavailable)?;
        let mut letters = Vec::new();
        // Take every message without acknowledging it; closing the channel puts them all
        // back, so listing changes nothing.
        while let Some(message) = channel
            .basic_get(
                s(&self.dlq_name(consumer)),
                BasicGetOptions { no_ack: false },
            )
            .await
            .map_err(unavailable)?
        {
            let delivery = message.delivery;
            letters.push(DeadLetter {
                consumer: consumer.to_string(),
                attempts: attempt_of(&delivery.properties),
                event: serde_json::from_slice(&delivery.data).ok(),
                raw: String::from_utf8_lossy(&delivery.data).into_owned(),
                reason: None,
            });
        }
        let _ = channel.close(200, "listed".into()).await;
        let _ = connection.close(200, "listed".into()).await;
        Ok(letters)
    }

    async fn replay(&self, consumer: &str) -> Result<usize, BrokerError> {
        let unavailable = |e: lapin::Error| BrokerError::Unavailable(e.to_string());
        let (connection, channel) = self.open().await.map_err(unavailable)?;
        let mut count = 0;
        while let Some(message) = channel
            .basic_get(
                s(&self.dlq_name(consumer)),
                BasicGetOptions { no_ack: false },
            )
            .await
            .map_err(unavailable)?
        {
            let delivery = message.delivery;
            let props = BasicProperties::default()
                .with_delivery_mode(2)
                .with_content_type("application/json".into())
                .with_headers(attempt_headers(1));
            let confirm = channel
                .basic_publish(
                    s(""),
                    s(&self.queue_name(consumer)),
                    BasicPublishOptions::default(),
                    &delivery.data,
                    props,
                )
                .await
                .map_err(unavailable)?
                .await
                .map_err(unavailable)?;
            if !confirm.is_ack() {
                return Err(BrokerError::Unavailable("replay was not confirmed".into()));
            }
            delivery
                .ack(BasicAckOptions::default())
                .await
                .map_err(unavailable)?;
            count += 1;
        }
        let _ = connection.close(200, "replayed".into()).await;
        Ok(count)
    }
}

async fn count_acks(confirms: Vec<lapin::PublisherConfirm>) -> usize {
    let mut confirmed = 0;
    for confirm in confirms {
        match confirm.await {
            Ok(c) if c.is_ack() => confirmed += 1,
            _ => break,
        }
    }
    confirmed
}

fn s(text: &str) -> ShortString {
    text.into()
}

fn attempt_headers(attempt: u32) -> FieldTable {
    let mut headers = FieldTable::default();
    headers.insert(s(ATTEMPT_HEADER), AMQPValue::LongLongInt(attempt.into()));
    headers
}

fn message_properties(event: &Envelope, attempt: u32) -> BasicProperties {
    BasicProperties::default()
        .with_delivery_mode(2)
        .with_content_type("application/json".into())
        .with_message_id(event.id.to_string().into())
        .with_type(event.event_type.as_str().into())
        .with_headers(attempt_headers(attempt))
}

fn attempt_of(props: &BasicProperties) -> u32 {
    let value = props
        .headers()
        .as_ref()
        .and_then(|h| h.inner().get(ATTEMPT_HEADER).cloned());
    let n: i64 = match value {
        Some(AMQPValue::LongLongInt(n)) => n,
        Some(AMQPValue::LongInt(n)) => n.into(),
        Some(AMQPValue::LongUInt(n)) => n.into(),
        Some(AMQPValue::ShortInt(n)) => n.into(),
        _ => 1,
    };
    u32::try_from(n.max(1)).unwrap_or(u32::MAX)
}
