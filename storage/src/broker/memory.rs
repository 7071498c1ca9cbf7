//! The in-process bus: the embedded default for a single node. It routes and retries exactly
//! like the RabbitMQ broker, and delivers from memory queues.
//!
//! Built on a database (`durable`, what a node does), it writes each publish's deliveries to
//! `broker.deliveries` before confirming it (a row per consumer naming up to a hundred events
//! of the outbox), so the relay stamps an outbox row only once every subscribed consumer's
//! delivery is on disk. The table keeps the retry schedule and the dead letters, and a bus
//! starting takes up the deliveries a dead process left (see `deliveries` and `owner`). Built
//! without (`new`), it keeps everything in memory.
//!
//! A consumer's queue holds at most `QUEUE_BOUND` messages: past that, publishing waits for
//! it, so a consumer that falls behind slows its publishers (the relays, whose rows stay in
//! their outbox) instead of growing the process's memory without bound.

use super::{
    Broker, BrokerError, DeadLetter, HandlerError, PublishError, RetryPolicy, Subscription,
    deliveries, owner, retry_delay,
};
use crate::db::{Database, Schema};
use async_trait::async_trait;
use domain::envelope::{Envelope, topic_matches};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::AbortHandle;
use uuid::Uuid;

/// How often a durable bus looks for deliveries nobody holds (a dead process's, replayed ones).
const POLL: Duration = Duration::from_secs(1);
/// Deliveries taken up per query; a full batch is followed by another at once.
const TAKE_UP_BATCH: i64 = 500;
/// Handled deliveries forgotten per statement.
const DELETE_BATCH: usize = 1_000;
/// Messages a consumer's queue holds at most, retries included: what waits beyond it waits in
/// the publisher's outbox, on disk.
pub const QUEUE_BOUND: usize = 4096;
/// How long a publish waits for room in a full queue before it confirms nothing.
const ROOM_WAIT: Duration = Duration::from_secs(1);
/// Queued messages a consumer hands its handler at once (an inbox's longest run, SET_RUN). A
/// batch only forms from what queued up while the previous one was handled, so a quiet
/// consumer still takes each event at once.
const BATCH: usize = 512;

/// The in-process broker. Its tasks (consumers, and for a durable bus the owner lock, the
/// poller and the deleter) stop when the last clone is dropped, like a process dying.
#[derive(Clone)]
pub struct MemoryBroker {
    inner: Arc<Inner>,
}

struct Inner {
    bus: Arc<Bus>,
    tasks: Mutex<Vec<AbortHandle>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for task in self
            .tasks
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
        {
            task.abort();
        }
    }
}

/// What the tasks share.
struct Bus {
    policy: RetryPolicy,
    queues: Mutex<Vec<Queue>>,
    /// Dead letters of a bus without a database.
    dead: Mutex<Vec<DeadLetter>>,
    store: Option<Store>,
}

/// The durable side of a bus.
struct Store {
    db: Database,
    /// The key of this bus's advisory lock, written as the owner of its deliveries.
    owner: i64,
    /// Rows whose handler succeeded, deleted in batches.
    done: mpsc::UnboundedSender<Uuid>,
    /// Wakes the poller before its next round.
    wake: Notify,
}

struct Queue {
    consumer: String,
    patterns: Vec<String>,
    sender: mpsc::UnboundedSender<Pending>,
    /// One permit per message the queue may still take.
    room: Arc<Semaphore>,
}

struct Pending {
    event: Envelope,
    attempt: u32,
    /// Its row in `broker.deliveries`, on a durable bus.
    row: Option<Row>,
    /// Its place in the queue, given back when the message is handled or dropped.
    place: Option<OwnedSemaphorePermit>,
}

