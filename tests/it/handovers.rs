//! A cluster nobody notices, in one process: a shard claimed again at a new epoch while
//! requests of the old one are in flight answers no 503 and leaves no stale actor; a
//! ticket-type actor that panics mid-burst is started again and its requests are answered,
//! the other types unaffected; one that keeps failing is given up by its event actor, whose
//! supervisor counts it, and its requests are still answered.

use crate::identity::Ctx;
use crate::ticketing::{audit, participant, register, setup};
use domain::cluster::shard_of;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use uuid::Uuid;

/// A participant's seat request, sent again (same key) while the platform answers 503 with
/// Retry-After, as a client would: the final answer and how many 503 it saw. A 500 fails.
async fn patient_register(ctx: &Ctx, event: &str, ticket_type: &str) -> (u16, usize) {
    let (_, token) = participant();
    let key = Uuid::new_v4().to_string();
    for unavailable in 0..100 {
        let reply = register(ctx, &token, event, ticket_type, &key).await;
        assert_ne!(reply.status, 500, "never a 500: {}", reply.body);
        if reply.status != 503 {
            return (reply.status, unavailable);
        }
        assert_eq!(reply.headers["retry-after"], "1", "{}", reply.body);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no answer but 503 after 100 tries");
}

async fn second_type(ctx: &Ctx, owner: &str, event: &str, quantity: i64) -> String {
    let t = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(owner),
            json!({"name": "Second", "quantity": quantity}),
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.body);
    t.body["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_shard_claimed_again_at_a_new_epoch_answers_no_503_and_leaves_no_stale_actor() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 1000})).await;
    let event_id: Uuid = event.parse().unwrap();
    let shard = shard_of(event_id);
    let epoch = || async {
        let row = ctx
            .t
            .owner()
            .await
            .query_one(
                "SELECT epoch FROM event_service.shard_leases WHERE shard = $1",
                &[&shard.as_i16()],
            )
            .await
            .unwrap();
        row.get::<_, i64>(0)
    };
    let first = epoch().await;
    let burst = futures_util::future::join_all((0..300).map(|i| {
        let (ctx, event, ticket_type) = (&ctx, &event, &ticket_type);
        async move {
            tokio::time::sleep(Duration::from_millis(i * 5)).await;
            patient_register(ctx, event, ticket_type).await
        }
    }));
    // Meanwhile the lease runs out under the node three times: each time its next round
    // claims the shard again, at a new epoch, with requests of the old epoch in flight.
    let reclaim = async {
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(350)).await;
            let before = epoch().await;
            ctx.t
                .owner()
                .await
                .execute(
                    "UPDATE event_service.shard_leases SET expires_at = clock_timestamp() WHERE shard = $1",
                    &[&shard.as_i16()],
                )
                .await
                .unwrap();
            assert!(
                crate::support::eventually(5, || async { epoch().await > before }).await,
                "the node claims its shard again"
            );
        }
    };
    let (answers, ()) = tokio::join!(burst, reclaim);
    let last = epoch().await;
    assert!(
        last >= first + 3,
        "claimed again three times: {first} -> {last}"
    );
    let unavailable: usize = answers.iter().map(|(_, n)| n).sum();
    assert!(
        answers.iter().all(|(status, _)| *status == 201),
        "{answers:?}"
    );
    assert_eq!(
        unavailable, 0,
        "no 503 while the node claims its own shard again"
    );
    assert_eq!(audit(&ctx, &ticket_type).await, (300, 0, 300, 0));
    let running = ctx.ticketing().actor_lease(event_id).map(|l| l.epoch);
    assert!(
        running.is_none_or(|epoch| epoch == last),
        "no actor of an older lease runs: {running:?}, newest {last}"
    );
    let (status, unavailable) = patient_register(&ctx, &event, &ticket_type).await;
    assert_eq!((status, unavailable), (201, 0));
    let running = ctx.ticketing().actor_lease(event_id).map(|l| l.epoch);
    assert_eq!(
        running,
        Some(last),
        "the running actor works under the newest lease"
    );
}

