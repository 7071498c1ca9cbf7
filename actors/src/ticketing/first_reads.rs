//! What an actor reads when it starts (its ticket type's tenant, its event's reminder), read
//! for every actor starting at the same moment in one statement. An on-sale's first second
//! starts an event actor and a ticket-type actor for each event on sale: read one at a time,
//! a thousand events were two thousand transactions on the request pool at once, and the pool
//! opened a connection for each of dozens of them while the machine was at its busiest — the
//! first answers waited for PostgreSQL to start backends (bench/README.md, thirty-fifth
//! sitting). One read runs at a time; those asked for meanwhile go together in the next.

use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use storage::Database;
use tokio::sync::{mpsc, oneshot};
use uuid::Uuid;

/// Most keys in one read.
const MOST_KEYS: usize = 1000;

/// A read failed (or the reader stopped): each actor waiting for it fails to start, as it
/// would have with a read of its own.
#[derive(Debug, Clone, thiserror::Error)]
#[error("an actor's first read failed: {0}")]
pub struct ReadFailed(String);

type Answer<T> = Result<Option<T>, ReadFailed>;

/// Reads `keys` at once; a key not in the answer has no value.
type Read<K, T> = Arc<
    dyn Fn(Database, Vec<K>) -> BoxFuture<'static, storage::Result<HashMap<K, T>>> + Send + Sync,
>;

/// One kind of first read, asked for one key at a time and read many keys at a time.
struct Batched<K, T> {
    queue: mpsc::UnboundedSender<(K, oneshot::Sender<Answer<T>>)>,
}

impl<K, T> Batched<K, T>
where
    K: Clone + Eq + Hash + Send + 'static,
    T: Clone + Send + 'static,
{
    /// Its reader runs on the current runtime until every handle is dropped.
    fn start(db: Database, read: Read<K, T>) -> Batched<K, T> {
        let (queue, mut asked) = mpsc::unbounded_channel::<(K, oneshot::Sender<Answer<T>>)>();
        tokio::spawn(async move {
            while let Some(first) = asked.recv().await {
                let mut waiting = vec![first];
                while waiting.len() < MOST_KEYS {
                    match asked.try_recv() {
                        Ok(next) => waiting.push(next),
                        Err(_) => break,
                    }
                }
                let keys = waiting.iter().map(|(key, _)| key.clone()).collect();
                match read(db.clone(), keys).await {
                    Ok(found) => {
                        for (key, reply) in waiting {
                            let _ = reply.send(Ok(found.get(&key).cloned()));
                        }
                    }
                    Err(e) => {
                        let failed = ReadFailed(e.to_string());
                        for (_, reply) in waiting {
                            let _ = reply.send(Err(failed.clone()));
                        }
                    }
                }
            }
        });
        Batched { queue }
    }

    async fn get(&self, key: K) -> Answer<T> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send((key, reply))
            .map_err(|_| ReadFailed("the reader stopped".into()))?;
        answer
            .await
            .map_err(|_| ReadFailed("the reader stopped before answering".into()))?
    }
}

/// The node's first reads, shared by its actors.
#[derive(Clone)]
pub struct FirstReads {
    owners: Arc<Batched<Uuid, domain::ids::TenantId>>,
    reminders: Arc<Batched<Uuid, chrono::DateTime<chrono::Utc>>>,
}

impl FirstReads {
    /// Starts the readers on the current runtime.
    pub fn start(db: &Database) -> FirstReads {
        FirstReads {
            owners: Arc::new(Batched::start(
                db.clone(),
                Arc::new(|db, types| {
                    Box::pin(async move { storage::events::seats::owners(&db, &types).await })
                }),
            )),
            reminders: Arc::new(Batched::start(
                db.clone(),
                Arc::new(|db, events| {
                    Box::pin(async move {
                        storage::events::catalog::reminders_due_at(&db, &events).await
                    })
                }),
            )),
        }
    }

    /// The tenant owning `ticket_type`; `None` when it does not exist.
    pub async fn owner(&self, ticket_type: Uuid) -> Answer<domain::ids::TenantId> {
        self.owners.get(ticket_type).await
    }

    /// When `event`'s reminder falls due; `None` when it has none to send.
    pub async fn reminder(&self, event: Uuid) -> Answer<chrono::DateTime<chrono::Utc>> {
        self.reminders.get(event).await
    }
}