/// A delivery's row in `broker.deliveries`: its own, or shared by the messages of one
/// publish for one consumer. The row is deleted when the last of its messages is done.
#[derive(Clone)]
struct Row {
    id: Uuid,
    /// Its messages not done yet.
    open: Arc<AtomicUsize>,
    /// The outbox a shared row names its events in; `None` for a row of one message, whose
    /// retries and dead letter are written on the row itself.
    shared: Option<Schema>,
}

impl Row {
    fn new(id: Uuid, messages: usize, source: Option<Schema>) -> Row {
        Row {
            id,
            open: Arc::new(AtomicUsize::new(messages)),
            shared: source.filter(|_| messages > 1),
        }
    }
}

/// Waits for a place in a consumer's queue (none if the bus is shutting down: the message is
/// then sent without one, and the closing queue drops it).
async fn place_in(room: &Arc<Semaphore>) -> Option<OwnedSemaphorePermit> {
    room.clone().acquire_owned().await.ok()
}

impl MemoryBroker {
    /// A bus keeping everything in memory: what it holds is lost with the process.
    pub fn new(policy: RetryPolicy) -> MemoryBroker {
        MemoryBroker::with_bus(Bus {
            policy,
            queues: Mutex::new(Vec::new()),
            dead: Mutex::new(Vec::new()),
            store: None,
        })
    }

    /// A bus keeping its deliveries in `db` (schema `broker`, migrated), so a crash loses
    /// none: it takes its owner lock before it returns, then takes up the deliveries of the
    /// consumers it is given that no running bus holds.
    pub async fn durable(policy: RetryPolicy, db: Database) -> Result<MemoryBroker, BrokerError> {
        let key = owner::new_key();
        let unavailable = |e: crate::DbError| BrokerError::Unavailable(e.to_string());
        let client = owner::lock(&db, key)
            .await
            .map_err(unavailable)?
            .ok_or(BrokerError::Unavailable("owner key already locked".into()))?;
        let (done, done_rx) = mpsc::unbounded_channel();
        let broker = MemoryBroker::with_bus(Bus {
            policy,
            queues: Mutex::new(Vec::new()),
            dead: Mutex::new(Vec::new()),
            store: Some(Store {
                db: db.clone(),
                owner: key,
                done,
                wake: Notify::new(),
            }),
        });
        broker.spawn(owner::keep(db.clone(), key, Some(client)));
        broker.spawn(delete_handled(db, done_rx));
        broker.spawn(take_up(broker.inner.bus.clone()));
        Ok(broker)
    }

    fn with_bus(bus: Bus) -> MemoryBroker {
        MemoryBroker {
            inner: Arc::new(Inner {
                bus: Arc::new(bus),
                tasks: Mutex::new(Vec::new()),
            }),
        }
    }

    fn spawn(&self, task: impl Future<Output = ()> + Send + 'static) {
        let handle = tokio::spawn(task).abort_handle();
        self.inner
            .tasks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(handle);
    }
}

impl Bus {
    fn sender_of(
        &self,
        consumer: &str,
    ) -> Option<(mpsc::UnboundedSender<Pending>, Arc<Semaphore>)> {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues
            .iter()
            .find(|q| q.consumer == consumer)
            .map(|q| (q.sender.clone(), q.room.clone()))
    }

    fn consumers(&self) -> Vec<String> {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        queues.iter().map(|q| q.consumer.clone()).collect()
    }

    /// Counts a delivery done (handled, or moved to a row of its own); its row is forgotten
    /// with the last of its messages.
    fn done(&self, row: Option<&Row>) {
        if let (Some(store), Some(row)) = (&self.store, row)
            && row.open.fetch_sub(1, Ordering::AcqRel) == 1
        {
            let _ = store.done.send(row.id);
        }
    }

