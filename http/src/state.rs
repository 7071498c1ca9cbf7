//! What every handler can reach: the database, the broker, the configuration, metrics, the
//! clock, the mailer and the token keys.

use crate::metrics::Metrics;
use crate::tokens::Tokens;
use domain::clock::Clock;
use domain::config::Config;
use std::sync::Arc;
use storage::Database;
use storage::broker::Broker;
use storage::mail::Mailer;

/// Shared state of a process. Every request clones it once per layer it passes through, so a
/// clone is one reference count (cloning the parts themselves was a tenth of a node's CPU in a
/// burst); the parts are read through `Deref`.
#[derive(Clone)]
pub struct AppState(Arc<Parts>);

impl AppState {
    /// The state made of `parts`.
    pub fn new(parts: Parts) -> AppState {
        AppState(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = Parts;

    fn deref(&self) -> &Parts {
        &self.0
    }
}

/// What `AppState` holds.
pub struct Parts {
    /// The connection pool.
    pub db: Database,
    /// Where events are published and consumed.
    pub broker: Arc<dyn Broker>,
    /// The effective configuration.
    pub config: Arc<Config>,
    /// Prometheus metrics.
    pub metrics: Metrics,
    /// The time source of every rule that depends on time.
    pub clock: Arc<dyn Clock>,
    /// Outgoing mail.
    pub mailer: Mailer,
    /// Access token keys.
    pub tokens: Arc<Tokens>,
    /// The ticket-type actors of this process.
    pub ticketing: Arc<actors::ticketing::Ticketing>,
    /// Who owns which events shard, in a process running a gateway.
    pub shard_map: Option<actors::cluster::ShardMap>,
    /// Where media bytes live.
    pub objects: storage::media::objects::Objects,
    /// The variant worker, in a process running the media service.
    pub media: Option<actors::media::MediaWorkers>,
    /// The analytics store and ingest, in a process running the analytics service.
    pub analytics: Option<Analytics>,
    /// The send queue, in a process running the notification service.
    pub notifications: Option<Notifications>,
    /// This process as the installation's other processes see it (readiness compares their
    /// service secrets).
    pub peers: crate::peers::Peers,
    /// This process's life line: claims it holds are known abandoned the moment it dies.
    pub life_line: storage::liveness::LifeLine,
    /// The payment providers and what is done with them.
    pub payments: payments::Payments,
    /// The wallet passes this installation issues (each only with its signing keys).
    pub wallets: Arc<messenger::tickets::Wallets>,
    /// The waiting rooms this process's visitors follow.
    pub rooms: crate::events::waiting_room::watch::RoomWatch,
}

/// The notification service's parts.
#[derive(Clone)]
pub struct Notifications {
    /// The send queue's actor.
    pub queue: messenger::SendQueue,
    /// The messenger (off without a bot token).
    pub telegram: messenger::Telegram,
}

/// The analytics service's parts.
#[derive(Clone)]
pub struct Analytics {
    /// Where records are read from.
    pub store: analytics::store::Store,
    /// Where tracked records are handed to.
    pub ingest: analytics::ingest::Ingest,
}
