//! The gateway's map of the events cluster: which node's address owns each shard, and which
//! members are alive. It is read on every request without waiting, and refreshed from
//! PostgreSQL when an owner changes (NOTIFY) and by polling, so a lost notification only
//! delays a change.

use domain::cluster::{SHARDS, ShardId};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use storage::Database;
use storage::cluster;
use tokio::sync::{Notify, watch};

#[derive(Default)]
struct View {
    /// The owner's address of each shard (empty while a shard has no owner).
    owners: Vec<Option<Arc<str>>>,
    /// Addresses of live members.
    members: Vec<Arc<str>>,
}

/// Who owns which shard, as last read.
#[derive(Clone, Default)]
pub struct ShardMap {
    view: Arc<RwLock<View>>,
    next: Arc<AtomicUsize>,
}

impl ShardMap {
    /// An empty map (every shard without owner until the first refresh).
    pub fn new() -> ShardMap {
        ShardMap::default()
    }

    /// The address of the owner of `shard`, if it has one.
    pub fn owner(&self, shard: ShardId) -> Option<Arc<str>> {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.owners.get(usize::from(shard.0)).cloned().flatten()
    }

    /// A live member's address, taken in turn (for requests any member can answer).
    pub fn any_member(&self) -> Option<Arc<str>> {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        if view.members.is_empty() {
            return None;
        }
        let turn = self.next.fetch_add(1, Ordering::Relaxed);
        view.members.get(turn % view.members.len()).cloned()
    }

    /// Reads the map again.
    pub async fn refresh(
        &self,
        db: &Database,
        member_timeout: Duration,
    ) -> Result<(), storage::DbError> {
        let shards = cluster::map(db).await?;
        let members = cluster::live_members(db, member_timeout).await?;
        let mut owners: Vec<Option<Arc<str>>> = vec![None; usize::from(SHARDS)];
        for state in shards {
            if let Some(slot) = owners.get_mut(usize::from(state.shard.0)) {
                *slot = state.owner.map(|(_, address)| Arc::from(address.as_str()));
            }
        }
        let members = members
            .into_iter()
            .map(|m| Arc::from(m.address.as_str()))
            .collect();
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = View { owners, members };
        Ok(())
    }

    /// Keeps the map fresh until `stop` changes: on every NOTIFY of a change of owners and at
    /// least every `poll`.
    pub async fn run(
        self,
        db: Database,
        poll: Duration,
        member_timeout: Duration,
        mut stop: watch::Receiver<bool>,
    ) {
        let changed = Arc::new(Notify::new());
        let wake = changed.clone();
        let listener = tokio::spawn(storage::db::listen(
            db.login(),
            cluster::CHANNEL,
            move |_| wake.notify_one(),
            stop.clone(),
        ));
        loop {
            if let Err(e) = self.refresh(&db, member_timeout).await {
                tracing::warn!(error = %e, "shard map not refreshed");
            }
            tokio::select! {
                _ = changed.notified() => {}
                _ = tokio::time::sleep(poll) => {}
                _ = stop.changed() => break,
            }
        }
        listener.abort();
    }
}