    /// Writes down that attempt `pending.attempt + 1` comes in `delay`; a message of a shared
    /// row first gets a row of its own. Best effort: if it cannot be written, a crash
    /// meanwhile only brings the message back sooner, with fewer attempts counted.
    async fn reschedule(
        &self,
        consumer: &str,
        pending: &mut Pending,
        delay: Duration,
        error: &str,
    ) {
        let (Some(store), Some(row)) = (&self.store, pending.row.clone()) else {
            return;
        };
        let attempt = pending.attempt + 1;
        let written = match row.shared {
            Some(source) => {
                let apart = deliveries::Apart {
                    id: Uuid::now_v7(),
                    consumer,
                    source,
                    event_id: pending.event.id.as_uuid(),
                };
                let split =
                    deliveries::split(&store.db, store.owner, &apart, attempt, delay, error).await;
                if split.is_ok() {
                    self.done(Some(&row));
                    pending.row = Some(Row::new(apart.id, 1, None));
                }
                split
            }
            None => deliveries::reschedule(&store.db, row.id, attempt, delay, error).await,
        };
        if let Err(e) = written {
            tracing::warn!(consumer, event_id = %pending.event.id, error = %e, "retry schedule not recorded");
        }
    }

    /// Parks a message its handler gave up on. On a durable bus this waits until the dead
    /// letter is written (a database outage holds the consumer, whose handler would meet the
    /// same outage anyway), so no dead letter exists only in memory.
    async fn park(&self, consumer: &str, pending: Pending, error: &HandlerError) {
        let (Some(store), Some(row)) = (&self.store, &pending.row) else {
            self.dead
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(DeadLetter {
                    consumer: consumer.to_string(),
                    attempts: pending.attempt,
                    raw: serde_json::to_string(&pending.event).unwrap_or_default(),
                    event: Some(pending.event),
                    reason: Some(error.to_string()),
                });
            return;
        };
        let reason = error.to_string();
        let apart = row.shared.map(|source| deliveries::Apart {
            id: Uuid::now_v7(),
            consumer,
            source,
            event_id: pending.event.id.as_uuid(),
        });
        while let Err(e) = match &apart {
            Some(apart) => {
                deliveries::park_apart(
                    &store.db,
                    apart,
                    pending.attempt,
                    &reason,
                    serde_json::to_value(&pending.event).ok(),
                )
                .await
            }
            None => {
                deliveries::park(
                    &store.db,
                    row.id,
                    pending.attempt,
                    &reason,
                    Some(&pending.event),
                )
                .await
            }
        } {
            let pause = super::outage_delay(self.policy.base_delay);
            tracing::warn!(consumer, event_id = %pending.event.id, error = %e, retry_in_ms = pause.as_millis() as u64, "dead letter not recorded; will retry");
            tokio::time::sleep(pause).await;
        }
        // The dead letter has its own row now; a row of its own became the dead letter.
        if row.shared.is_some() {
            self.done(Some(row));
        }
    }
}

