//! The installation's connection budget: the operator sets once how many connections all of its
//! processes together may open to PostgreSQL (`database.max_connections`), and each process
//! takes its share by the services it runs, after the connections of its own it always keeps
//! (its life line, a gateway's LISTEN sessions, an events node's membership pool). One process
//! per `[[nodes]]` entry is assumed: copies of a node need entries of their own.

use crate::config::Service;

/// Connections a process with `services` opens besides its pool, with `committers` seat
/// committers (`ticketing.committers`) on an events node.
pub fn fixed(services: &[Service], committers: u32) -> u32 {
    // The life line (crate `storage::liveness`).
    let mut fixed = 1;
    if services.contains(&Service::Gateway) {
        // LISTEN for the shard map and for revocations, and the revocations' reading (their
        // own, so a flood holding the pool cannot make the door refuse every token).
        fixed += 3;
    }
    if services.contains(&Service::Events) {
        // The membership's own pool, so a busy node never misses a renewal.
        fixed += 2;
        // The seat committer's own pool (`committer_pool`).
        fixed += committer_pool(committers);
    }
    fixed
}

/// The connections of an events node's seat committer, which runs on a runtime of its own: one
/// for each worker's transaction, and as many again for the batches a failed joint transaction
/// commits one by one.
pub fn committer_pool(committers: u32) -> u32 {
    committers.max(1) * 2
}

/// How much of the shared pool a process with `services` takes: the seat path weighs most.
pub fn weight(services: &[Service]) -> u32 {
    services
        .iter()
        .map(|s| match s {
            Service::Events => 4,
            Service::Gateway => 0,
            _ => 1,
        })
        .sum::<u32>()
        .max(1)
}

/// Fewest connections a pool is given, whatever the budget.
pub const MIN_POOL: u32 = 2;

/// The pool size of the process running `mine` in an installation whose processes run `all`
/// (each a `[[nodes]]` entry, `mine` among them) under a budget of `budget` connections.
pub fn pool_share(budget: u32, all: &[Vec<Service>], mine: &[Service], committers: u32) -> u32 {
    let fixed_total: u32 = all.iter().map(|s| fixed(s, committers)).sum();
    let weights: u32 = all.iter().map(|s| weight(s)).sum::<u32>().max(1);
    let shared = budget.saturating_sub(fixed_total);
    (shared * weight(mine) / weights).max(MIN_POOL)
}

/// Connections the process running `services` may open with a pool of `pool`.
pub fn ceiling(services: &[Service], pool: u32, committers: u32) -> u32 {
    pool + fixed(services, committers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Service::*;

    #[test]
    fn six_processes_share_sixty_connections_and_never_exceed_them() {
        let all = vec![
            vec![Gateway],
            vec![Identity, Notifications, Analytics, Media],
            vec![Events],
            vec![Events],
            vec![Events],
            vec![Events],
        ];
        let pools: Vec<u32> = all.iter().map(|s| pool_share(60, &all, s, 2)).collect();
        // Fixed: 4 + 1 + 4 × (3 + 4) = 33; 27 shared by weights 1 + 4 + 4 × 4 = 21.
        assert_eq!(pools, vec![2, 5, 5, 5, 5, 5]);
        let total: u32 = all.iter().zip(&pools).map(|(s, p)| ceiling(s, *p, 2)).sum();
        assert!(total <= 60, "{total}");
    }

    #[test]
    fn one_process_takes_the_whole_budget_but_its_own_connections() {
        let all = vec![Service::ALL.to_vec()];
        assert_eq!(pool_share(100, &all, &all[0], 2), 100 - 10);
    }

    #[test]
    fn a_budget_too_small_still_leaves_each_pool_its_minimum() {
        let all = vec![vec![Events], vec![Events]];
        assert_eq!(pool_share(6, &all, &all[0], 2), MIN_POOL);
    }
}
