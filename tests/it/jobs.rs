//! The periodic jobs: a node declares the jobs of the services it runs and no others, and
//! those jobs clean their own service's schema.

use crate::support::{TestDb, eventually};
use bilet::node::{self, Node};
use domain::config::{NodeConfig, Service};

/// A node running only `services`.
async fn node_of(t: &TestDb, services: &[Service]) -> Node {
    let mut config = t.config.clone();
    config.nodes.push(NodeConfig {
        name: "partial".into(),
        services: services.to_vec(),
        addresses: Default::default(),
    });
    config.node = "partial".into();
    node::start(config).await.unwrap()
}

fn names(jobs: &[storage::jobs::Job]) -> Vec<&'static str> {
    jobs.iter().map(|j| j.name).collect()
}

#[tokio::test]
async fn a_node_declares_the_jobs_of_exactly_its_services() {
    let t = TestDb::new().await;
    let services = [Service::Identity, Service::Events];
    let node = node_of(&t, &services).await;

    assert_eq!(
        names(&bilet::jobs::for_node(&node.state, &services)),
        vec![
            "identity.expired_tokens",
            "identity.idempotency_keys",
            "events.payments",
            "events.complete_ended",
            "events.reminders",
            "events.seat_requests",
            "events.waiting_rooms",
            "events.idempotency_keys",
            "node.outbox_backlog",
            "node.processed_events",
            "node.outbox_days",
            "node.outbox_published",
        ]
    );
    // A gateway alone keeps only the node's own gauge (it has no claims to forget).
    assert_eq!(
        names(&bilet::jobs::for_node(&node.state, &[Service::Gateway])),
        vec!["node.outbox_backlog"]
    );
    // Every service cleans its own idempotency keys, and names its jobs after itself.
    for service in Service::ALL {
        let jobs = bilet::jobs::of_service(&node.state, service);
        let prefix = format!("{}.", service.name());
        assert!(
            jobs.iter().all(|j| j.name.starts_with(&prefix)),
            "{service:?}: {:?}",
            names(&jobs)
        );
        if service.schema().is_some() {
            assert!(
                names(&jobs).contains(&format!("{prefix}idempotency_keys").as_str()),
                "{service:?}: {:?}",
                names(&jobs)
            );
        }
    }
    node.stop().await;
}

/// Rows a day older than the 24-hour lifetime of idempotency records, as the owner writes
/// them (the application role sees seat requests of its tenant only).
async fn old_rows(owner: &tokio_postgres::Client) {
    for schema in ["event_service", "user_service"] {
        owner
            .execute(
                &format!(
                    "INSERT INTO {schema}.idempotency_keys (owner_id, key, request_hash, created_at)
                     VALUES ($1, $2, '\\x00', now() - interval '48 hours')"
                ),
                &[&uuid::Uuid::now_v7(), &uuid::Uuid::now_v7()],
            )
            .await
            .unwrap();
    }
    owner
        .execute(
            "INSERT INTO event_service.seat_requests
                 (tenant_id, user_id, key, request_hash, outcome, created_at)
             VALUES ($1, $2, $3, '\\x00', 'SOLD_OUT', now() - interval '48 hours')",
            &[
                &uuid::Uuid::now_v7(),
                &uuid::Uuid::now_v7(),
                &uuid::Uuid::now_v7(),
            ],
        )
        .await
        .unwrap();
}

async fn count(owner: &tokio_postgres::Client, table: &str) -> i64 {
    owner
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn an_events_only_node_purges_the_event_schema_and_only_it() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    old_rows(&owner).await;
    let node = node_of(&t, &[Service::Events]).await;

    // Hourly jobs also run when the node starts.
    assert!(
        eventually(20, || async {
            count(&owner, "event_service.idempotency_keys").await == 0
                && count(&owner, "event_service.seat_requests").await == 0
        })
        .await,
        "the events node purged its expired idempotency records"
    );

    // Run by hand, as the next hour would.
    old_rows(&owner).await;
    let jobs = bilet::jobs::for_node(&node.state, &[Service::Events]);
    let run = |name: &'static str| {
        let job = jobs.iter().find(|j| j.name == name).unwrap().clone();
        async move { job.run().await }
    };
    assert_eq!(run("events.idempotency_keys").await, Ok(1));
    assert_eq!(run("events.seat_requests").await, Ok(1));
    assert_eq!(count(&owner, "event_service.idempotency_keys").await, 0);
    assert_eq!(count(&owner, "event_service.seat_requests").await, 0);

    // The identity service does not run here: its keys wait for the node that runs it.
    assert_eq!(count(&owner, "user_service.idempotency_keys").await, 2);
    node.stop().await;
}

