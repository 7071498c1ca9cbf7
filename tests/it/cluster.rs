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

/// A node whose request runtime cannot poll anything (here blocked outright, three times a
/// lease's trust) keeps its shards: the membership renews them from a thread and a runtime of
/// its own, with connections of its own (`Membership::start`).
#[tokio::test]
async fn a_runtime_too_busy_to_poll_does_not_cost_the_node_its_shards() {
    let t = TestDb::new().await;
    let db = storage::Database::connect(&domain::config::DatabaseConfig {
        pool_size: 2,
        ..t.config.database.clone()
    })
    .unwrap();
    let (membership, held, counts) = Membership::new(db, settings("events-a"));
    let (stop, stop_rx) = watch::channel(false);
    let task = membership.start(stop_rx).await;
    // Joined before `start` answered: the node starts serving with its share.
    assert_eq!(held.borrow().0.len(), usize::from(SHARDS));
    let epochs = |map: Vec<cluster::ShardState>| map.iter().map(|s| s.epoch).collect::<Vec<_>>();
    let before = epochs(cluster::map(&t.db).await.unwrap());
    let renewals = counts.borrow().renewals;
    // This test's runtime is the only one it has: nothing else of it runs meanwhile.
    std::thread::sleep(Duration::from_millis(1500));
    let after = *counts.borrow();
    assert_eq!(after.lost, 0, "{after:?}");
    assert!(after.renewals >= renewals + 5, "{after:?}");
    assert_eq!(held.borrow().0.len(), usize::from(SHARDS));
    assert_eq!(
        epochs(cluster::map(&t.db).await.unwrap()),
        before,
        "no shard changed hands"
    );
    stop.send(true).unwrap();
    task.await.unwrap();
    assert!(
        owners(&t).await.values().all(|o| o.is_none()),
        "the shards were handed back on leaving"
    );
}

/// How many published events each member holds by its leases.
async fn on_sale_by_member(owner: &tokio_postgres::Client) -> BTreeMap<String, i64> {
    owner
        .query(
            "SELECT l.owner, count(*) FROM event_service.events e
             JOIN event_service.shard_leases l ON l.shard = e.shard
               AND l.expires_at > clock_timestamp()
             WHERE e.status = 'PUBLISHED' GROUP BY l.owner",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// Rendezvous hashing spreads shards, not the events on sale in them: with every published
/// event in one member's shards, the members share the loaded shards out so none holds more
/// than its part, drafts count for nothing, and while shards pass over no two members believe
/// they hold the same one.
#[tokio::test]
async fn the_events_on_sale_are_shared_out_evenly_among_the_members() {
    let t = TestDb::new().await;
    let nodes = ["events-a", "events-b", "events-c"];
    let running: Vec<Running> = nodes.iter().map(|n| start(&t, n)).collect();
    assert!(settled(&t, &nodes).await);
    let owner = t.owner().await;
    let tenant = uuid::Uuid::now_v7();
    // Every published event in a shard rendezvous hashing gives events-a: without the
    // placement, one member would hold all 64.
    let members: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    let in_a = || loop {
        let event = uuid::Uuid::new_v4();
        if domain::cluster::owner_of(shard_of(event), &members) == Some("events-a") {
            return event;
        }
    };
    let insert = |event: uuid::Uuid, status: &str| {
        format!(
            "INSERT INTO event_service.events (id, tenant_id, organizer_id, title, slug, status, starts_at)
               VALUES ('{event}', '{tenant}', '{tenant}', 'E', 'e-{event}', '{status}', now() + interval '3 days');"
        )
    };
    let published: Vec<uuid::Uuid> = (0..64).map(|_| in_a()).collect();
    let mut by_shard: BTreeMap<ShardId, i64> = BTreeMap::new();
    for event in &published {
        *by_shard.entry(shard_of(*event)).or_default() += 1;
    }
    // Within the part (22), or the part and the heaviest shard less one when shards holding
    // several events leave the room in pieces (`domain::cluster::placement`).
    let most = 22 + by_shard.values().max().copied().unwrap_or(1) - 1;
    let seed: String = published
        .iter()
        .map(|event| insert(*event, "PUBLISHED"))
        .chain((0..64).map(|_| insert(uuid::Uuid::new_v4(), "DRAFT")))
        .collect();
    owner.batch_execute(&seed).await.unwrap();
    let beliefs = || {
        running
            .iter()
            .map(|r| r.held.borrow().0.len())
            .sum::<usize>()
    };
    assert!(
        eventually(10, || async {
            assert!(beliefs() <= usize::from(SHARDS), "overlapping beliefs");
            let spread = on_sale_by_member(&owner).await;
            spread.values().sum::<i64>() == 64
                && spread.len() == 3
                && spread.values().all(|n| *n <= most)
        })
        .await,
        "{:?}",
        on_sale_by_member(&owner).await
    );
    // Every shard still has one owner, and each member's belief follows the database.
    assert!(
        eventually(5, || async {
            beliefs() == usize::from(SHARDS) && owners(&t).await.values().all(|o| o.is_some())
        })
        .await
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
