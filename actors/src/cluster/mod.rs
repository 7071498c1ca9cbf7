//! The events cluster: each node's membership (heartbeat, leases, its share of the shards),
//! what the node owns as the ticketing actors and sweeps see it, and the shard map a gateway
//! routes by.

mod map;
mod membership;
mod ownership;

pub use map::ShardMap;
pub use membership::{Held, Membership, MembershipCounts, MembershipSettings};
pub use ownership::Ownership;
