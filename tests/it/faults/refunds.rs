//! kill -9 between sending a refund and recording YooKassa's answer: the refund was marked
//! SENT before the call, so the restarted process sends it again under the same idempotency
//! key, YooKassa answers with the refund it already made, and the money goes back once.

use super::serve_with;
use crate::payments::fake_yookassa::{FakeYooKassa, KEY, SHOP};
use crate::support::{TestDb, eventually, free_port};
use std::time::Duration;
use uuid::Uuid;

#[tokio::test]
async fn a_refund_whose_answer_is_lost_to_kill_9_is_made_once() {
    let t = TestDb::new().await;
    let fake = FakeYooKassa::start().await;
    let (tenant, organizer) = (domain::ids::TenantId::new(), domain::ids::UserId::new());
    let (event, ticket_type) =
        super::published_paid_event(&t, tenant, organizer, 10, 250_000, None).await;
    // A ticket paid through YooKassa, written as checkout and payment would have left it.
    let payment = fake.paid_payment("2500.00");
    let registration = Uuid::now_v7();
    let owner = t.owner().await;
    owner
        .batch_execute(&format!(
            "INSERT INTO event_service.registrations (id, tenant_id, event_id, ticket_type_id, user_id, first_name,
                last_name, confirmation_code, status, custom_fields, price_cents, currency, created_at, updated_at)
             VALUES ('{registration}', '{tenant}', '{event}', '{ticket}', gen_random_uuid(), 'Ann', 'Lee', 'K1LL9A',
                'CONFIRMED', '{{}}', 250000, 'RUB', now(), now());
             UPDATE event_service.ticket_types SET sold_count = 1 WHERE id = '{ticket}';
             INSERT INTO event_service.checkouts (id, tenant_id, registration_id, user_id, attempt, provider,
                idempotency_key, provider_payment_id, status, amount_cents, currency, created_at, updated_at)
             SELECT gen_random_uuid(), tenant_id, id, user_id, 1, 'yookassa', 'bilet-k1ll9a-1', '{payment}', 'PAID',
                250000, 'RUB', now(), now() FROM event_service.registrations WHERE id = '{registration}';
             INSERT INTO event_service.payments (id, tenant_id, registration_id, kind, amount_cents, currency, channel,
                outcome, received_at)
             VALUES ('{payment}', '{tenant}', '{registration}', 'COMPLETED', 250000, 'RUB', 'WEBHOOK', 'CONFIRMED', now());",
            tenant = tenant.as_uuid(),
            event = event.id,
            ticket = ticket_type.id,
        ))
        .await
        .unwrap();

    // YooKassa makes the refund, then does not answer for a minute.
    fake.set_refund_delay(Duration::from_secs(60));
    let payments = format!(
        "[payments]\nprovider = \"yookassa\"\nyookassa_api_url = \"{}\"\nyookassa_shop_id = \"{SHOP}\"\nyookassa_secret_key = \"{KEY}\"\ntimeout_ms = 120000\n",
        fake.api
    );
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
    // The fragment follows `[database]`'s keys, opening a section of its own.
    let server = serve_with(&t, port, &payments);
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
    let asked = reqwest::Client::new()
        .post(format!("{base}/api/v1/registrations/{registration}/refund"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 201);
    assert!(
        eventually(20, || async { fake.refund_requests().len() == 1 }).await,
        "the worker sent the refund"
    );
    drop(server); // kill -9 while YooKassa holds its answer
    let state = || async {
        let row = owner
            .query_one(
                "SELECT status, sends, provider_refund_id FROM event_service.refunds WHERE registration_id = $1",
                &[&registration],
            )
            .await
            .unwrap();
        (
            row.get::<_, String>(0),
            row.get::<_, i32>(1),
            row.get::<_, Option<String>>(2),
        )
    };
    assert_eq!(
        state().await,
        ("SENT".to_string(), 1, None),
        "the answer was lost"
    );
    assert_eq!(fake.refunds().len(), 1, "YooKassa made it");

    // Restarted: sent again (after its resend delay) under the same key, recorded once.
    fake.set_refund_delay(Duration::ZERO);
    let server = serve_with(&t, port, &payments);
    assert!(ready().await);
    assert!(
        eventually(40, || async { state().await.0 == "SUCCEEDED" }).await,
        "recorded after the restart: {:?}",
        state().await
    );
    let (_, sends, refund_id) = state().await;
    let made = fake.refunds();
    assert_eq!(made.len(), 1, "one refund at YooKassa: {made:?}");
    assert_eq!(refund_id.as_deref(), made[0]["id"].as_str());
    assert_eq!(sends, 2);
    let keys = fake.refund_requests();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0], keys[1], "the same idempotency key both times");
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
    drop(server);
}
