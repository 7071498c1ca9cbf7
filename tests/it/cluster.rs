//! The events cluster's leases (issue 17, first part): members share the shards out, one owner
//! per shard at a time, a leaver's shards are taken at once, a silent owner's after its lease
//! runs out, and a stale owner's transaction is fenced.

use crate::support::{TestDb, eventually};
use actors::cluster::{Held, Membership, MembershipSettings};
use domain::cluster::{SHARDS, ShardId, shard_of};
use std::collections::BTreeMap;
use std::time::Duration;
use storage::Scope;
use storage::cluster::{self, Fence, Lease};
use tokio::sync::watch;

fn settings(node: &str) -> MembershipSettings {
    MembershipSettings {
        node: node.into(),
        address: format!("http://{node}.test:8082"),
        renew_every: Duration::from_millis(100),
        lease_ttl: Duration::from_millis(600),
        fingerprint: "the cluster's".into(),
    }
}

struct Running {
    held: watch::Receiver<Held>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

fn start(t: &TestDb, node: &str) -> Running {
    start_with(t, settings(node))
}

fn start_with(t: &TestDb, settings: MembershipSettings) -> Running {
    let (membership, held, _) = Membership::new(t.db.clone(), settings);
    let (stop, stop_rx) = watch::channel(false);
    let task = tokio::spawn(membership.run(stop_rx));
    Running { held, stop, task }
}

/// Who holds each shard, as the database says.
async fn owners(t: &TestDb) -> BTreeMap<ShardId, Option<String>> {
    cluster::map(&t.db)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.shard, s.owner.map(|(node, _)| node)))
        .collect()
}

/// Waits until every shard is held by the member rendezvous hashing gives it among `nodes`
/// (not only by some member: right after a start, an early member still holds what a later
/// one wins, until it hands it over).
async fn settled(t: &TestDb, nodes: &[&str]) -> bool {
    let members: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    eventually(10, || async {
        owners(t)
            .await
            .into_iter()
            .all(|(shard, owner)| owner.as_deref() == domain::cluster::owner_of(shard, &members))
    })
    .await
}

