//! What every handler can reach: the database, the broker, the configuration and metrics.

use crate::metrics::Metrics;
use domain::config::Config;
use std::sync::Arc;
use storage::Database;
use storage::broker::Broker;

/// Shared state of a process.
#[derive(Clone)]
pub struct AppState {
    /// The connection pool.
    pub db: Database,
    /// Where events are published and consumed.
    pub broker: Arc<dyn Broker>,
    /// The effective configuration.
    pub config: Arc<Config>,
    /// Prometheus metrics.
    pub metrics: Metrics,
}