impl MemoryBroker {
    /// Queues `events` for every consumer whose patterns match, recording the deliveries
    /// first on a durable bus (by their place in `outbox`, or a copy when there is none).
    async fn deliver(
        &self,
        events: &[Envelope],
        outbox: Option<Schema>,
    ) -> Result<(), PublishError> {
        let bus = &self.inner.bus;
        type Route<'a> = (
            mpsc::UnboundedSender<Pending>,
            Arc<Semaphore>,
            String,
            &'a Envelope,
        );
        let routed: Vec<Route<'_>> = {
            let queues = bus.queues.lock().unwrap_or_else(|p| p.into_inner());
            events
                .iter()
                .flat_map(|event| {
                    queues
                        .iter()
                        .filter(|q| {
                            q.patterns
                                .iter()
                                .any(|p| topic_matches(p, &event.event_type))
                        })
                        .map(move |q| (q.sender.clone(), q.room.clone(), q.consumer.clone(), event))
                })
                .collect()
        };
        // Places first, so a full queue holds the publisher before anything is written; not
        // for long, as a relay publishes inside a transaction: past ROOM_WAIT nothing is
        // confirmed, and the relay tries again later with the rows still in its outbox.
        let deadline = tokio::time::Instant::now() + ROOM_WAIT;
        let mut places = Vec::with_capacity(routed.len());
        for (_, room, consumer, _) in &routed {
            match tokio::time::timeout_at(deadline, place_in(room)).await {
                Ok(place) => places.push(place),
                Err(_) => {
                    return Err(PublishError {
                        confirmed: 0,
                        reason: format!(
                            "consumer {consumer} is behind ({QUEUE_BOUND} messages queued)"
                        ),
                        behind: true,
                    });
                }
            }
        }
        let rows: Vec<Option<Row>> = match &bus.store {
            Some(store) => {
                let (recorded, row_of) = rows_of(&routed, outbox);
                // One statement for the publish: all of it is confirmed, or none.
                deliveries::record(&store.db, store.owner, &recorded, outbox)
                    .await
                    .map_err(|e| PublishError {
                        confirmed: 0,
                        reason: e.to_string(),
                        behind: false,
                    })?;
                let rows: Vec<Row> = recorded
                    .iter()
                    .map(|r| Row::new(r.id, r.events.len(), outbox))
                    .collect();
                row_of.into_iter().map(|i| Some(rows[i].clone())).collect()
            }
            None => vec![None; routed.len()],
        };
        for (((sender, _, _, event), row), place) in routed.into_iter().zip(rows).zip(places) {
            // A closed queue means its consumer stopped; like an unbound queue, it no longer
            // receives (a durable row stays for whoever takes it up).
            let _ = sender.send(Pending {
                event: event.clone(),
                attempt: 1,
                row,
                place,
            });
        }
        Ok(())
    }
}

/// The rows a publish records, and the row of each of its routes (`(consumer, event)` in
/// publication order): events of an outbox share a row per consumer, up to
/// `EVENTS_PER_ROW` to a row; copies go one to a row.
fn rows_of<'a, S, R>(
    routed: &'a [(S, R, String, &'a Envelope)],
    outbox: Option<Schema>,
) -> (Vec<deliveries::Recorded<'a>>, Vec<usize>) {
    let mut recorded: Vec<deliveries::Recorded<'a>> = Vec::new();
    let mut row_of = Vec::with_capacity(routed.len());
    // The row each consumer is filling.
    let mut filling: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for (_, _, consumer, event) in routed {
        let open = filling
            .get(consumer.as_str())
            .copied()
            .filter(|&i| outbox.is_some() && recorded[i].events.len() < deliveries::EVENTS_PER_ROW);
        let i = match open {
            Some(i) => i,
            None => {
                recorded.push(deliveries::Recorded {
                    id: Uuid::now_v7(),
                    consumer: consumer.as_str(),
                    events: Vec::new(),
                });
                filling.insert(consumer.as_str(), recorded.len() - 1);
                recorded.len() - 1
            }
        };
        recorded[i].events.push(*event);
        row_of.push(i);
    }
    (recorded, row_of)
}

#[async_trait]
impl Broker for MemoryBroker {
    async fn publish(&self, events: &[Envelope]) -> Result<(), PublishError> {
        self.deliver(events, None).await
    }

    async fn publish_from(&self, events: &[Envelope], outbox: Schema) -> Result<(), PublishError> {
        self.deliver(events, Some(outbox)).await
    }

    async fn subscribe(&self, subscription: Subscription) -> Result<(), BrokerError> {
        let (sender, receiver) = mpsc::unbounded_channel::<Pending>();
        let bus = self.inner.bus.clone();
        {
            let mut queues = bus.queues.lock().unwrap_or_else(|p| p.into_inner());
            queues.retain(|q| q.consumer != subscription.consumer);
            queues.push(Queue {
                consumer: subscription.consumer.clone(),
                patterns: subscription.patterns.clone(),
                sender: sender.clone(),
                room: Arc::new(Semaphore::new(QUEUE_BOUND)),
            });
        }
        self.spawn(consume(bus.clone(), subscription, sender, receiver));
        // What a previous process left for this consumer is taken up now, not at the next poll.
        if let Some(store) = &bus.store {
            store.wake.notify_one();
        }
        Ok(())
    }

