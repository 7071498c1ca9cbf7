//! Everything bilet keeps or sends: PostgreSQL (pool, migrations, tenant-scoped
//! transactions), the transactional outbox and its relay, the broker (in-process or RabbitMQ),
//! the consumer inbox that drops duplicates, the idempotency-key store and the runner of
//! periodic jobs.

pub mod broker;
pub mod cluster;
pub mod db;
pub mod error;
pub mod events;
#[cfg(feature = "faults")]
pub mod faults;
pub mod idempotency;
pub mod identity;
pub mod inbox;
pub mod jobs;
pub mod liveness;
pub mod mail;
pub mod media;
pub mod notifications;
pub mod outbox;
pub mod peers;

pub use db::{Connection, Database, DbError, Schema, Scope, Tx};
pub use error::{Error, Result};
