//! Whether this process can verify its peers. Every process of an installation announces, in
//! the database they share, a fingerprint of its service secret (`domain::trust::fingerprint`);
//! readiness compares its own with those of the processes seen lately. A process whose secret
//! differs from the others' would answer every call with 401 and see its own calls refused,
//! while database and broker look fine: it says DOWN with the reason, so a load balancer stops
//! sending it traffic and the operator reads why.

use domain::config::Config;
use std::sync::Arc;
use std::time::Duration;
use storage::Database;
use storage::peers::Peer;
use tokio::sync::watch;

/// How often a process renews its announcement.
pub const ANNOUNCE_EVERY: Duration = Duration::from_secs(5);

/// How long after its last announcement a process still counts: three missed renewals, so a
/// slow database does not make the cluster forget a live member.
pub const SEEN_WITHIN: Duration = Duration::from_secs(15);

/// This process as its peers see it.
#[derive(Clone, Debug)]
pub struct Peers {
    me: Arc<Peer>,
}

impl Peers {
    /// This process: a random id per start, its node, its services and its secret's
    /// fingerprint (a process given no secret gets a random one, like `Trust::from_config`,
    /// and so matches no one).
    pub fn new(config: &Config) -> Peers {
        let secret: Vec<u8> = match &config.auth.service_secret {
            Some(s) if !s.expose().is_empty() => s.expose().as_bytes().to_vec(),
            _ => rand::random::<[u8; 32]>().to_vec(),
        };
        let services = config
            .current_node()
            .map(|n| {
                n.services
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        Peers {
            me: Arc::new(Peer {
                process: uuid::Uuid::new_v4().simple().to_string(),
                node: config.node.clone(),
                services,
                fingerprint: domain::trust::fingerprint(&secret),
                connections: i32::try_from(config.connection_ceiling()).unwrap_or(i32::MAX),
            }),
        }
    }

    /// This process's id in `platform.peers`.
    pub fn process(&self) -> &str {
        &self.me.process
    }

    /// Announces this process now.
    pub async fn announce(&self, db: &Database) -> Result<(), storage::DbError> {
        storage::peers::announce(db, &self.me).await
    }

    /// Announces this process every [`ANNOUNCE_EVERY`] until `stop`, then withdraws it so
    /// the others stop comparing with a process that is gone.
    pub async fn run(self, db: Database, mut stop: watch::Receiver<bool>) {
        loop {
            if let Err(e) = self.announce(&db).await {
                tracing::warn!(error = %e, "cannot announce this process to its peers");
            }
            tokio::select! {
                _ = stop.changed() => break,
                _ = tokio::time::sleep(ANNOUNCE_EVERY) => {}
            }
        }
        if let Err(e) = storage::peers::leave(&db, &self.me.process).await {
            tracing::warn!(error = %e, "cannot withdraw this process from its peers");
        }
    }

    /// A warning when the live processes' pools could open more connections than PostgreSQL
    /// allows the installation (none when they fit, or cannot be read now).
    pub async fn connection_warning(&self, db: &Database) -> Option<String> {
        storage::peers::connection_budget(db, SEEN_WITHIN)
            .await
            .ok()
            .and_then(|budget| budget.warning())
    }

    /// Whether this process agrees with its live peers: `Err` says why not. Announces itself
    /// first, so a process that has just started is counted by the others' next check too.
    pub async fn check(&self, db: &Database) -> Result<(), String> {
        let seen = async {
            self.announce(db).await?;
            storage::peers::seen_within(db, SEEN_WITHIN).await
        };
        match seen.await {
            Ok(peers) => judge(&self.me, &peers),
            Err(e) => Err(format!("cannot read the other processes: {e}")),
        }
    }
}

/// The verdict on `me` given the processes seen lately. A process agrees when no live peer has
/// another fingerprint, or when its fingerprint is strictly the most common one: the odd
/// process out says DOWN and the others stay up, rather than one misconfigured process taking
/// every other out of the load balancer. When no fingerprint is the most common (two processes
/// that disagree), every side says DOWN, since none can tell which secret is the right one.
pub fn judge(me: &Peer, peers: &[Peer]) -> Result<(), String> {
    let others: Vec<&Peer> = peers.iter().filter(|p| p.process != me.process).collect();
    let differing: Vec<&Peer> = others
        .iter()
        .copied()
        .filter(|p| p.fingerprint != me.fingerprint)
        .collect();
    if differing.is_empty() {
        return Ok(());
    }
    let all: Vec<&str> = others
        .iter()
        .map(|p| p.fingerprint.as_str())
        .chain([me.fingerprint.as_str()])
        .collect();
    let count = |fingerprint: &str| all.iter().filter(|f| **f == fingerprint).count();
    let mine = count(&me.fingerprint);
    let largest_other = differing
        .iter()
        .map(|p| count(&p.fingerprint))
        .max()
        .unwrap_or(0);
    if mine > largest_other {
        return Ok(());
    }
    let mut names: Vec<String> = differing
        .iter()
        .map(|p| format!("{} ({})", p.node, p.services))
        .collect();
    names.dedup();
    Err(format!(
        "SERVICE_SECRET differs from that of {} of the {} other live processes: {}; this \
         process cannot verify their requests nor they its own (give every process the same \
         SERVICE_SECRET)",
        differing.len(),
        others.len(),
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(process: &str, fingerprint: &str) -> Peer {
        Peer {
            process: process.into(),
            node: format!("node-{process}"),
            services: "gateway".into(),
            fingerprint: fingerprint.into(),
            connections: 8,
        }
    }

    #[test]
    fn alone_or_in_agreement_is_up() {
        let me = peer("a", "f1");
        assert_eq!(judge(&me, &[]), Ok(()));
        assert_eq!(judge(&me, std::slice::from_ref(&me)), Ok(()));
        assert_eq!(judge(&me, &[me.clone(), peer("b", "f1")]), Ok(()));
    }

    #[test]
    fn a_tie_is_down_on_both_sides() {
        let a = peer("a", "f1");
        let b = peer("b", "f2");
        let both = [a.clone(), b.clone()];
        let why = judge(&a, &both).unwrap_err();
        assert!(
            why.contains("SERVICE_SECRET differs from that of 1 of the 1 other live processes"),
            "{why}"
        );
        assert!(why.contains("node-b (gateway)"), "{why}");
        assert!(judge(&b, &both).is_err());
    }

    #[test]
    fn the_odd_one_out_is_down_and_the_others_stay_up() {
        let all = [peer("a", "f1"), peer("b", "f1"), peer("c", "f2")];
        assert_eq!(judge(&all[0], &all), Ok(()));
        assert_eq!(judge(&all[1], &all), Ok(()));
        let why = judge(&all[2], &all).unwrap_err();
        assert!(why.contains("2 of the 2"), "{why}");
        // Counted even before its own row is visible.
        assert_eq!(judge(&all[0], &all[1..]), Ok(()));
    }
}
