//! The rooms this process's visitors follow. However many visitors of a room hold a stream
//! open on a node, the node reads the room once every half second for all of them, and stops
//! reading when the last one goes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use storage::Database;
use storage::events::waiting_room::{Room, rooms};
use tokio::sync::watch;
use uuid::Uuid;

/// How often a followed room is read.
const EVERY: Duration = Duration::from_millis(500);

/// What a follower sees of a room: `None` once it is closed.
pub type Followed = watch::Receiver<Option<Room>>;

/// The rooms followed in this process, each read by one task.
#[derive(Clone, Default)]
pub struct RoomWatch(Arc<Mutex<HashMap<Uuid, Followed>>>);

impl RoomWatch {
    /// Follows `room` as it was just read; the first follower starts its reader.
    pub fn follow(&self, db: &Database, room: Room) -> Followed {
        let event = room.event_id;
        let mut followed = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rx) = followed.get(&event) {
            return rx.clone();
        }
        let (tx, rx) = watch::channel(Some(room));
        followed.insert(event, rx.clone());
        tokio::spawn(read(self.clone(), db.clone(), event, tx));
        rx
    }

    /// Stops reading `event` unless someone follows it; true when stopped. Decided under the
    /// map's lock, so a follower arriving meanwhile either finds the reader or starts a new one.
    fn unfollowed(&self, event: Uuid, tx: &watch::Sender<Option<Room>>) -> bool {
        let mut followed = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // The map's own receiver is the one left.
        if tx.receiver_count() > 1 {
            return false;
        }
        followed.remove(&event);
        true
    }
}

async fn read(watch: RoomWatch, db: Database, event: Uuid, tx: watch::Sender<Option<Room>>) {
    let tenant = tx.borrow().as_ref().map(|room| room.tenant_id);
    let Some(tenant) = tenant else {
        watch.unfollowed(event, &tx);
        return;
    };
    loop {
        tokio::time::sleep(EVERY).await;
        if watch.unfollowed(event, &tx) {
            return;
        }
        match rooms::get(&db, tenant, event).await {
            Ok(room) => {
                tx.send_if_modified(|seen| {
                    let changed = seen.as_ref() != Some(&room);
                    *seen = Some(room);
                    changed
                });
            }
            Err(storage::Error::Refused(_)) => {
                // Closed: followers are told, and the next one to come reads it afresh.
                tx.send_replace(None);
                let mut followed = watch.0.lock().unwrap_or_else(|e| e.into_inner());
                followed.remove(&event);
                return;
            }
            Err(e) => tracing::warn!(%event, error = %e, "cannot read a followed waiting room"),
        }
    }
}
