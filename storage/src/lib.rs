//! Everything bilet keeps or sends: PostgreSQL (pool, migrations, tenant-scoped
//! transactions), the transactional outbox and its relay, the broker (in-process or RabbitMQ),
//! the consumer inbox that drops duplicates, and the idempotency-key store.

pub mod broker;
pub mod db;
pub mod error;
pub mod events;
pub mod idempotency;
pub mod identity;
pub mod inbox;
pub mod mail;
pub mod media;
pub mod notifications;
pub mod outbox;

pub use db::{Database, DbError, Schema, Scope, Tx};
pub use error::{Error, Result};
