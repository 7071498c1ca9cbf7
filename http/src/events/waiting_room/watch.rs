//! The rooms this process's visitors follow or read. However many visitors of a room hold a
//! stream open or read their place with a pass on a node, the node reads the room once every
//! half second for all of them, and stops half a minute after the last one went.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use storage::Database;
use storage::events::waiting_room::{Room, rooms};
use tokio::sync::watch;
use tokio::time::Instant;
use uuid::Uuid;

/// How often a followed room is read.
const EVERY: Duration = Duration::from_millis(500);
/// How long a room is still read after its last reader.
const KEPT: Duration = Duration::from_secs(30);

/// What a follower sees of a room: `None` once it is closed.
pub type Followed = watch::Receiver<Option<Room>>;

struct Entry {
    rx: Followed,
    /// When a reader last asked, in milliseconds since `RoomWatch::since`.
    asked: Arc<AtomicU64>,
}

/// The rooms followed in this process, each read by one task.
#[derive(Clone)]
pub struct RoomWatch {
    rooms: Arc<Mutex<HashMap<Uuid, Entry>>>,
    since: Instant,
}

impl Default for RoomWatch {
    fn default() -> Self {
        RoomWatch {
            rooms: Arc::default(),
            since: Instant::now(),
        }
    }
}

impl RoomWatch {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Entry>> {
        self.rooms.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Follows `room` as it was just read; the first follower starts its reader.
    pub fn follow(&self, db: &Database, room: Room) -> Followed {
        let mut rooms = self.lock();
        if let Some(entry) = rooms.get(&room.event_id) {
            entry.asked.store(self.now_ms(), Ordering::Relaxed);
            return entry.rx.clone();
        }
        self.start(&mut rooms, db, room)
    }

    /// The room as last read, for a visitor holding a pass to it; read from the database only
    /// when this process reads it for nobody else yet. `None` when the event has no room.
    pub async fn current(
        &self,
        db: &Database,
        event: Uuid,
    ) -> Result<Option<Room>, storage::Error> {
        {
            let rooms = self.lock();
            if let Some(entry) = rooms.get(&event) {
                entry.asked.store(self.now_ms(), Ordering::Relaxed);
                return Ok(entry.rx.borrow().clone());
            }
        }
        let Some(room) = rooms::watched(db, event).await? else {
            return Ok(None);
        };
        let mut rooms = self.lock();
        let rx = match rooms.get(&event) {
            Some(entry) => entry.rx.clone(),
            None => self.start(&mut rooms, db, room),
        };
        let current = rx.borrow().clone();
        Ok(current)
    }

    fn start(&self, rooms: &mut HashMap<Uuid, Entry>, db: &Database, room: Room) -> Followed {
        let event = room.event_id;
        let (tx, rx) = watch::channel(Some(room));
        let asked = Arc::new(AtomicU64::new(self.now_ms()));
        rooms.insert(
            event,
            Entry {
                rx: rx.clone(),
                asked: asked.clone(),
            },
        );
        tokio::spawn(read(self.clone(), db.clone(), event, tx, asked));
        rx
    }

    /// Stops reading `event` when nobody follows it and nobody asked for a while; true when
    /// stopped. Decided under the map's lock, so a reader arriving meanwhile either finds the
    /// entry or starts a new one.
    fn unfollowed(&self, event: Uuid, tx: &watch::Sender<Option<Room>>, asked: &AtomicU64) -> bool {
        let mut rooms = self.lock();
        let idle = self.now_ms().saturating_sub(asked.load(Ordering::Relaxed));
        // The map's own receiver is the one left.
        if tx.receiver_count() > 1 || idle < KEPT.as_millis() as u64 {
            return false;
        }
        rooms.remove(&event);
        true
    }
}

async fn read(
    watch: RoomWatch,
    db: Database,
    event: Uuid,
    tx: watch::Sender<Option<Room>>,
    asked: Arc<AtomicU64>,
) {
    loop {
        tokio::time::sleep(EVERY).await;
        if watch.unfollowed(event, &tx, &asked) {
            return;
        }
        match rooms::watched(&db, event).await {
            Ok(Some(room)) => {
                tx.send_if_modified(|seen| {
                    let changed = seen.as_ref() != Some(&room);
                    *seen = Some(room);
                    changed
                });
            }
            Ok(None) => {
                // Closed: followers are told, and the next one to come reads it afresh.
                tx.send_replace(None);
                watch.lock().remove(&event);
                return;
            }
            Err(e) => tracing::warn!(%event, error = %e, "cannot read a followed waiting room"),
        }
    }
}