    async fn ready(&self) -> bool {
        true
    }

    async fn dead_letters(&self, consumer: Option<&str>) -> Result<Vec<DeadLetter>, BrokerError> {
        let bus = &self.inner.bus;
        if let Some(store) = &bus.store {
            return deliveries::dead_letters(&store.db, consumer)
                .await
                .map_err(|e| BrokerError::Unavailable(e.to_string()));
        }
        let dead = bus.dead.lock().unwrap_or_else(|p| p.into_inner());
        Ok(dead
            .iter()
            .filter(|d| consumer.is_none_or(|c| d.consumer == c))
            .cloned()
            .collect())
    }

    async fn replay(&self, consumer: &str) -> Result<usize, BrokerError> {
        let bus = &self.inner.bus;
        if let Some(store) = &bus.store {
            let n = deliveries::replay(&store.db, consumer)
                .await
                .map_err(|e| BrokerError::Unavailable(e.to_string()))?;
            store.wake.notify_one();
            return Ok(n);
        }
        let (sender, room) = bus
            .sender_of(consumer)
            .ok_or(BrokerError::Unsupported("no such consumer on this node"))?;
        let replayed: Vec<DeadLetter> = {
            let mut dead = bus.dead.lock().unwrap_or_else(|p| p.into_inner());
            let (mine, rest) = dead.drain(..).partition(|d| d.consumer == consumer);
            *dead = rest;
            mine
        };
        let count = replayed.len();
        for letter in replayed.into_iter().filter_map(|d| d.event) {
            let _ = sender.send(Pending {
                event: letter,
                attempt: 1,
                row: None,
                place: place_in(&room).await,
            });
        }
        Ok(count)
    }
}

/// One consumer: its events in order, what queued up meanwhile as one batch; failures
/// retried from memory on the schedule the table records.
async fn consume(
    bus: Arc<Bus>,
    subscription: Subscription,
    sender: mpsc::UnboundedSender<Pending>,
    mut receiver: mpsc::UnboundedReceiver<Pending>,
) {
    let consumer = Consumer {
        bus,
        subscription,
        sender,
    };
    while let Some(first) = receiver.recv().await {
        let (batch, retried) = gather(first, &mut receiver);
        consumer.handle_batch(batch).await;
        if let Some(pending) = retried {
            consumer.handle_one(pending).await;
        }
    }
}

/// `first` and the first attempts queued behind it, up to BATCH. A retried message is
/// returned apart, to be handled alone after the batch: its attempts are counted one by one.
fn gather(
    first: Pending,
    receiver: &mut mpsc::UnboundedReceiver<Pending>,
) -> (Vec<Pending>, Option<Pending>) {
    if first.attempt > 1 {
        return (Vec::new(), Some(first));
    }
    let mut batch = vec![first];
    while batch.len() < BATCH {
        match receiver.try_recv() {
            Ok(pending) if pending.attempt > 1 => return (batch, Some(pending)),
            Ok(pending) => batch.push(pending),
            Err(_) => break,
        }
    }
    (batch, None)
}

/// A consumer's handler and the way back into its queue.
struct Consumer {
    bus: Arc<Bus>,
    subscription: Subscription,
    sender: mpsc::UnboundedSender<Pending>,
}

