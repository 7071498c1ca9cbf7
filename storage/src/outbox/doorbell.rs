//! The relays' doorbell inside one process: a transaction that wrote into an outbox rings it
//! when it commits, and every relay of that schema in the process wakes. Nothing crosses the
//! database, so commits of different actors never wait for each other to ring it.

use crate::db::Schema;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::Notify;

static BELLS: Mutex<Vec<(Schema, Weak<Notify>)>> = Mutex::new(Vec::new());

/// A bell for a relay of `schema`; it rings as long as the relay holds it.
pub(crate) fn hang(schema: Schema) -> Arc<Notify> {
    let bell = Arc::new(Notify::new());
    let mut bells = BELLS.lock().unwrap_or_else(|p| p.into_inner());
    bells.retain(|(_, b)| b.strong_count() > 0);
    bells.push((schema, Arc::downgrade(&bell)));
    bell
}

/// Wakes every relay of `schema` in this process (a relay busy publishing keeps the wake-up
/// for when it looks again).
pub(crate) fn ring(schema: Schema) {
    let bells = BELLS.lock().unwrap_or_else(|p| p.into_inner());
    for (s, bell) in bells.iter() {
        if *s == schema
            && let Some(bell) = bell.upgrade()
        {
            bell.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_ring_reaches_every_relay_of_its_schema_and_is_kept_until_awaited() {
        let (a, b) = (hang(Schema::EventService), hang(Schema::EventService));
        let other = hang(Schema::UserService);
        ring(Schema::EventService);
        let waited = std::time::Duration::from_millis(50);
        assert!(tokio::time::timeout(waited, a.notified()).await.is_ok());
        assert!(tokio::time::timeout(waited, b.notified()).await.is_ok());
        assert!(
            tokio::time::timeout(waited, other.notified())
                .await
                .is_err(),
            "another schema's relay sleeps on"
        );
    }
}
