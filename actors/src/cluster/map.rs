//! The gateway's map of the events cluster: which node's address owns each shard, and which
//! members are alive. It is read on every request without waiting, and refreshed from
//! PostgreSQL when an owner changes (NOTIFY) and by polling, so a lost notification only
//! delays a change. Only members holding the gateway's own secrets count: a node started with
//! other secrets would refuse every request the gateway signs, so it is never routed to.

use domain::cluster::{SHARDS, ShardId};
use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use storage::Database;
use storage::cluster;
use tokio::sync::{Notify, watch};

#[derive(Default, PartialEq)]
struct View {
    /// The owner's address of each shard (empty while a shard has no owner).
    owners: Vec<Option<Arc<str>>>,
    /// Addresses of live members.
    members: Vec<Arc<str>>,
}

/// Who owns which shard, as last read.
#[derive(Clone)]
pub struct ShardMap {
    view: Arc<RwLock<View>>,
    next: Arc<AtomicUsize>,
    /// The gateway's fingerprint of the cluster secrets: members with another are left out.
    fingerprint: Arc<str>,
    /// Counts the readings that changed the map, for requests waiting on a hand-over.
    changes: watch::Sender<u64>,
}

impl ShardMap {
    /// An empty map (every shard without owner until the first refresh) of the members whose
    /// fingerprint of the cluster secrets is `fingerprint`.
    pub fn new(fingerprint: impl Into<Arc<str>>) -> ShardMap {
        ShardMap {
            view: Arc::default(),
            next: Arc::default(),
            fingerprint: fingerprint.into(),
            changes: watch::channel(0).0,
        }
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

    /// Whether `address` is a live member's (trailing slashes aside).
    pub fn is_member(&self, address: &str) -> bool {
        let view = self.view.read().unwrap_or_else(|p| p.into_inner());
        view.members
            .iter()
            .any(|m| m.trim_end_matches('/') == address.trim_end_matches('/'))
    }

    /// A receiver told of every reading that changed the map.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Reads the map again.
    pub async fn refresh(
        &self,
        db: &Database,
        member_timeout: Duration,
    ) -> Result<(), storage::DbError> {
        let shards = cluster::map(db).await?;
        let members: Vec<cluster::Member> = cluster::live_members(db, member_timeout)
            .await?
            .into_iter()
            // A member whose clock is off owns nothing and takes no request either.
            .filter(|m| {
                *m.fingerprint == *self.fingerprint && !domain::clock::too_far_off(m.clock_off)
            })
            .collect();
        let trusted: HashSet<&str> = members.iter().map(|m| m.node.as_str()).collect();
        let mut owners: Vec<Option<Arc<str>>> = vec![None; usize::from(SHARDS)];
        for state in &shards {
            if let Some(slot) = owners.get_mut(usize::from(state.shard.0)) {
                *slot = state
                    .owner
                    .as_ref()
                    .filter(|(node, _)| trusted.contains(node.as_str()))
                    .map(|(_, address)| Arc::from(address.as_str()));
            }
        }
        let members = members
            .iter()
            .map(|m| Arc::from(m.address.as_str()))
            .collect();
        self.show(owners, members);
        Ok(())
    }

    /// Takes a reading: `owners` by shard, the live `members`' addresses. Waiting requests are
    /// told only when it differs from the last.
    pub fn show(&self, owners: Vec<Option<Arc<str>>>, members: Vec<Arc<str>>) {
        let view = View { owners, members };
        let mut current = self.view.write().unwrap_or_else(|p| p.into_inner());
        if *current != view {
            *current = view;
            drop(current);
            self.changes.send_modify(|n| *n += 1);
        }
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