impl Consumer {
    /// Hands `batch` to the handler at once; if that fails, each message goes its own way.
    async fn handle_batch(&self, batch: Vec<Pending>) {
        if batch.len() < 2 {
            // Alone, a message is tried once per attempt, exactly as before batching.
            for pending in batch {
                self.handle_one(pending).await;
            }
            return;
        }
        type Ticket = (u32, Option<Row>, Option<OwnedSemaphorePermit>);
        let (events, tickets): (Vec<Envelope>, Vec<Ticket>) = batch
            .into_iter()
            .map(|p| (p.event, (p.attempt, p.row, p.place)))
            .unzip();
        let result = self.subscription.handler.handle_batch(&events).await;
        let count = events.len();
        let batch = events
            .into_iter()
            .zip(tickets)
            .map(|(event, (attempt, row, place))| Pending {
                event,
                attempt,
                row,
                place,
            });
        match result {
            Ok(()) => batch.for_each(|pending| self.bus.done(pending.row.as_ref())),
            Err(error) => {
                tracing::debug!(consumer = %self.subscription.consumer, count, %error, "batch failed; handling its messages one by one");
                for pending in batch {
                    self.handle_one(pending).await;
                }
            }
        }
    }

    /// One message: handled, or retried with backoff, or rescheduled during an outage, or
    /// dead-lettered after its last attempt.
    async fn handle_one(&self, mut pending: Pending) {
        let (bus, consumer) = (&self.bus, self.subscription.consumer.as_str());
        let policy = bus.policy;
        let error = match self.subscription.handler.handle(&pending.event).await {
            Ok(()) => {
                bus.done(pending.row.as_ref());
                return;
            }
            Err(error) => error,
        };
        if super::is_outage(&error) {
            let delay = super::outage_delay(policy.base_delay);
            tracing::warn!(consumer, event_id = %pending.event.id, %error, retry_in_ms = delay.as_millis() as u64, "backing service down; will retry without counting an attempt");
            send_later(&self.sender, pending, delay);
            return;
        }
        if pending.attempt >= policy.max_attempts {
            tracing::error!(consumer, event_id = %pending.event.id, attempts = pending.attempt, %error, "handler gave up; message dead-lettered");
            bus.park(consumer, pending, &error).await;
            return;
        }
        let delay = retry_delay(policy.base_delay, pending.attempt);
        tracing::warn!(consumer, event_id = %pending.event.id, attempt = pending.attempt, %error, retry_in_ms = delay.as_millis() as u64, "handler failed; will retry");
        bus.reschedule(consumer, &mut pending, delay, &error.to_string())
            .await;
        send_later(
            &self.sender,
            Pending {
                attempt: pending.attempt + 1,
                ..pending
            },
            delay,
        );
    }
}

fn send_later(sender: &mpsc::UnboundedSender<Pending>, pending: Pending, delay: Duration) {
    let sender = sender.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        let _ = sender.send(pending);
    });
}

/// Deletes the rows of handled deliveries, as many per statement as have piled up meanwhile.
async fn delete_handled(db: Database, mut done: mpsc::UnboundedReceiver<Uuid>) {
    let mut batch: Vec<Uuid> = Vec::new();
    loop {
        if batch.is_empty() {
            match done.recv().await {
                Some(id) => batch.push(id),
                None => return,
            }
        }
        while batch.len() < DELETE_BATCH {
            match done.try_recv() {
                Ok(id) => batch.push(id),
                Err(_) => break,
            }
        }
        match deliveries::delete(&db, &batch).await {
            Ok(()) => batch.clear(),
            Err(error) => {
                // Kept for the next try; until then a crash would only redeliver them.
                tracing::warn!(%error, pending = batch.len(), "handled deliveries not deleted; will retry");
                tokio::time::sleep(POLL).await;
            }
        }
    }
}