#[tokio::test]
async fn a_ticket_type_actor_that_panics_mid_burst_is_started_again_and_answers() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, failing) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 300})).await;
    let steady = second_type(&ctx, &owner.access, &event, 300).await;
    let failing_id: Uuid = failing.parse().unwrap();
    let burst = |count: u64| {
        futures_util::future::join_all((0..count).map(|i| {
            let (ctx, event) = (&ctx, &event);
            let ticket_type = if i % 2 == 0 { &failing } else { &steady };
            async move {
                tokio::time::sleep(Duration::from_millis(i * 2)).await;
                (
                    ticket_type.clone(),
                    patient_register(ctx, event, ticket_type).await,
                )
            }
        }))
    };
    let (answers, ()) = tokio::join!(burst(200), async {
        // Mid-burst: two flushes of one type panic with their batches pending.
        tokio::time::sleep(Duration::from_millis(100)).await;
        actors::faults::panic_on_flushes(failing_id, 2);
    });
    assert_eq!(
        actors::faults::panics_left(failing_id),
        0,
        "both panics happened"
    );
    assert!(
        answers.iter().all(|(_, (status, _))| *status == 201),
        "{answers:?}"
    );
    let steady_unavailable: usize = answers
        .iter()
        .filter(|(t, _)| *t == steady)
        .map(|(_, (_, n))| n)
        .sum();
    assert_eq!(steady_unavailable, 0, "the other type never noticed");
    assert_eq!(audit(&ctx, &failing).await, (100, 0, 100, 0));
    assert_eq!(audit(&ctx, &steady).await, (100, 0, 100, 0));
    assert_eq!(
        ctx.ticketing().failures(),
        0,
        "restarts stayed inside the event actor"
    );

    // A type that keeps failing (six times in a row): the event actor gives up after five
    // restarts, its supervisor counts it, and a fresh event actor answers.
    actors::faults::panic_on_flushes(failing_id, 6);
    let (status, unavailable) = patient_register(&ctx, &event, &failing).await;
    assert_eq!(status, 201);
    assert_eq!(actors::faults::panics_left(failing_id), 0);
    assert_eq!(
        ctx.ticketing().failures(),
        1,
        "the event actor's failure was seen"
    );
    eprintln!("a type failing six times: answered after {unavailable} clean 503");
    let (status, unavailable) = patient_register(&ctx, &event, &steady).await;
    assert_eq!((status, unavailable), (201, 0));
    assert_eq!(audit(&ctx, &failing).await, (101, 0, 101, 0));
}

/// A TCP proxy in front of PostgreSQL that can stop forwarding without closing anything: a
/// dropped route or a hung server, as a node sees it.
struct Freezer {
    port: u16,
    frozen: Arc<AtomicBool>,
}

/// Copies `from` to `to`, holding back what it read while `frozen`.
async fn pipe(
    mut from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    frozen: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while frozen.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

impl Freezer {
    async fn start(target: String) -> Freezer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let frozen = Arc::new(AtomicBool::new(false));
        let flag = frozen.clone();
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let Ok(outbound) = tokio::net::TcpStream::connect(&target).await else {
                    continue;
                };
                let (in_read, in_write) = inbound.into_split();
                let (out_read, out_write) = outbound.into_split();
                tokio::spawn(pipe(in_read, out_write, flag.clone()));
                tokio::spawn(pipe(out_read, in_write, flag.clone()));
            }
        });
        Freezer { port, frozen }
    }

    fn freeze(&self, on: bool) {
        self.frozen.store(on, Ordering::Relaxed);
    }
}