/// The rows of `sql`, a name and a count each.
async fn counted(owner: &tokio_postgres::Client, sql: &str) -> Vec<(String, i64)> {
    owner
        .query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// A v7 id minted at the SQL time `at`, as the services mint them.
fn v7_at(at: &str) -> String {
    format!(
        "(lpad(to_hex((extract(epoch FROM {at}) * 1000)::bigint), 12, '0')
          || substr(replace(gen_random_uuid()::text, '-', ''), 13))::uuid"
    )
}

#[tokio::test]
async fn claims_older_than_thirty_days_are_forgotten_slice_by_slice_and_recent_ones_kept() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    // 25,000 old claims (more than two slices) of two consumers, 3 recent ones, and one of an
    // old event claimed only yesterday (a consumer that was down for a month).
    let (old, recent) = (
        v7_at("now() - interval '31 days'"),
        v7_at("now() - interval '29 days'"),
    );
    owner
        .batch_execute(&format!(
            "INSERT INTO event_service.processed_events (consumer, event_id, processed_at)
               SELECT CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, {old}, now() - interval '31 days'
               FROM generate_series(1, 25000) i;
             INSERT INTO event_service.processed_events (consumer, event_id, processed_at)
               SELECT 'a', {recent}, now() - interval '29 days' FROM generate_series(1, 3);
             INSERT INTO event_service.processed_events (consumer, event_id, processed_at)
               VALUES ('c', {old}, now() - interval '1 day');
             INSERT INTO user_service.processed_events (consumer, event_id, processed_at)
               VALUES ('c', {old}, now() - interval '40 days');"
        ))
        .await
        .unwrap();
    let node = node_of(&t, &[Service::Events]).await;
    let jobs = bilet::jobs::for_node(&node.state, &[Service::Events]);
    let job = jobs
        .iter()
        .find(|j| j.name == "node.processed_events")
        .unwrap()
        .clone();
    let forgotten = job.run().await.unwrap();
    // The node may have run it once at start already; together they forgot all 25,000.
    assert!(forgotten <= 25_000);
    let kept = counted(
        &owner,
        "SELECT consumer, count(*) FROM event_service.processed_events GROUP BY 1 ORDER BY 1",
    )
    .await;
    assert_eq!(kept, vec![("a".to_string(), 3), ("c".to_string(), 1)]);
    // Identity's claims wait for a node that runs identity.
    assert_eq!(count(&owner, "user_service.processed_events").await, 1);
    node.stop().await;
}

/// The outbox's tables of the UTC days `offsets` days from today (None where a day has none).
async fn day_tables(owner: &tokio_postgres::Client, offsets: &[i32]) -> Vec<Option<String>> {
    owner
        .query(
            "SELECT to_regclass('event_service.outbox_'
                    || to_char((now() + make_interval(days => d)) AT TIME ZONE 'UTC', 'YYYYMMDD'))::text
               FROM unnest($1::int4[]) WITH ORDINALITY AS u (d, o) ORDER BY o",
            &[&offsets],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test]
async fn a_day_of_events_published_more_than_seven_days_ago_is_dropped_and_the_rest_kept() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    // A week and more of days, as an installation running since then has them.
    owner
        .batch_execute(
            "SELECT event_service.outbox_cover(now() - interval '11 days', now() - interval '9 days')",
        )
        .await
        .unwrap();
    let row = |at: &str, published: &str, kind: &str| {
        format!(
            "INSERT INTO event_service.outbox (id, event_type, occurred_at, data, published_at)
             SELECT {}, '{kind}', now(), '{{}}', {published} FROM generate_series(1, 3);",
            v7_at(at)
        )
    };
    owner
        .batch_execute(&format!(
            "{}{}{}{}{}{}",
            // A day written and published more than seven days ago: its table goes.
            row(
                "now() - interval '11 days'",
                "now() - interval '11 days'",
                "test.old"
            ),
            // Written long ago, published only yesterday (the broker was away): its day stays.
            row(
                "now() - interval '10 days'",
                "now() - interval '1 day'",
                "test.late"
            ),
            // Written long ago and never published: kept for the relay.
            row("now() - interval '9 days'", "NULL", "test.unpublished"),
            row(
                "now() - interval '6 days'",
                "now() - interval '6 days'",
                "test.recent"
            ),
            // A day without a table (a clock far off): the default table, deleted row by row.
            row(
                "now() - interval '30 days'",
                "now() - interval '30 days'",
                "test.stray"
            ),
            row(
                "now() - interval '30 days'",
                "now() - interval '2 days'",
                "test.stray_late"
            ),
        ))
        .await
        .unwrap();
    let node = node_of(&t, &[Service::Events]).await;
    let job = bilet::jobs::for_node(&node.state, &[Service::Events])
        .into_iter()
        .find(|j| j.name == "node.outbox_published")
        .unwrap();
    let purged = job.run().await.unwrap();
    // The node ran it once at start already, or this run did it.
    assert!(purged == 0 || purged == 6, "{purged}");
    let kept = counted(
        &owner,
        "SELECT event_type, count(*) FROM event_service.outbox WHERE event_type LIKE 'test.%'
          GROUP BY 1 ORDER BY 1",
    )
    .await;
    let kept: Vec<(&str, i64)> = kept.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    assert_eq!(
        kept,
        vec![
            ("test.late", 3),
            ("test.recent", 3),
            ("test.stray_late", 3),
            ("test.unpublished", 3)
        ]
    );
    let tables = day_tables(&owner, &[-11, -10, -9]).await;
    assert!(
        tables[0].is_none(),
        "the old day's table is dropped: {tables:?}"
    );
    assert!(tables[1].is_some() && tables[2].is_some(), "{tables:?}");
    node.stop().await;
}

