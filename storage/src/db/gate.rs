//! How many of a pool's connections may be in use at once: the pool's size, less what
//! PostgreSQL has just refused to open.
//!
//! A pool with no idle connection opens a new one for the next request. When the server has
//! no room left for the role (its `CONNECTION LIMIT`, or `max_connections`: several processes
//! whose pools together exceed what the server allows), every such request cost the server a
//! backend started and refused, and its caller a 503 — tens of thousands in a burst, while
//! the pool's own connections were about to come back. The gate withholds one place for each
//! refusal instead, so the request waits for a connection of the pool's own (within the
//! pool's wait), and the pool stays at the size the server let it reach. Each round of the
//! pool's upkeep gives the places back, so a pool grows again once the server has room.

use deadpool_postgres::{Object, Pool, PoolError};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The places of one pool.
pub(super) struct Gate {
    places: Arc<Semaphore>,
    /// Places taken back after a refusal, returned by `reopen`.
    withheld: AtomicUsize,
}

/// A connection of the pool with its place: both go back when it is dropped.
pub struct Connection {
    // Declared first, so dropped first: the connection is back in the pool before the place
    // it held lets the next request in.
    object: Object,
    _place: OwnedSemaphorePermit,
}

impl Connection {
    /// Takes the connection out of the pool for good, closed when the session it returns is
    /// dropped: for a session whose state is unknown, or one kept for a lock of its own. Its
    /// place goes back to the pool, which may open another.
    pub fn detach(self) -> deadpool_postgres::ClientWrapper {
        Object::take(self.object)
    }
}

impl Deref for Connection {
    type Target = Object;

    fn deref(&self) -> &Object {
        &self.object
    }
}

impl DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Object {
        &mut self.object
    }
}

/// Whether opening a connection failed because the server has no room for it.
fn refused_for_room(error: &PoolError) -> bool {
    matches!(error, PoolError::Backend(e)
        if e.code() == Some(&tokio_postgres::error::SqlState::TOO_MANY_CONNECTIONS))
}

impl Gate {
    pub(super) fn new(size: usize) -> Gate {
        Gate {
            places: Arc::new(Semaphore::new(size)),
            withheld: AtomicUsize::new(0),
        }
    }

    /// A connection of `pool`, waiting up to `wait` for a place.
    pub(super) async fn get(&self, pool: &Pool, wait: Duration) -> Result<Connection, PoolError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let place = tokio::time::timeout_at(deadline, self.places.clone().acquire_owned())
                .await
                .map_err(|_| PoolError::Timeout(deadpool_postgres::TimeoutType::Wait))?
                .map_err(|_| PoolError::Closed)?;
            match pool.get().await {
                Ok(object) => {
                    return Ok(Connection {
                        object,
                        _place: place,
                    });
                }
                // A pool with none of its own to wait for answers at once, as before.
                Err(e) if refused_for_room(&e) && pool.status().size > 0 => {
                    place.forget();
                    self.withheld.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(
                        "the server has no room for another connection; waiting for one of the pool's own"
                    );
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Gives back the places withheld since the last round.
    pub(super) fn reopen(&self) {
        let back = self.withheld.swap(0, Ordering::Relaxed);
        if back > 0 {
            self.places.add_permits(back);
        }
    }
}
