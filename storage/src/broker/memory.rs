//! The in-process bus: the embedded default for a single node. It routes and retries exactly
//! like the RabbitMQ broker; its queues and dead letters live in memory, so events handed to
//! it are lost if the process dies before handling them (the outbox keeps them until then).

use super::{
    Broker, BrokerError, DeadLetter, PublishError, RetryPolicy, Subscription, retry_delay,
};
use async_trait::async_trait;
use domain::envelope::{Envelope, topic_matches};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// The in-process broker.
#[derive(Clone)]
pub struct MemoryBroker {
    inner: Arc<Inner>,
}

struct Inner {
    policy: RetryPolicy,
    queues: Mutex<Vec<Queue>>,
    dead: Mutex<Vec<DeadLetter>>,
}

struct Queue {
    consumer: String,
    patterns: Vec<String>,
    sender: mpsc::UnboundedSender<Pending>,
}

struct Pending {
    event: Envelope,
    attempt: u32,
}

impl MemoryBroker {
    /// An empty bus.
    pub fn new(policy: RetryPolicy) -> MemoryBroker {
        MemoryBroker {
            inner: Arc::new(Inner {
                policy,
                queues: Mutex::new(Vec::new()),
                dead: Mutex::new(Vec::new()),
            }),
        }
    }

    fn sender_of(&self, consumer: &str) -> Option<mpsc::UnboundedSender<Pending>> {
        let queues = self.inner.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues
            .iter()
            .find(|q| q.consumer == consumer)
            .map(|q| q.sender.clone())
    }
}

#[async_trait]
impl Broker for MemoryBroker {
    async fn publish(&self, events: &[Envelope]) -> Result<(), PublishError> {
        let queues = self.inner.queues.lock().unwrap_or_else(|p| p.into_inner());
        for event in events {
            for queue in queues.iter() {
                if queue
                    .patterns
                    .iter()
                    .any(|p| topic_matches(p, &event.event_type))
                {
                    // A closed queue means its consumer stopped; like an unbound queue,
                    // it no longer receives.
                    let _ = queue.sender.send(Pending {
                        event: event.clone(),
                        attempt: 1,
                    });
                }
            }
        }
        Ok(())
    }

    async fn subscribe(&self, subscription: Subscription) -> Result<(), BrokerError> {
        let (sender, mut receiver) = mpsc::unbounded_channel::<Pending>();
        {
            let mut queues = self.inner.queues.lock().unwrap_or_else(|p| p.into_inner());
            queues.retain(|q| q.consumer != subscription.consumer);
            queues.push(Queue {
                consumer: subscription.consumer.clone(),
                patterns: subscription.patterns.clone(),
                sender: sender.clone(),
            });
        }
        let inner = self.inner.clone();
        tokio::spawn(async move {
            while let Some(pending) = receiver.recv().await {
                let Err(error) = subscription.handler.handle(&pending.event).await else {
                    continue;
                };
                let consumer = &subscription.consumer;
                if super::is_outage(&error) {
                    let delay = super::outage_delay(inner.policy.base_delay);
                    tracing::warn!(consumer, event_id = %pending.event.id, %error, retry_in_ms = delay.as_millis() as u64, "backing service down; will retry without counting an attempt");
                    let sender = sender.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(delay).await;
                        let _ = sender.send(pending);
                    });
                    continue;
                }
                if pending.attempt >= inner.policy.max_attempts {
                    tracing::error!(consumer, event_id = %pending.event.id, attempts = pending.attempt, %error, "handler gave up; message dead-lettered");
                    inner
                        .dead
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(DeadLetter {
                            consumer: consumer.clone(),
                            attempts: pending.attempt,
                            raw: serde_json::to_string(&pending.event).unwrap_or_default(),
                            event: Some(pending.event),
                        });
                    continue;
                }
                let delay = retry_delay(inner.policy.base_delay, pending.attempt);
                tracing::warn!(consumer, event_id = %pending.event.id, attempt = pending.attempt, %error, retry_in_ms = delay.as_millis() as u64, "handler failed; will retry");
                let sender = sender.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    let _ = sender.send(Pending {
                        event: pending.event,
                        attempt: pending.attempt + 1,
                    });
                });
            }
        });
        Ok(())
    }

    async fn ready(&self) -> bool {
        true
    }

    async fn dead_letters(&self, consumer: Option<&str>) -> Result<Vec<DeadLetter>, BrokerError> {
        let dead = self.inner.dead.lock().unwrap_or_else(|p| p.into_inner());
        Ok(dead
            .iter()
            .filter(|d| consumer.is_none_or(|c| d.consumer == c))
            .cloned()
            .collect())
    }

    async fn replay(&self, consumer: &str) -> Result<usize, BrokerError> {
        let sender = self
            .sender_of(consumer)
            .ok_or(BrokerError::Unsupported("no such consumer on this node"))?;
        let replayed: Vec<DeadLetter> = {
            let mut dead = self.inner.dead.lock().unwrap_or_else(|p| p.into_inner());
            let (mine, rest) = dead.drain(..).partition(|d| d.consumer == consumer);
            *dead = rest;
            mine
        };
        let count = replayed.len();
        for letter in replayed.into_iter().filter_map(|d| d.event) {
            let _ = sender.send(Pending {
                event: letter,
                attempt: 1,
            });
        }
        Ok(count)
    }
}
