//! Who holds a delivery of the in-process broker. Each durable bus draws a random key and,
//! while it runs, keeps a session advisory lock on it on a connection of its own. A process
//! that dies, even by kill -9, closes that connection and so releases the lock: deliveries
//! whose owner key nobody locks belong to nobody, and a bus running their consumer takes them.

use crate::db::{Database, DbError};
use deadpool_postgres::ClientWrapper;
use std::time::Duration;

/// How often the keeper checks that its connection, and so its lock, still stands.
const CHECK: Duration = Duration::from_secs(1);

/// A fresh owner key. Keys below 2^32 are left to the other advisory locks of the database
/// (`hashtext` keys of the relay, the migration lock), so an owner can never look alive
/// because of them.
pub(super) fn new_key() -> i64 {
    rand::random_range((1i64 << 32)..i64::MAX)
}

/// Takes the lock on `key` on a connection detached from the pool (the pool would hand it to
/// others and recycle it). None when the lock is held elsewhere.
pub(super) async fn lock(db: &Database, key: i64) -> Result<Option<ClientWrapper>, DbError> {
    let client = db.client().await?.detach();
    let locked: bool = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
        .await?
        .get(0);
    Ok(locked.then_some(client))
}

/// Holds the lock for as long as it runs (it is aborted with its broker), taking it again
/// after the connection was lost, e.g. to a PostgreSQL restart.
pub(super) async fn keep(db: Database, key: i64, mut client: Option<ClientWrapper>) {
    loop {
        if client.as_ref().is_none_or(|c| c.is_closed()) {
            if client.take().is_some() {
                tracing::warn!("in-process broker lost its owner lock; taking it again");
            }
            match lock(&db, key).await {
                Ok(Some(c)) => client = Some(c),
                // The server may not have noticed yet that the previous session is gone.
                Ok(None) => tracing::warn!("owner lock still held by a previous session"),
                Err(error) => tracing::warn!(%error, "cannot take the owner lock; will retry"),
            }
        }
        tokio::time::sleep(CHECK).await;
    }
}