/// A node started with other secrets (left over from an earlier start, or misconfigured)
/// heartbeats and is listed, but takes no shard from the cluster it could not serve.
#[tokio::test]
async fn a_node_with_other_secrets_takes_no_shards() {
    let t = TestDb::new().await;
    let _a = start(&t, "events-a");
    let _b = start(&t, "events-b");
    assert!(settled(&t, &["events-a", "events-b"]).await);
    let stranger = start_with(
        &t,
        MembershipSettings {
            fingerprint: "another secret's".into(),
            ..settings("events-d")
        },
    );
    // Rounds go by: it is a live member, and the shards stay with the two.
    assert!(
        eventually(5, || async {
            cluster::live_members(&t.db, Duration::from_secs(5))
                .await
                .unwrap()
                .iter()
                .any(|m| m.node == "events-d")
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(settled(&t, &["events-a", "events-b"]).await);
    assert!(
        owners(&t)
            .await
            .values()
            .all(|owner| owner.as_deref() != Some("events-d")),
        "the stranger owns nothing"
    );
    assert!(stranger.held.borrow().0.is_empty());
}

#[tokio::test]
async fn three_members_share_the_shards_and_take_over_from_one_that_leaves_or_falls_silent() {
    let t = TestDb::new().await;
    let a = start(&t, "events-a");
    let b = start(&t, "events-b");
    let c = start(&t, "events-c");
    assert!(
        settled(&t, &["events-a", "events-b", "events-c"]).await,
        "{:?}",
        owners(&t).await
    );
    // What each node believes it holds becomes what the database says (a claim is published
    // just after its commit), and beliefs never overlap on the way.
    let beliefs = || {
        [&a, &b, &c]
            .map(|r| r.held.borrow().0.len())
            .iter()
            .sum::<usize>()
    };
    assert!(
        eventually(5, || async {
            let held = beliefs();
            assert!(held <= usize::from(SHARDS), "overlapping beliefs: {held}");
            held == usize::from(SHARDS)
        })
        .await,
        "{}",
        beliefs()
    );

    // A clean leave hands the shards over without waiting for the leases to run out.
    let before = owners(&t).await;
    b.stop.send(true).unwrap();
    b.task.await.unwrap();
    assert!(settled(&t, &["events-a", "events-c"]).await);
    for (shard, owner) in owners(&t).await {
        if before[&shard].as_deref() != Some("events-b") {
            assert_eq!(before[&shard], owner, "shard {shard} moved without need");
        }
    }

    // A node that falls silent (its task gone, leases not released) loses them once they
    // run out, and the last member holds everything.
    c.task.abort();
    assert!(settled(&t, &["events-a"]).await);
    // Its belief follows the commit of its last claims.
    assert!(
        eventually(5, || async {
            a.held.borrow().0.len() == usize::from(SHARDS)
        })
        .await,
        "{}",
        a.held.borrow().0.len()
    );
}

#[tokio::test]
async fn a_stale_owner_commits_nothing() {
    let t = TestDb::new().await;
    let ttl = Duration::from_millis(300);
    let shard = shard_of(uuid::Uuid::now_v7());
    let first = cluster::claim(&t.db, "events-a", &[shard], ttl)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    let stale: Lease = first[0];
    // Another node cannot take a lease that still holds.
    assert!(
        cluster::claim(&t.db, "events-b", &[shard], ttl)
            .await
            .unwrap()
            .is_empty()
    );

    // A transaction of the owner holds the lease row: a takeover skips it until it commits.
    let fence = Fence::new("events-a", vec![stale]);
    let tx = t.db.begin(Scope::system()).await.unwrap();
    fence.check(&tx).await.unwrap();
    // The owner's own renewal does not wait for its transactions (it changes no key).
    let renewed = tokio::time::timeout(
        Duration::from_secs(2),
        cluster::renew(&t.db, "events-a", ttl),
    )
    .await
    .expect("a renewal never waits for the owner's fenced transactions")
    .unwrap();
    assert_eq!(renewed, vec![stale]);
    tokio::time::sleep(ttl + Duration::from_millis(100)).await;
    assert!(
        cluster::claim(&t.db, "events-b", &[shard], Duration::from_secs(5))
            .await
            .unwrap()
            .is_empty(),
        "no takeover while the old owner's commit is in flight"
    );
    tx.commit().await.unwrap();
    let taken = cluster::claim(&t.db, "events-b", &[shard], Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].epoch, stale.epoch + 1, "a new owner, a new epoch");

    // The old owner wakes up: its next transaction is refused, with the lease it thought it had.
    let tx = t.db.begin(Scope::system()).await.unwrap();
    match fence.check(&tx).await {
        Err(storage::Error::Fenced(f)) => assert_eq!((f.shard, f.epoch), (shard, stale.epoch)),
        other => panic!("a stale owner was not fenced: {other:?}"),
    }
    // Nor can it renew what it lost.
    assert!(
        cluster::renew(&t.db, "events-a", ttl)
            .await
            .unwrap()
            .is_empty()
    );
    let renewed = cluster::renew(&t.db, "events-b", ttl).await.unwrap();
    assert_eq!(renewed, taken);
}

#[tokio::test]
async fn postgres_and_rust_put_an_event_on_the_same_shard() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    for _ in 0..50 {
        let id = uuid::Uuid::now_v7();
        let shard: i32 = owner
            .query_one("SELECT get_byte(sha256(uuid_send($1)), 0)", &[&id])
            .await
            .unwrap()
            .get(0);
        assert_eq!(shard, i32::from(shard_of(id).0), "{id}");
    }
}

#[tokio::test]
async fn a_node_is_ready_only_once_it_holds_its_share_and_serves_nothing_before() {
    let t = TestDb::new().await;
    // Its former self (killed) still holds every lease for three seconds.
    let all: Vec<ShardId> = (0..SHARDS).map(|s| ShardId(s as u8)).collect();
    let same_secrets = bilet::node::secrets_fingerprint(&t.config);
    cluster::heartbeat(
        &t.db,
        "default-dead",
        "http://127.0.0.1:9/",
        &same_secrets,
        None,
    )
    .await
    .unwrap();
    cluster::claim(&t.db, "default-dead", &all, Duration::from_secs(3))
        .await
        .unwrap();
    let node = bilet::node::start(t.config.clone()).await.unwrap();
    let events = format!("http://{}", node.addrs[&domain::config::Service::Events]);
    let gateway = format!("http://{}", node.addrs[&domain::config::Service::Gateway]);
    let ready = crate::support::get(&format!("{events}/health/ready"), None).await;
    assert_eq!(ready.status, 503, "{}", ready.body);
    assert_eq!(ready.body["checks"]["shards"], "DOWN");
    // A seat request meanwhile is answered "retry": its shard has no usable owner. A read
    // needs no owner: it is answered from the database.
    let id = uuid::Uuid::now_v7();
    let early = crate::support::send(
        reqwest::Client::new()
            .post(format!("{gateway}/api/v1/events/{id}/registrations"))
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .bearer_auth(crate::ticketing::participant().1)
            .json(&serde_json::json!({"ticketTypeId": uuid::Uuid::now_v7(), "firstName": "A", "lastName": "B"})),
    )
    .await;
    assert_eq!(early.status, 503, "{}", early.body);
    assert_eq!(early.headers["retry-after"], "1");
    let read = crate::support::get(&format!("{gateway}/api/v1/events/{id}"), None).await;
    assert_eq!(read.status, 404, "{}", read.body);
    // Once the old leases run out, the node takes every shard and is ready.
    assert!(
        eventually(10, || async {
            crate::support::get(&format!("{events}/health/ready"), None)
                .await
                .status
                == 200
        })
        .await
    );
    let map = cluster::map(&t.db).await.unwrap();
    assert!(
        map.iter().all(|s| s.epoch == 2),
        "every shard taken at a new epoch"
    );
    let after = crate::support::get(&format!("{gateway}/api/v1/events/{id}"), None).await;
    assert_eq!(after.status, 404, "{}", after.body);
    node.stop().await;
}

/// The gateway's map routes only to members holding the gateway's secrets: a node with others
/// would refuse everything the gateway signs, so its shards count as without owner (the
/// gateway holds their requests until a member of its own takes them) and it is never picked
/// for requests any member can answer.
#[tokio::test]
async fn the_gateway_routes_only_to_members_with_its_secrets() {
    let t = TestDb::new().await;
    let ours = "the cluster's";
    cluster::heartbeat(&t.db, "events-a", "http://events-a.test:8082", ours, None)
        .await
        .unwrap();
    cluster::heartbeat(
        &t.db,
        "stranger",
        "http://stranger.test:8082",
        "another",
        None,
    )
    .await
    .unwrap();
    let (a, b) = (ShardId(0), ShardId(1));
    cluster::claim(&t.db, "events-a", &[a], Duration::from_secs(30))
        .await
        .unwrap();
    cluster::claim(&t.db, "stranger", &[b], Duration::from_secs(30))
        .await
        .unwrap();
    let map = actors::cluster::ShardMap::new(ours);
    let mut changes = map.changes();
    map.refresh(&t.db, Duration::from_secs(30)).await.unwrap();
    assert!(
        changes.has_changed().unwrap(),
        "a reading that changed the map is told"
    );
    changes.borrow_and_update();
    assert_eq!(map.owner(a).as_deref(), Some("http://events-a.test:8082"));
    assert_eq!(
        map.owner(b),
        None,
        "the stranger's shard has no owner the gateway trusts"
    );
    for _ in 0..4 {
        assert_eq!(
            map.any_member().as_deref(),
            Some("http://events-a.test:8082")
        );
    }
    assert!(!map.is_member("http://stranger.test:8082"));
    map.refresh(&t.db, Duration::from_secs(30)).await.unwrap();
    assert!(
        !changes.has_changed().unwrap(),
        "the same reading changes nothing"
    );
}