/// Hands the consumers of this bus the deliveries nobody holds, at start, after a replay and
/// every POLL.
async fn take_up(bus: Arc<Bus>) {
    let Some(store) = &bus.store else {
        return;
    };
    loop {
        let consumers = bus.consumers();
        let mut full = false;
        if !consumers.is_empty() {
            match deliveries::take_up(&store.db, store.owner, &consumers, TAKE_UP_BATCH).await {
                Ok(taken) => {
                    full = taken.len() as i64 >= TAKE_UP_BATCH;
                    if !taken.is_empty() {
                        tracing::info!(count = taken.len(), "in-process broker took up deliveries");
                    }
                    for delivery in taken {
                        hand_over(&bus, store, delivery).await;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot take up in-process deliveries; will retry")
                }
            }
        }
        if !full {
            tokio::select! {
                _ = store.wake.notified() => {}
                _ = tokio::time::sleep(POLL) => {}
            }
        }
    }
}

async fn hand_over(bus: &Bus, store: &Store, taken: deliveries::Taken) {
    if taken.events.is_empty() {
        let _ = store.done.send(taken.id);
        return;
    }
    let row = Row::new(taken.id, taken.events.len(), taken.source);
    // Only consumers of this bus are taken up, and queues are never removed.
    let queue = bus.sender_of(&taken.consumer);
    for item in taken.events {
        let decoded = match &item.event {
            Some(value) => serde_json::from_value::<Envelope>(value.clone())
                .map_err(|e| format!("undecodable: {e}")),
            None => Err(
                "its event is no longer in its outbox (published more than 7 days ago)".to_string(),
            ),
        };
        let event = match decoded {
            Ok(event) => event,
            Err(reason) => {
                tracing::error!(consumer = %taken.consumer, %reason, "undecodable delivery dead-lettered");
                let parked = match (row.shared, item.id) {
                    (Some(source), Some(event_id)) => {
                        let apart = deliveries::Apart {
                            id: Uuid::now_v7(),
                            consumer: &taken.consumer,
                            source,
                            event_id,
                        };
                        deliveries::park_apart(
                            &store.db,
                            &apart,
                            taken.attempt,
                            &reason,
                            item.event,
                        )
                        .await
                        .map(|()| bus.done(Some(&row)))
                    }
                    _ => deliveries::park(&store.db, taken.id, taken.attempt, &reason, None).await,
                };
                if let Err(error) = parked {
                    tracing::warn!(%error, "undecodable delivery not parked");
                }
                continue;
            }
        };
        if let Some((sender, room)) = &queue {
            let place = place_in(room).await;
            let _ = sender.send(Pending {
                event,
                attempt: taken.attempt,
                row: Some(row.clone()),
                place,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes<'a>(
        consumers: &[&str],
        events: &'a [Envelope],
    ) -> Vec<((), (), String, &'a Envelope)> {
        events
            .iter()
            .flat_map(|e| consumers.iter().map(move |c| ((), (), c.to_string(), e)))
            .collect()
    }

    #[test]
    fn events_of_an_outbox_share_a_row_per_consumer_up_to_its_bound_and_copies_go_alone() {
        let events: Vec<Envelope> = (0..deliveries::EVENTS_PER_ROW + 1)
            .map(|_| Envelope::new("x.y", None, None, serde_json::json!({})))
            .collect();
        let routed = routes(&["a", "b"], &events);

        let (rows, row_of) = rows_of(&routed, Some(Schema::EventService));
        let shape: Vec<(&str, usize)> = rows.iter().map(|r| (r.consumer, r.events.len())).collect();
        assert_eq!(
            shape,
            vec![("a", 100), ("b", 100), ("a", 1), ("b", 1)],
            "filled in publication order"
        );
        // Each route names its own consumer's row, and each row its events in order.
        for ((_, _, consumer, event), &i) in routed.iter().zip(&row_of) {
            assert_eq!(rows[i].consumer, consumer);
            assert!(rows[i].events.iter().any(|e| e.id == event.id));
        }
        assert_eq!(rows[0].events[99].id, events[99].id);

        let (copies, row_of) = rows_of(&routed, None);
        assert_eq!(copies.len(), routed.len());
        assert!(copies.iter().all(|r| r.events.len() == 1));
        assert_eq!(row_of, (0..routed.len()).collect::<Vec<_>>());
    }
}
