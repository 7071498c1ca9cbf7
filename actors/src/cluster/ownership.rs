//! What this node owns, as its actors and sweeps see it: the held leases (published by the
//! membership) turned into fences for writes, and the count of writes the database refused
//! because a lease had moved on.

use super::{Held, MembershipCounts};
use domain::cluster::{ShardId, shard_of};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use storage::cluster::{Fence, Lease};
use tokio::sync::watch;
use uuid::Uuid;

/// The node's name, its held shards, and its fenced-commit count; cheap to clone.
#[derive(Clone)]
pub struct Ownership {
    node: Arc<str>,
    held: watch::Receiver<Held>,
    counts: Option<watch::Receiver<MembershipCounts>>,
    fenced: Arc<AtomicU64>,
}

impl Ownership {
    /// `node` owning what `held` says, its membership counting in `counts`.
    pub fn new(
        node: impl Into<Arc<str>>,
        held: watch::Receiver<Held>,
        counts: watch::Receiver<MembershipCounts>,
    ) -> Ownership {
        Ownership {
            node: node.into(),
            held,
            counts: Some(counts),
            fenced: Arc::new(AtomicU64::new(0)),
        }
    }

    /// A node that owns nothing (it runs no events service).
    pub fn none() -> Ownership {
        let (_, held) = watch::channel(Held::default());
        Ownership {
            node: "none".into(),
            held,
            counts: None,
            fenced: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Whether the node takes part in the events cluster (it runs the events service).
    pub fn takes_part(&self) -> bool {
        self.counts.is_some()
    }

    /// Whether the node holds its whole share of the shards now (ready to serve its events).
    pub fn is_settled(&self) -> bool {
        // A membership gone (its thread panicked) renews nothing: not settled, whatever it
        // last said.
        self.counts
            .as_ref()
            .is_none_or(|c| c.has_changed().is_ok() && c.borrow().settled)
    }

    /// The membership's counts (renewals, hand-overs), for a node that takes part.
    pub fn counts(&self) -> MembershipCounts {
        self.counts
            .as_ref()
            .map(|c| *c.borrow())
            .unwrap_or_default()
    }

    /// The node's name in the cluster.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The lease of `shard`, if held now.
    pub fn lease(&self, shard: ShardId) -> Option<Lease> {
        self.held.borrow().lease(shard)
    }

    /// The fence for writes about `event`, if this node holds its shard.
    pub fn fence_of(&self, event: Uuid) -> Option<Fence> {
        self.lease(shard_of(event))
            .map(|lease| Fence::new(self.node.clone(), vec![lease]))
    }

    /// The fence over every shard held now (the sweeps').
    pub fn fence(&self) -> Fence {
        let leases = self
            .held
            .borrow()
            .0
            .iter()
            .map(|(shard, epoch)| Lease {
                shard: *shard,
                epoch: *epoch,
            })
            .collect();
        Fence::new(self.node.clone(), leases)
    }

    /// How many shards are held now.
    pub fn shards_held(&self) -> usize {
        self.held.borrow().0.len()
    }

    /// Resolves once `lease` is no longer held (lost, handed over, or held at another epoch).
    pub async fn lost(&self, lease: Lease) {
        let mut held = self.held.clone();
        if held
            .wait_for(|h| h.lease(lease.shard) != Some(lease))
            .await
            .is_err()
        {
            // The membership is gone: nothing is proven any more.
        }
    }

    /// A receiver of every change of what is held.
    pub fn changes(&self) -> watch::Receiver<Held> {
        self.held.clone()
    }

    /// Counts a write the database refused because its lease had moved on.
    pub fn count_fenced(&self) {
        self.fenced.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes refused so far.
    pub fn fenced(&self) -> u64 {
        self.fenced.load(Ordering::Relaxed)
    }
}