/// An events service on 127.0.0.1 at `port`.
fn loopback(port: u16) -> domain::config::ServiceAddr {
    domain::config::ServiceAddr {
        listen: format!("127.0.0.1:{port}"),
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// A keyed POST through `gateway` as `token`; its answer, which must be a success.
async fn post_as(
    http: &reqwest::Client,
    gateway: &str,
    token: String,
    path: String,
    body: serde_json::Value,
) -> serde_json::Value {
    let r = http
        .post(format!("{gateway}{path}"))
        .bearer_auth(token)
        .header("X-Idempotency-Key", Uuid::new_v4().to_string())
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body: serde_json::Value = r.json().await.unwrap_or_default();
    assert!(status < 300, "{path}: {status} {body}");
    body
}

fn organizer_token() -> String {
    http::tokens::Tokens::new("test-secret-test-secret-test-secret")
        .issue(
            domain::ids::UserId::new(),
            None,
            Some(domain::ids::TenantId::new()),
            vec![domain::roles::Role::Owner],
            None,
            0,
            chrono::Utc::now(),
        )
        .unwrap()
        .token
}

/// A front node (the gateway and every service but events) and two events nodes, the second
/// reaching PostgreSQL through a proxy that stops forwarding without closing: the cut-off node
/// drops its shards within the lease time, the other takes them, and a seat request sent at
/// the cut is answered 201 through the gateway within the hand-over time.
#[tokio::test]
async fn a_node_cut_off_from_the_database_steps_aside_within_the_lease() {
    use domain::config::{NodeConfig, Service};
    let t = crate::support::TestDb::new().await;
    let freezer = Freezer::start("127.0.0.1:5432".into()).await;
    let mut config = t.config.clone();
    let (port_a, port_b) = (crate::support::free_port(), crate::support::free_port());
    config.services.insert(Service::Events, loopback(port_a));
    config.nodes = vec![
        NodeConfig {
            name: "front".into(),
            services: Service::ALL
                .into_iter()
                .filter(|s| *s != Service::Events)
                .collect(),
            addresses: Default::default(),
        },
        NodeConfig {
            name: "events-a".into(),
            services: vec![Service::Events],
            addresses: [(Service::Events, loopback(port_a))].into(),
        },
        NodeConfig {
            name: "events-b".into(),
            services: vec![Service::Events],
            addresses: [(Service::Events, loopback(port_b))].into(),
        },
    ];
    let start = |name: &str, database: String| {
        let mut config = config.clone();
        config.node = name.into();
        config.database.url = database;
        bilet::node::start(config)
    };
    let a = start("events-a", t.config.database.url.clone())
        .await
        .unwrap();
    let through_proxy = t
        .config
        .database
        .url
        .replace("127.0.0.1:5432", &format!("127.0.0.1:{}", freezer.port));
    assert_ne!(through_proxy, t.config.database.url);
    let b = start("events-b", through_proxy).await.unwrap();
    let front = start("front", t.config.database.url.clone()).await.unwrap();
    let gateway = format!("http://{}", front.addrs[&Service::Gateway]);
    let (owner_a, owner_b) = (a.state.ticketing.ownership(), b.state.ticketing.ownership());
    assert!(
        crate::support::eventually(20, || async {
            owner_a.shards_held() + owner_b.shards_held() == 256
                && owner_a.shards_held() > 0
                && owner_b.shards_held() > 0
        })
        .await,
        "the two share the shards"
    );
    // An event whose shard the node to be cut off owns, with a roomy free type.
    let http = reqwest::Client::new();
    let organizer = organizer_token();
    let post = |path: String, body: serde_json::Value| {
        post_as(&http, &gateway, organizer.clone(), path, body)
    };
    let event = loop {
        let created = post(
            "/api/v1/events".into(),
            json!({"title": "Cut", "startsAt": (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339()}),
        )
        .await;
        let id: Uuid = created["id"].as_str().unwrap().parse().unwrap();
        if owner_b.lease(shard_of(id)).is_some() {
            break id;
        }
    };
    let ticket_type = post(
        format!("/api/v1/events/{event}/ticket-types"),
        json!({"name": "Free", "quantity": 100}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    post(format!("/api/v1/events/{event}/publish"), json!({})).await;
    let seat = |key: String| {
        let (http, gateway, ticket_type) = (http.clone(), gateway.clone(), ticket_type.clone());
        let (_, token) = participant();
        async move {
            let asked = Instant::now();
            let r = http
                .post(format!("{gateway}/api/v1/events/{event}/registrations"))
                .bearer_auth(token)
                .header("X-Idempotency-Key", key)
                .json(&json!({"ticketTypeId": ticket_type, "firstName": "Cut", "lastName": "Off"}))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body: serde_json::Value = r.json().await.unwrap_or_default();
            (status, body, asked.elapsed())
        }
    };
    let (status, body, _) = seat(Uuid::new_v4().to_string()).await;
    assert_eq!(status, 201, "{body}");

    // The cut: nothing reaches PostgreSQL from the node, and nothing is closed.
    freezer.freeze(true);
    let cut = Instant::now();
    let lease = Duration::from_millis(config.cluster.lease_ttl_ms);
    let budget = config.hand_over_wait();
    let during = tokio::spawn(seat(Uuid::new_v4().to_string()));
    let stepped_aside = async {
        while owner_b.shards_held() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        cut.elapsed()
    };
    let aside = tokio::time::timeout(lease * 2, stepped_aside)
        .await
        .expect("the cut-off node drops its shards");
    eprintln!(
        "cut-off node dropped its shards {} ms after the cut",
        aside.as_millis()
    );
    assert!(aside <= lease, "within the lease time: {aside:?}");
    assert!(
        crate::support::eventually(5, || async { owner_a.shards_held() == 256 }).await,
        "the other node takes every shard"
    );
    let (status, body, waited) = tokio::time::timeout(budget * 3, during)
        .await
        .expect("the seat request is answered")
        .unwrap();
    eprintln!(
        "the seat request sent at the cut: {status} after {} ms",
        waited.as_millis()
    );
    assert_eq!(
        status, 201,
        "held by the gateway, not shown to the client: {body}"
    );
    assert!(
        waited <= budget + Duration::from_millis(500),
        "within the hand-over time: {waited:?}"
    );
    let (status, body, waited) = seat(Uuid::new_v4().to_string()).await;
    assert_eq!(status, 201, "{body}");
    assert!(
        waited < Duration::from_secs(1),
        "the new owner answers at once: {waited:?}"
    );

    // The route comes back: the node proves its membership again and takes a share.
    freezer.freeze(false);
    assert!(
        crate::support::eventually(20, || async { owner_b.shards_held() > 0 }).await,
        "the node takes a share again once it can prove its leases"
    );
    assert_eq!(audit_of(&t, &ticket_type).await, (3, 0, 3, 0));
    front.stop().await;
    b.stop().await;
    a.stop().await;
}

async fn audit_of(t: &crate::support::TestDb, ticket_type: &str) -> (i32, i32, i64, i64) {
    storage::events::registrations::seat_audit(&t.db, ticket_type.parse().unwrap())
        .await
        .unwrap()
}

/// Business time is one clock: an events node whose clock is ten minutes ahead or behind the
/// database's owns no shards (it would expire reservations early or late), says why in its
/// readiness, and the reservations of the events it would have owned are judged by a node
/// whose clock is right.
#[tokio::test]
async fn a_node_whose_clock_is_off_owns_no_shards_and_expires_nothing_early_or_late() {
    use domain::clock::OffsetClock;
    use domain::config::{NodeConfig, Service};
    let t = crate::support::TestDb::new().await;
    let mut config = t.config.clone();
    let ports = [crate::support::free_port(), crate::support::free_port()];
    config.nodes = vec![
        NodeConfig {
            name: "right".into(),
            services: Service::ALL.to_vec(),
            addresses: Default::default(),
        },
        NodeConfig {
            name: "ahead".into(),
            services: vec![Service::Events],
            addresses: [(Service::Events, loopback(ports[0]))].into(),
        },
        NodeConfig {
            name: "behind".into(),
            services: vec![Service::Events],
            addresses: [(Service::Events, loopback(ports[1]))].into(),
        },
    ];
    let start = |name: &str, offset: chrono::Duration| {
        let mut config = config.clone();
        config.node = name.into();
        bilet::node::start_with_clock(config, Arc::new(OffsetClock(offset)))
    };
    let right = start("right", chrono::Duration::zero()).await.unwrap();
    let ahead = start("ahead", chrono::Duration::minutes(10)).await.unwrap();
    let behind = start("behind", chrono::Duration::minutes(-10))
        .await
        .unwrap();
    let gateway = format!("http://{}", right.addrs[&Service::Gateway]);
    let owner = right.state.ticketing.ownership();
    assert!(
        crate::support::eventually(10, || async { owner.shards_held() == 256 }).await,
        "the node whose clock is right owns every shard"
    );
    for node in [&ahead, &behind] {
        let own = node.state.ticketing.ownership();
        assert_eq!(own.shards_held(), 0);
        assert!(own.counts().skewed);
        let events = format!("http://{}", node.addrs[&Service::Events]);
        let ready = crate::support::get(&format!("{events}/health/ready"), None).await;
        assert_eq!(ready.status, 503, "{}", ready.body);
        assert_eq!(
            ready.body["reasons"]["shards"],
            "this node's clock differs from the database's by more than a second"
        );
    }
    // The events whose shard each skewed node would own among the three, a paid type each
    // with reservations of one minute.
    let members: Vec<String> = storage::cluster::live_members(&t.db, Duration::from_secs(5))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.node)
        .collect();
    assert_eq!(members.len(), 3, "{members:?}");
    let name_of = |node: &bilet::node::Node| node.state.ticketing.ownership().node().to_string();
    let http = reqwest::Client::new();
    let organizer = organizer_token();
    let post = |path: String, token: String, body: serde_json::Value| {
        post_as(&http, &gateway, token, path, body)
    };
    let db = t.owner().await;
    for skewed in [&ahead, &behind] {
        let wanted = name_of(skewed);
        let event = loop {
            let created = post(
                "/api/v1/events".into(),
                organizer.clone(),
                json!({"title": "Clock", "startsAt": (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339()}),
            )
            .await;
            let id: Uuid = created["id"].as_str().unwrap().parse().unwrap();
            if domain::cluster::owner_of(shard_of(id), &members) == Some(wanted.as_str()) {
                break id;
            }
        };
        let paid = post(
            format!("/api/v1/events/{event}/ticket-types"),
            organizer.clone(),
            json!({"name": "Paid", "quantity": 10, "priceCents": 1000, "currency": "RUB", "reservationMinutes": 1}),
        )
        .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        post(
            format!("/api/v1/events/{event}/publish"),
            organizer.clone(),
            json!({}),
        )
        .await;
        let (_, token) = participant();
        let seat = post(
            format!("/api/v1/events/{event}/registrations"),
            token,
            json!({"ticketTypeId": paid, "firstName": "Clock", "lastName": "Test"}),
        )
        .await;
        assert_eq!(seat["status"], "RESERVED", "{seat}");
        let id: Uuid = seat["id"].as_str().unwrap().parse().unwrap();
        // Set by a clock that agrees with the database's: a minute from now, not eleven or
        // minus nine.
        let off: f64 = db
            .query_one(
                "SELECT extract(epoch FROM expires_at - (clock_timestamp() + interval '1 minute'))::float8
                 FROM event_service.registrations WHERE id = $1",
                &[&id],
            )
            .await
            .unwrap()
            .get(0);
        assert!(off.abs() < 5.0, "{wanted}: expiry off by {off} s");
        // A node ten minutes ahead would expire it at once: it is still held.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let status: String = db
            .query_one(
                "SELECT status FROM event_service.registrations WHERE id = $1",
                &[&id],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(status, "RESERVED", "{wanted}: not expired early");
    }
    right.stop().await;
    ahead.stop().await;
    behind.stop().await;
}

/// A sweep that meets a row a seat batch holds gives up after a short wait (the timer looks
/// again) instead of holding its shards' lease rows for the statement timeout, which would
/// keep another node from taking them past the lease.
#[tokio::test]
async fn a_sweep_blocked_by_a_seat_lock_gives_up_well_within_the_lease() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid) = setup(
        &ctx,
        &owner,
        json!({"name": "Paid", "quantity": 5, "priceCents": 1000, "currency": "RUB", "reservationMinutes": 1}),
    )
    .await;
    let (_, token) = participant();
    let seat = register(&ctx, &token, &event, &paid, &Uuid::new_v4().to_string()).await;
    assert_eq!(seat.body["status"], "RESERVED", "{}", seat.body);
    let fence = ctx.ticketing().ownership().fence();
    let later = domain::clock::Clock::now(ctx.clock.as_ref()) + chrono::Duration::hours(1);
    // A long transaction holds the ticket type's row, as a busy seat batch would.
    let mut holder = ctx.t.owner().await;
    let blocking = holder.transaction().await.unwrap();
    blocking
        .execute(
            "SELECT 1 FROM event_service.ticket_types WHERE id = $1::text::uuid FOR UPDATE",
            &[&paid],
        )
        .await
        .unwrap();
    let started = Instant::now();
    let swept = storage::events::registrations::expire_due(&ctx.t.db, &fence, None, later).await;
    let waited = started.elapsed();
    assert!(
        swept.as_ref().is_err_and(|e| e.is_contention()),
        "gave up on the lock: {swept:?}"
    );
    assert!(
        waited < Duration::from_secs(1),
        "within a fraction of the lease: {waited:?}"
    );
    blocking.rollback().await.unwrap();
    let swept = storage::events::registrations::expire_due(&ctx.t.db, &fence, None, later)
        .await
        .unwrap();
    assert_eq!(swept, 1, "the next look expires it");
}
