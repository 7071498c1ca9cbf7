//! kill -9 in the middle of cancelling a large event: the cancellation is one transaction, so
//! the event is found either untouched or wholly cancelled, and cancelling again after the
//! restart finishes the job with every registration cancelled, announced and refunded once.

use super::serve_with;
use crate::support::{TestDb, eventually, free_port};
use std::time::{Duration, Instant};

const REGISTRATIONS: i64 = 100_000;

async fn count(t: &TestDb, sql: &str, event: uuid::Uuid) -> i64 {
    t.owner()
        .await
        .query_one(sql, &[&event])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn kill_9_during_a_large_cancellation_leaves_it_whole_or_undone() {
    let t = TestDb::new().await;
    let (tenant, organizer) = (domain::ids::TenantId::new(), domain::ids::UserId::new());
    let (event, ticket_type) =
        super::published_paid_event(&t, tenant, organizer, REGISTRATIONS as i32, 2500, None).await;
    // A sold-out stadium of paid, confirmed tickets, written directly.
    let owner = t.owner().await;
    owner
        .execute(
            "INSERT INTO event_service.registrations (id, tenant_id, event_id, ticket_type_id, user_id, first_name,
                last_name, confirmation_code, status, custom_fields, price_cents, currency, created_at, updated_at)
             SELECT gen_random_uuid(), $1, $2, $3, gen_random_uuid(), 'Fan', 'N' || i, 'Z' || lpad(i::text, 7, '0'),
                'CONFIRMED', '{}', 2500, 'RUB', now(), now()
             FROM generate_series(1, $4::bigint) AS i",
            &[&tenant.as_uuid(), &event.id, &ticket_type.id, &REGISTRATIONS],
        )
        .await
        .unwrap();
    owner
        .execute(
            "UPDATE event_service.ticket_types SET sold_count = $2 WHERE id = $1",
            &[&ticket_type.id, &(REGISTRATIONS as i32)],
        )
        .await
        .unwrap();
    owner.batch_execute("ANALYZE").await.unwrap();

    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let ready = || async {
        eventually(60, || async {
            reqwest::get(format!("{base}/health/ready"))
                .await
                .is_ok_and(|r| r.status() == 200)
        })
        .await
    };
    // A session idle inside its transaction for a second is ended: the cancellation must keep
    // talking to PostgreSQL while it works through a stadium, not build it all first.
    let serve = |port| serve_with(&t, port, "idle_in_transaction_ms = 1000");
    let server = serve(port);
    assert!(ready().await);
    let token = http::tokens::Tokens::new("test-secret-test-secret-test-secret")
        .issue(
            organizer,
            None,
            Some(tenant),
            vec![domain::roles::Role::Owner],
            None,
            0,
            chrono::Utc::now(),
        )
        .unwrap()
        .token;
    let cancel = {
        let (base, token, id) = (base.clone(), token.clone(), event.id);
        move || {
            let (base, token) = (base.clone(), token.clone());
            async move {
                reqwest::Client::new()
                    .post(format!("{base}/api/v1/events/{id}/cancel"))
                    .bearer_auth(&token)
                    .timeout(Duration::from_secs(120))
                    .send()
                    .await
            }
        }
    };

    // The cancellation starts; the process is killed while it runs.
    let first = tokio::spawn(cancel());
    // Killed while PostgreSQL is inside the cancellation's big statement.
    let inside = eventually(60, || async {
        owner
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                   AND state = 'active' AND query LIKE '%WITH old AS%'",
                &[],
            )
            .await
            .map(|r| r.get::<_, i64>(0) > 0)
            .unwrap_or(false)
    })
    .await;
    assert!(inside, "the cancellation was seen running");
    drop(server);
    let _ = first.await;
    let status: String = owner
        .query_one(
            "SELECT status FROM event_service.events WHERE id = $1",
            &[&event.id],
        )
        .await
        .unwrap()
        .get(0);
    // The connection dies with the process; PostgreSQL rolls the transaction back.
    assert!(
        eventually(30, || async {
            owner
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                       AND query LIKE '%WITH old AS%' AND pid <> pg_backend_pid()",
                    &[],
                )
                .await
                .map(|r| r.get::<_, i64>(0) == 0)
                .unwrap_or(false)
        })
        .await
    );
    let cancelled_at_kill = count(
        &t,
        "SELECT count(*) FROM event_service.registrations WHERE event_id = $1 AND status = 'CANCELLED'",
        event.id,
    )
    .await;
    assert_eq!(
        (cancelled_at_kill, status.as_str()),
        (0, "PUBLISHED"),
        "killed mid-way, nothing of it stays"
    );

    // Started again, the organizer cancels again: done, whole.
    let _server = serve(port);
    assert!(ready().await);
    let started = Instant::now();
    let reply = cancel().await.unwrap();
    let took = started.elapsed();
    assert_eq!(reply.status(), 200);
    assert!(
        took < Duration::from_secs(30),
        "a large event cancels within the statement timeout: {took:?}"
    );
    for (sql, expected, what) in [
        (
            "SELECT count(*) FROM event_service.registrations WHERE event_id = $1 AND status = 'CANCELLED' AND cancellation_reason = 'EVENT_CANCELLED'",
            REGISTRATIONS,
            "registrations cancelled",
        ),
        (
            "SELECT count(*) FROM event_service.outbox WHERE event_type = 'registration.cancelled' AND data->>'eventId' = $1::uuid::text",
            REGISTRATIONS,
            "cancellations announced",
        ),
        (
            "SELECT count(*) FROM event_service.outbox WHERE event_type = 'refund.requested' AND data->>'eventId' = $1::uuid::text",
            REGISTRATIONS,
            "refunds asked",
        ),
        (
            "SELECT count(*) FROM event_service.outbox WHERE event_type = 'event.cancelled' AND data->>'eventId' = $1::uuid::text",
            1,
            "event.cancelled once",
        ),
        (
            "SELECT (sold_count + reserved_count)::bigint FROM event_service.ticket_types WHERE event_id = $1",
            0,
            "seats released",
        ),
    ] {
        assert_eq!(count(&t, sql, event.id).await, expected, "{what}");
    }
    println!(
        "large cancellation: killed with {cancelled_at_kill} of {REGISTRATIONS} cancelled (all or nothing); \
         after the restart {REGISTRATIONS} registrations cancelled, announced and refunded once in {:.2} s",
        took.as_secs_f64()
    );
}