#[tokio::test]
async fn a_days_new_events_go_after_the_pages_its_published_events_left() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    let today = day_tables(&owner, &[0]).await[0].clone().unwrap();
    let write = |kind: &str, n: i32| {
        format!(
            "INSERT INTO event_service.outbox (id, event_type, occurred_at, data)
             SELECT {}, '{kind}', now(), jsonb_build_object('pad', repeat('x', 600))
             FROM generate_series(1, {n})",
            v7_at("now()")
        )
    };
    // A day's events as the relay leaves them: each written, then stamped published; then
    // vacuumed, as autovacuum does once the old versions add up.
    owner
        .batch_execute(&write("test.morning", 3000))
        .await
        .unwrap();
    owner
        .batch_execute(
            "UPDATE event_service.outbox SET published_at = now() WHERE published_at IS NULL",
        )
        .await
        .unwrap();
    owner
        .batch_execute(&format!("VACUUM {today}"))
        .await
        .unwrap();
    let page = "(ctid::text::point)[0]::int8";
    let last: i64 = owner
        .query_one(&format!("SELECT max({page}) FROM {today}"), &[])
        .await
        .unwrap()
        .get(0);
    // The afternoon's burst.
    owner
        .batch_execute(&write("test.burst", 500))
        .await
        .unwrap();
    let (burst, back): (i64, i64) = {
        let row = owner
            .query_one(
                &format!(
                    "SELECT count(*), count(*) FILTER (WHERE {page} < $1) FROM {today}
                     WHERE event_type = 'test.burst'"
                ),
                &[&last],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(burst, 500);
    assert_eq!(
        back, 0,
        "{back} of the burst's events went into pages before the day's last ({last})"
    );
}

#[tokio::test]
async fn today_and_the_days_ahead_have_tables_and_todays_events_go_to_theirs() {
    let t = TestDb::new().await;
    let node = node_of(&t, &[Service::Events]).await;
    let job = bilet::jobs::for_node(&node.state, &[Service::Events])
        .into_iter()
        .find(|j| j.name == "node.outbox_days")
        .unwrap();
    // The migration made them already: nothing to make.
    assert_eq!(job.run().await.unwrap(), 0);
    let owner = t.owner().await;
    let days = day_tables(&owner, &[0, 1, 2]).await;
    assert!(days.iter().all(Option::is_some), "{days:?}");
    let written: String = owner
        .query_one(
            &format!(
                "WITH w AS (INSERT INTO event_service.outbox (id, event_type, occurred_at, data)
                            VALUES ({}, 'test.today', now(), '{{}}') RETURNING tableoid)
                 SELECT tableoid::regclass::text FROM w",
                v7_at("now()")
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(Some(written), days[0].clone());
    // The application role may make days (as the owner, through the function) but not drop
    // the outbox's tables itself.
    let app = t.db.client().await.unwrap();
    let made: i32 = app
        .query_one(
            "SELECT event_service.outbox_cover(now() + interval '5 days', now() + interval '5 days')",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(made, 1);
    let refused = app
        .batch_execute(&format!("DROP TABLE {}", days[2].clone().unwrap()))
        .await
        .unwrap_err();
    let reason = refused.as_db_error().map(|e| e.message().to_string());
    assert!(
        reason
            .as_deref()
            .is_some_and(|m| m.contains("must be owner")),
        "{reason:?}"
    );
    node.stop().await;
}
