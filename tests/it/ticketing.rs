//! Registrations through the ticket-type actors: no overselling under a burst, idempotent
//! retries, reservation expiry (also across a restart), payments from the broker, check-in
//! and cancellation rules, and who sees whom.

use crate::identity::{Ctx, Session};
use crate::support::{eventually, send};
use chrono::{Duration, Utc};
use domain::envelope::Envelope;
use serde_json::{Value, json};
use uuid::Uuid;

const SECRET: &str = "test-secret-test-secret-test-secret";

/// A participant token without going through sign-up (the event service only needs the id).
pub(crate) fn participant() -> (Uuid, String) {
    let user = domain::ids::UserId::new();
    let token = http::tokens::Tokens::new(SECRET)
        .issue(user, None, None, vec![], None, 0, Utc::now())
        .unwrap()
        .token;
    (user.as_uuid(), token)
}

pub(crate) async fn setup(ctx: &Ctx, owner: &Session, ticket: Value) -> (String, String) {
    let e = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Show", "startsAt": (Utc::now() + Duration::days(10)).to_rfc3339()}),
        )
        .await;
    let event = e.body["id"].as_str().unwrap().to_string();
    let t = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            ticket,
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.body);
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/events/{event}/publish"),
            Some(&owner.access)
        )
        .await
        .status,
        200
    );
    (event, t.body["id"].as_str().unwrap().to_string())
}

pub(crate) async fn register(
    ctx: &Ctx,
    token: &str,
    event: &str,
    ticket_type: &str,
    key: &str,
) -> crate::support::Reply {
    send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(token)
            .header("X-Idempotency-Key", key)
            .header("Accept-Language", "en")
            .json(&json!({"ticketTypeId": ticket_type, "firstName": "Ann", "lastName": "Lee"})),
    )
    .await
}

pub(crate) async fn audit(ctx: &Ctx, ticket_type: &str) -> (i32, i32, i64, i64) {
    storage::events::registrations::seat_audit(&ctx.t.db, ticket_type.parse().unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn five_hundred_at_once_for_one_hundred_seats() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 100})).await;
    let people: Vec<(Uuid, String)> = (0..500).map(|_| participant()).collect();
    let replies =
        futures_util::future::join_all(
            people.iter().map(|(_, token)| {
                let (ctx, event, ticket_type) = (&ctx, &event, &ticket_type);
                async move {
                    register(ctx, token, event, ticket_type, &Uuid::new_v4().to_string()).await
                }
            }),
        )
        .await;
    let created = replies.iter().filter(|r| r.status == 201).count();
    let sold_out = replies
        .iter()
        .filter(|r| r.status == 422 && r.body["code"] == "sold_out")
        .count();
    assert_eq!(created, 100);
    assert_eq!(sold_out, 400, "every other answer is a clean sold-out");
    let codes: std::collections::HashSet<&str> = replies
        .iter()
        .filter(|r| r.status == 201)
        .map(|r| r.body["confirmationCode"].as_str().unwrap())
        .collect();
    assert_eq!(codes.len(), 100, "codes are unique");
    assert!(
        codes
            .iter()
            .all(|c| c.len() == 8 && !c.contains(['0', 'O', '1', 'I']))
    );
    assert!(
        replies
            .iter()
            .filter(|r| r.status == 201)
            .all(|r| r.body["status"] == "CONFIRMED"),
        "free tickets start confirmed"
    );
    assert_eq!(
        audit(&ctx, &ticket_type).await,
        (100, 0, 100, 0),
        "counts equal the rows"
    );
    let types = ctx
        .get(&format!("/api/v1/events/{event}/ticket-types"), None)
        .await;
    assert_eq!(types.body["data"][0]["available"], 0);
    assert!(
        eventually(10, || async {
            ctx.events.of("registration.created").len() == 100
        })
        .await
    );
}

#[tokio::test]
async fn retries_with_the_same_key_return_the_same_registration() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 10})).await;
    let (_, token) = participant();
    let key = Uuid::new_v4().to_string();
    let first = register(&ctx, &token, &event, &ticket_type, &key).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let again = register(&ctx, &token, &event, &ticket_type, &key).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body["id"], first.body["id"]);
    let other_key = register(
        &ctx,
        &token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(
        other_key.status, 409,
        "one active registration per user and event"
    );
    assert_eq!(audit(&ctx, &ticket_type).await, (1, 0, 1, 0));

    let no_key = send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&token)
            .json(&json!({"ticketTypeId": ticket_type})),
    )
    .await;
    assert_eq!(no_key.status, 400);
    assert_eq!(
        no_key.body["details"]["X-Idempotency-Key"],
        "Обязательное поле"
    );
    let bad_type = register(
        &ctx,
        &participant().1,
        &event,
        &Uuid::now_v7().to_string(),
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(bad_type.status, 400);
    let unknown_event = register(
        &ctx,
        &participant().1,
        &Uuid::now_v7().to_string(),
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(unknown_event.status, 404);
    let anonymous = send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type})),
    )
    .await;
    assert_eq!(anonymous.status, 401);
}

#[tokio::test]
async fn a_key_keeps_its_first_answer_and_refuses_other_requests() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "One", "quantity": 1})).await;
    let other_type = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Other", "quantity": 5}),
        )
        .await;
    let other_type = other_type.body["id"].as_str().unwrap().to_string();

    // The same key twice at the same moment: one seat, and both answers name it.
    let (_, token) = participant();
    let key = Uuid::new_v4().to_string();
    let (a, b) = tokio::join!(
        register(&ctx, &token, &event, &ticket_type, &key),
        register(&ctx, &token, &event, &ticket_type, &key)
    );
    assert_eq!((a.status, b.status), (201, 201), "{} {}", a.body, b.body);
    assert_eq!(a.body["id"], b.body["id"]);
    let replayed = [&a, &b]
        .iter()
        .filter(|r| {
            r.headers
                .get("idempotent-replayed")
                .is_some_and(|v| v == "true")
        })
        .count();
    assert_eq!(replayed, 1, "exactly one of the two is the replay");
    assert_eq!(audit(&ctx, &ticket_type).await, (1, 0, 1, 0));

    // The same key for another ticket type is another request: refused, nothing written.
    let reused = register(&ctx, &token, &event, &other_type, &key).await;
    assert_eq!(reused.status, 422, "{}", reused.body);
    assert_eq!(reused.body["code"], "idempotency_key_reused");
    assert_eq!(audit(&ctx, &other_type).await, (0, 0, 0, 0));

    // A refusal is an answer too: the retry gets "sold out" again even after a seat frees.
    let (_, late) = participant();
    let late_key = Uuid::new_v4().to_string();
    let sold_out = register(&ctx, &late, &event, &ticket_type, &late_key).await;
    assert_eq!(sold_out.status, 422);
    assert_eq!(sold_out.body["code"], "sold_out");
    let cancelled = send(
        ctx.http
            .delete(format!(
                "{}/api/v1/registrations/{}",
                ctx.base,
                a.body["id"].as_str().unwrap()
            ))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(cancelled.status, 204, "{}", cancelled.body);
    let again = register(&ctx, &late, &event, &ticket_type, &late_key).await;
    assert_eq!(again.status, 422);
    assert_eq!(again.body["code"], "sold_out");
    assert_eq!(again.headers["idempotent-replayed"], "true");
    let fresh = register(
        &ctx,
        &late,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(
        fresh.status, 201,
        "a new key is a new attempt: {}",
        fresh.body
    );

    let bad_key = register(&ctx, &late, &event, &ticket_type, "not-a-uuid").await;
    assert_eq!(bad_key.status, 400);
    assert!(bad_key.body["details"]["X-Idempotency-Key"].is_string());
}

#[tokio::test]
async fn registrations_need_a_published_event_and_a_type_on_sale() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 10})).await;
    let later = ctx.post(&format!("/api/v1/events/{event}/ticket-types"), Some(&owner.access),
        json!({"name": "Later", "quantity": 5, "salesStart": (Utc::now() + Duration::days(1)).to_rfc3339()})).await;
    let r = register(
        &ctx,
        &participant().1,
        &event,
        later.body["id"].as_str().unwrap(),
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(r.status, 422, "sales have not started");
    let closed = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Closed", "quantity": 5, "isActive": false}),
        )
        .await;
    let r = register(
        &ctx,
        &participant().1,
        &event,
        closed.body["id"].as_str().unwrap(),
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(r.status, 400, "an inactive type is not offered");
    let draft = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Draft", "startsAt": (Utc::now() + Duration::days(3)).to_rfc3339()}),
        )
        .await;
    let draft_id = draft.body["id"].as_str().unwrap();
    let t = ctx
        .post(
            &format!("/api/v1/events/{draft_id}/ticket-types"),
            Some(&owner.access),
            json!({"name": "T", "quantity": 5}),
        )
        .await;
    let r = register(
        &ctx,
        &owner.access,
        draft_id,
        t.body["id"].as_str().unwrap(),
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(
        r.status, 422,
        "a draft takes no registrations (its organizer sees it)"
    );
    let r = register(
        &ctx,
        &participant().1,
        draft_id,
        t.body["id"].as_str().unwrap(),
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(r.status, 404, "a participant does not even see a draft");
}

#[tokio::test]
async fn reservations_expire_on_time_even_across_a_restart() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(
        &ctx,
        &owner,
        json!({"name": "Paid", "quantity": 2, "priceCents": 100000, "reservationMinutes": 15}),
    )
    .await;
    let (_, token) = participant();
    let r = register(
        &ctx,
        &token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.body["status"], "RESERVED");
    assert!(r.body["expiresAt"].is_string());
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(audit(&ctx, &ticket_type).await, (0, 1, 0, 1));

    ctx.clock.advance(Duration::minutes(14));
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(
        audit(&ctx, &ticket_type).await,
        (0, 1, 0, 1),
        "not before its time"
    );
    ctx.clock
        .advance(Duration::minutes(1) + Duration::seconds(1));
    let expired = eventually(5, || async {
        audit(&ctx, &ticket_type).await == (0, 0, 0, 0)
    })
    .await;
    assert!(expired, "the seat is freed");
    assert!(
        eventually(5, || async {
            !ctx.events.of("reservation.expired").is_empty()
        })
        .await
    );
    let me = send(
        ctx.http
            .get(format!("{}/api/v1/registrations/{id}", ctx.base))
            .bearer_auth(&token),
    )
    .await;
    assert_eq!(me.body["status"], "EXPIRED");
}

#[tokio::test]
async fn a_reservation_made_before_a_restart_expires_after_it() {
    let t = crate::support::TestDb::new().await;
    let clock = std::sync::Arc::new(domain::clock::ManualClock::new(Utc::now()));
    let node = bilet::node::start_with_clock(t.config.clone(), clock.clone())
        .await
        .unwrap();
    // Seed directly: an event, a paid type and a reservation due in 5 minutes.
    let owner = t.owner().await;
    let (tenant, event, ticket_type, registration) = (
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
        Uuid::now_v7(),
    );
    owner.batch_execute(&format!(
        "INSERT INTO event_service.events (id, tenant_id, organizer_id, title, slug, status, starts_at)
           VALUES ('{event}', '{tenant}', '{tenant}', 'E', 'e-{event}', 'PUBLISHED', now() + interval '3 days');
         INSERT INTO event_service.ticket_types (id, tenant_id, event_id, name, price_cents, quantity, reserved_count, reservation_minutes, created_at, updated_at)
           VALUES ('{ticket_type}', '{tenant}', '{event}', 'Paid', 100, 1, 1, 5, now(), now());
         INSERT INTO event_service.registrations (id, tenant_id, event_id, ticket_type_id, user_id, confirmation_code, status, price_cents, expires_at, created_at, updated_at)
           VALUES ('{registration}', '{tenant}', '{event}', '{ticket_type}', '{tenant}', 'ABCDEFGH', 'RESERVED', 100, now() + interval '5 minutes', now(), now());"
    )).await.unwrap();
    node.stop().await;
    // The process is gone; time passes; a new one starts and finds the deadline in the database.
    clock.advance(Duration::minutes(6));
    let node = bilet::node::start_with_clock(t.config.clone(), clock.clone())
        .await
        .unwrap();
    let db = node.state.db.clone();
    let freed = eventually(5, || async {
        storage::events::registrations::seat_audit(&db, ticket_type)
            .await
            .unwrap()
            == (0, 0, 0, 0)
    })
    .await;
    assert!(freed, "expired by the restarted process");
    let status: String = owner
        .query_one(
            &format!("SELECT status FROM event_service.registrations WHERE id = '{registration}'"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(status, "EXPIRED");
    node.stop().await;
}

async fn pay(ctx: &Ctx, kind: &str, registration: &str) -> Envelope {
    let envelope = Envelope::new(
        kind,
        None,
        None,
        json!({"registrationId": registration, "amountCents": 100000}),
    );
    ctx.publish(&envelope).await;
    envelope
}

impl Ctx {
    async fn publish(&self, event: &Envelope) {
        self.broker()
            .publish(std::slice::from_ref(event))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn payments_from_the_broker_confirm_or_cancel_once() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(
        &ctx,
        &owner,
        json!({"name": "Paid", "quantity": 5, "priceCents": 100000}),
    )
    .await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = register(
            &ctx,
            &participant().1,
            &event,
            &ticket_type,
            &Uuid::new_v4().to_string(),
        )
        .await;
        assert_eq!(
            r.body["status"], "PENDING",
            "paid without reservation minutes waits without a timer"
        );
        ids.push(r.body["id"].as_str().unwrap().to_string());
    }
    assert_eq!(audit(&ctx, &ticket_type).await, (0, 3, 0, 3));
    let paid = pay(&ctx, "payment.completed", &ids[0]).await;
    assert!(
        eventually(5, || async {
            audit(&ctx, &ticket_type).await == (1, 2, 1, 2)
        })
        .await,
        "confirmed"
    );
    ctx.publish(&paid).await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        audit(&ctx, &ticket_type).await,
        (1, 2, 1, 2),
        "a duplicate delivery changes nothing"
    );
    pay(&ctx, "payment.failed", &ids[1]).await;
    assert!(
        eventually(5, || async {
            audit(&ctx, &ticket_type).await == (1, 1, 1, 1)
        })
        .await,
        "failed payment frees the seat"
    );
    pay(&ctx, "payment.refunded", &ids[0]).await;
    assert!(
        eventually(5, || async {
            audit(&ctx, &ticket_type).await == (0, 1, 0, 1)
        })
        .await,
        "refund cancels"
    );
    // A payment that arrives after all (a retry went through) buys a free seat of the type.
    pay(&ctx, "payment.completed", &ids[1]).await;
    assert!(
        eventually(5, || async {
            audit(&ctx, &ticket_type).await == (1, 1, 1, 1)
        })
        .await,
        "a late payment takes a free seat"
    );
    let reg = ctx
        .get(
            &format!("/api/v1/registrations/{}", ids[1]),
            Some(&owner.access),
        )
        .await;
    assert_eq!(reg.body["status"], "CONFIRMED");
}

#[tokio::test]
async fn check_in_only_confirmed_and_only_once() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (other, _) = ctx.owner(&admin).await;
    let (event, free) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 5})).await;
    let paid = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Paid", "quantity": 5, "priceCents": 500, "reservationMinutes": 30}),
        )
        .await;
    let paid = paid.body["id"].as_str().unwrap().to_string();
    let (_, token) = participant();
    let r = register(&ctx, &token, &event, &free, &Uuid::new_v4().to_string()).await;
    let id = r.body["id"].as_str().unwrap().to_string();
    let code = r.body["confirmationCode"].as_str().unwrap().to_string();
    let check = |who: String, id: String| {
        let ctx = &ctx;
        async move {
            ctx.post(
                &format!("/api/v1/registrations/{id}/check-in"),
                Some(&who),
                json!({"method": "QR_CODE"}),
            )
            .await
        }
    };
    assert_eq!(
        check(token.clone(), id.clone()).await.status,
        403,
        "participants do not check themselves in"
    );
    assert_eq!(
        check(other.access.clone(), id.clone()).await.status,
        404,
        "another organization"
    );
    let done = check(owner.access.clone(), id.clone()).await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert_eq!(done.body["status"], "CHECKED_IN");
    let twice = check(owner.access.clone(), id.clone()).await;
    assert_eq!(twice.status, 409);
    assert_eq!(
        twice.body["message"],
        "The participant has already checked in"
    );
    let by_code = ctx
        .post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&owner.access),
            json!({"confirmationCode": code.to_lowercase()}),
        )
        .await;
    assert_eq!(by_code.status, 409, "the code of a checked-in participant");
    assert_eq!(
        ctx.delete(&format!("/api/v1/registrations/{id}"), Some(&token))
            .await
            .status,
        422,
        "no cancelling after check-in"
    );

    let (_, token2) = participant();
    let reserved = register(&ctx, &token2, &event, &paid, &Uuid::new_v4().to_string()).await;
    let refused = check(
        owner.access.clone(),
        reserved.body["id"].as_str().unwrap().to_string(),
    )
    .await;
    assert_eq!(refused.status, 422, "not confirmed yet");
    assert_eq!(
        refused.body["message"],
        "Only a confirmed registration can be checked in"
    );
    let (_, token3) = participant();
    let r3 = register(&ctx, &token3, &event, &free, &Uuid::new_v4().to_string()).await;
    let door = ctx
        .post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&owner.access),
            json!({"confirmationCode": r3.body["confirmationCode"]}),
        )
        .await;
    assert_eq!(door.status, 200);
    assert!(
        eventually(5, || async {
            ctx.events.of("checkin.completed").len() == 2
        })
        .await
    );
    assert_eq!(
        ctx.events.of("checkin.completed")[1].data.value()["method"],
        "MANUAL"
    );
    assert_eq!(
        ctx.post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&owner.access),
            json!({"confirmationCode": "ZZZZZZZZ"})
        )
        .await
        .status,
        404
    );
    assert_eq!(
        ctx.post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&owner.access),
            json!({"confirmationCode": "short"})
        )
        .await
        .status,
        400
    );
    assert_eq!(
        ctx.post(
            &format!("/api/v1/registrations/{id}/check-in"),
            Some(&owner.access),
            json!({"method": "TELEPATHY"})
        )
        .await
        .status,
        400
    );
    assert_eq!(
        audit(&ctx, &free).await,
        (2, 0, 2, 0),
        "a checked-in seat stays sold"
    );
}

#[tokio::test]
async fn cancellation_frees_the_seat_and_lists_follow_visibility() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 3})).await;
    let (alice, alice_token) = participant();
    let (_, bob_token) = participant();
    let (_, carol_token) = participant();
    let a = register(
        &ctx,
        &alice_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    register(
        &ctx,
        &bob_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    let a_id = a.body["id"].as_str().unwrap().to_string();

    // CLOSED: a participant sees only their own registration.
    let mine = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations"),
            Some(&alice_token),
        )
        .await;
    assert_eq!(mine.body["totalElements"], 1);
    assert_eq!(mine.body["data"][0]["userId"], alice.to_string());
    let all = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations?status=CONFIRMED"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(all.body["totalElements"], 2);
    assert!(all.body["data"][0]["confirmationCode"].is_string());
    assert_eq!(
        ctx.get(&format!("/api/v1/registrations/{a_id}"), Some(&bob_token))
            .await
            .status,
        404
    );

    // OPEN: registered participants see the others, without their codes.
    ctx.put(
        &format!("/api/v1/events/{event}"),
        Some(&owner.access),
        json!({"participantsVisibility": "OPEN"}),
    )
    .await;
    let open = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations"),
            Some(&alice_token),
        )
        .await;
    assert_eq!(open.body["totalElements"], 2);
    let others: Vec<&Value> = open.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["userId"] != alice.to_string().as_str())
        .collect();
    assert!(others[0]["confirmationCode"].is_null() && others[0]["firstName"] == "Ann");
    let outsider = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations"),
            Some(&carol_token),
        )
        .await;
    assert_eq!(
        outsider.body["totalElements"], 0,
        "not registered: sees nobody"
    );

    assert_eq!(
        ctx.delete(&format!("/api/v1/registrations/{a_id}"), Some(&bob_token))
            .await
            .status,
        404,
        "not Bob's"
    );
    assert_eq!(
        ctx.delete(&format!("/api/v1/registrations/{a_id}"), Some(&alice_token))
            .await
            .status,
        204
    );
    assert_eq!(
        ctx.delete(&format!("/api/v1/registrations/{a_id}"), Some(&alice_token))
            .await
            .status,
        204,
        "already cancelled: DELETE's wish stands"
    );
    assert_eq!(audit(&ctx, &ticket_type).await, (1, 0, 1, 0));
    let again = register(
        &ctx,
        &alice_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(
        again.status, 201,
        "a cancelled registration does not block a new one"
    );
    assert!(
        eventually(5, || async {
            !ctx.events.of("registration.cancelled").is_empty()
        })
        .await
    );
    let cancelled = &ctx.events.of("registration.cancelled")[0];
    assert_eq!(cancelled.data.value()["event"]["title"], "Show");
}

async fn my_entries(ctx: &Ctx, user: Uuid, event: &str) -> Vec<String> {
    storage::events::waitlist::mine(&ctx.t.db, domain::ids::UserId(user), event.parse().unwrap())
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.status)
        .collect()
}

#[tokio::test]
async fn waiting_list_hands_a_freed_seat_down_the_queue() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 1})).await;
    let waitlist = format!("/api/v1/events/{event}/waitlist");
    let (a, a_token) = participant();
    let (b, b_token) = participant();
    let (c, c_token) = participant();
    let early = ctx
        .post(
            &waitlist,
            Some(&b_token),
            json!({"ticketTypeId": ticket_type}),
        )
        .await;
    assert_eq!(early.status, 422, "seats are still available");
    let ra = register(
        &ctx,
        &a_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(ra.status, 201);
    assert_eq!(
        ctx.post(
            &waitlist,
            Some(&a_token),
            json!({"ticketTypeId": ticket_type})
        )
        .await
        .status,
        409,
        "already registered"
    );
    let jb = ctx
        .post(
            &waitlist,
            Some(&b_token),
            json!({"ticketTypeId": ticket_type}),
        )
        .await;
    assert_eq!(jb.status, 201, "{}", jb.body);
    assert_eq!(jb.body["status"], "WAITING");
    assert_eq!(
        ctx.post(
            &waitlist,
            Some(&b_token),
            json!({"ticketTypeId": ticket_type})
        )
        .await
        .status,
        409,
        "once"
    );
    ctx.clock.advance(Duration::seconds(1));
    assert_eq!(
        ctx.post(
            &waitlist,
            Some(&c_token),
            json!({"ticketTypeId": ticket_type})
        )
        .await
        .status,
        201
    );

    // A cancels: the seat is held for B, first in the queue.
    assert_eq!(
        ctx.delete(
            &format!("/api/v1/registrations/{}", ra.body["id"].as_str().unwrap()),
            Some(&a_token)
        )
        .await
        .status,
        204
    );
    assert_eq!(my_entries(&ctx, b, &event).await, vec!["NOTIFIED"]);
    assert_eq!(my_entries(&ctx, c, &event).await, vec!["WAITING"]);
    assert_eq!(
        audit(&ctx, &ticket_type).await,
        (0, 1, 0, 0),
        "held, not free"
    );
    let c_try = register(
        &ctx,
        &c_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(c_try.status, 422, "the held seat is not C's");
    assert!(
        eventually(5, || async {
            ctx.events
                .of("waitlist.available")
                .iter()
                .any(|e| e.data.value()["userId"] == b.to_string().as_str())
        })
        .await
    );

    // B takes it.
    let rb = register(
        &ctx,
        &b_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(rb.status, 201, "{}", rb.body);
    assert_eq!(my_entries(&ctx, b, &event).await, vec!["CONVERTED"]);
    assert_eq!(audit(&ctx, &ticket_type).await, (1, 0, 1, 0));

    // B cancels: C is notified, lets 24 hours pass, and the hold expires.
    ctx.delete(
        &format!("/api/v1/registrations/{}", rb.body["id"].as_str().unwrap()),
        Some(&b_token),
    )
    .await;
    assert_eq!(my_entries(&ctx, c, &event).await, vec!["NOTIFIED"]);
    ctx.clock
        .advance(Duration::hours(24) + Duration::seconds(1));
    let expired = eventually(5, || async {
        my_entries(&ctx, c, &event).await == vec!["EXPIRED"]
    })
    .await;
    assert!(expired, "the hold runs out after 24 hours");
    assert_eq!(
        audit(&ctx, &ticket_type).await,
        (0, 0, 0, 0),
        "nobody else waits: the seat is free again"
    );
    let _ = a;

    let (_, d_token) = participant();
    let (_, e_token) = participant();
    register(
        &ctx,
        &d_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(
        ctx.post(
            &waitlist,
            Some(&e_token),
            json!({"ticketTypeId": ticket_type})
        )
        .await
        .status,
        201
    );
    assert_eq!(ctx.delete(&waitlist, Some(&e_token)).await.status, 204);
    assert_eq!(ctx.delete(&waitlist, Some(&e_token)).await.status, 404);
    assert_eq!(
        ctx.post(
            &waitlist,
            Some(&e_token),
            json!({"ticketTypeId": Uuid::now_v7()})
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn the_caller_reads_their_own_open_waiting_list_entries() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (stranger, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 1})).await;
    let waitlist = format!("/api/v1/events/{event}/waitlist");
    let (_, a_token) = participant();
    let (_, b_token) = participant();
    let (_, c_token) = participant();
    let ra = register(
        &ctx,
        &a_token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(ra.status, 201, "{}", ra.body);

    // Not on the list: nothing to read.
    let before = ctx.get(&waitlist, Some(&b_token)).await;
    assert_eq!((before.status, &before.body), (200, &json!([])));
    let jb = ctx
        .post(
            &waitlist,
            Some(&b_token),
            json!({"ticketTypeId": ticket_type}),
        )
        .await;
    assert_eq!(jb.status, 201, "{}", jb.body);
    ctx.clock.advance(Duration::seconds(1));
    // Someone whose token is for another organization waits too.
    let js = ctx
        .post(
            &waitlist,
            Some(&stranger.access),
            json!({"ticketTypeId": ticket_type}),
        )
        .await;
    assert_eq!(js.status, 201, "{}", js.body);

    // The caller's entry, as joining answered it.
    let mine = ctx.get(&waitlist, Some(&b_token)).await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert_eq!(mine.body.as_array().map(Vec::len), Some(1), "{}", mine.body);
    assert_eq!(mine.body[0], jb.body);
    assert_eq!(mine.body[0]["status"], "WAITING");
    assert_eq!(mine.body[0]["eventId"], event.as_str());
    assert_eq!(mine.body[0]["ticketTypeId"], ticket_type.as_str());
    assert!(mine.body[0]["createdAt"].is_string(), "{}", mine.body);
    assert!(mine.body[0]["expiresAt"].is_null(), "{}", mine.body);
    // Only one's own entry, whatever organization the token is for.
    let theirs = ctx.get(&waitlist, Some(&stranger.access)).await;
    assert_eq!(theirs.status, 200, "{}", theirs.body);
    assert_eq!(
        theirs.body.as_array().map(Vec::len),
        Some(1),
        "{}",
        theirs.body
    );
    assert_eq!(theirs.body[0]["id"], js.body["id"]);
    // The event's organizer sees the event, but nobody's entries here; nor does someone who
    // waits on nothing.
    let organizer = ctx.get(&waitlist, Some(&owner.access)).await;
    assert_eq!((organizer.status, &organizer.body), (200, &json!([])));
    let nothing = ctx.get(&waitlist, Some(&c_token)).await;
    assert_eq!((nothing.status, &nothing.body), (200, &json!([])));

    // Refusals: no token, a token that is not one, an id that is not one, an unknown event.
    let anonymous = ctx.get(&waitlist, None).await;
    assert_eq!(
        (anonymous.status, anonymous.body["code"].as_str()),
        (401, Some("unauthorized")),
        "{}",
        anonymous.body
    );
    assert_eq!(ctx.get(&waitlist, Some("not-a-token")).await.status, 401);
    let bad = ctx
        .get("/api/v1/events/not-an-id/waitlist", Some(&b_token))
        .await;
    assert_eq!(
        (bad.status, bad.body["code"].as_str()),
        (400, Some("validation_error")),
        "{}",
        bad.body
    );
    let unknown = ctx
        .get(
            &format!("/api/v1/events/{}/waitlist", Uuid::now_v7()),
            Some(&b_token),
        )
        .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);

    // A's seat frees: it is held for B, who reads until when.
    assert_eq!(
        ctx.delete(
            &format!("/api/v1/registrations/{}", ra.body["id"].as_str().unwrap()),
            Some(&a_token)
        )
        .await
        .status,
        204
    );
    let offered = ctx.get(&waitlist, Some(&b_token)).await;
    assert_eq!(offered.status, 200, "{}", offered.body);
    assert_eq!(offered.body[0]["status"], "NOTIFIED", "{}", offered.body);
    assert!(
        offered.body[0]["notifiedAt"].is_string() && offered.body[0]["expiresAt"].is_string(),
        "{}",
        offered.body
    );
    assert_eq!(
        ctx.get(&waitlist, Some(&stranger.access)).await.body[0]["status"],
        "WAITING"
    );

    // Leaving closes the entry: nothing open is left to read, and the seat goes on.
    assert_eq!(ctx.delete(&waitlist, Some(&b_token)).await.status, 204);
    let left = ctx.get(&waitlist, Some(&b_token)).await;
    assert_eq!((left.status, &left.body), (200, &json!([])));
    assert_eq!(
        ctx.get(&waitlist, Some(&stranger.access)).await.body[0]["status"],
        "NOTIFIED"
    );
}

#[tokio::test]
async fn reminders_go_out_once_a_day_before() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let tomorrow = ctx.post("/api/v1/events", Some(&owner.access), json!({"title": "Tomorrow", "startsAt": (Utc::now() + Duration::hours(23)).to_rfc3339()})).await;
    let id = tomorrow.body["id"].as_str().unwrap().to_string();
    ctx.post_empty(&format!("/api/v1/events/{id}/publish"), Some(&owner.access))
        .await;
    setup(&ctx, &owner, json!({"name": "Later", "quantity": 1})).await;
    assert_eq!(ctx.remind_due().await, 1, "only the event within 24 hours");
    assert_eq!(ctx.remind_due().await, 0, "once");
    assert!(eventually(5, || async { ctx.events.of("event.reminder").len() == 1 }).await);
    assert_eq!(
        ctx.events.of("event.reminder")[0].data.value()["eventId"],
        id.as_str()
    );
}

#[tokio::test]
async fn the_event_actor_sends_its_own_reminder() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    use domain::clock::Clock;
    let starts = ctx.clock.now() + Duration::hours(25);
    let created = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Day after", "startsAt": starts.to_rfc3339()}),
        )
        .await;
    let event = created.body["id"].as_str().unwrap().to_string();
    let t = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Free", "quantity": 5}),
        )
        .await;
    ctx.post_empty(
        &format!("/api/v1/events/{event}/publish"),
        Some(&owner.access),
    )
    .await;
    // A registration starts the event's actor, which reads when the reminder is due.
    let r = register(
        &ctx,
        &participant().1,
        &event,
        t.body["id"].as_str().unwrap(),
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(ctx.ticketing().running().await, 1);
    assert!(ctx.events.of("event.reminder").is_empty());
    // The node's sweep runs once a minute; the actor's timer checks within seconds.
    ctx.clock.advance(Duration::hours(1) + Duration::minutes(1));
    assert!(eventually(15, || async { !ctx.events.of("event.reminder").is_empty() }).await);
    let reminders = ctx.events.of("event.reminder");
    assert_eq!(reminders.len(), 1);
    assert_eq!(reminders[0].data.value()["eventId"], event.as_str());
}

#[tokio::test]
async fn idle_actors_stop_and_start_again_on_the_next_request() {
    let ctx = Ctx::with_config(|c| c.ticketing.idle_seconds = 1).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 5})).await;
    let first = register(
        &ctx,
        &participant().1,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(ctx.ticketing().running().await, 1);
    assert!(
        eventually(10, || async { ctx.ticketing().running().await == 0 }).await,
        "the event actor stops once its ticket-type actor stopped and it was idle"
    );
    // Its handle goes with it: a stopped actor's mailbox is not kept until the next request.
    assert!(
        eventually(5, || async { ctx.ticketing().remembered() == 0 }).await,
        "the registry still holds {} stopped actors",
        ctx.ticketing().remembered()
    );
    let second = register(
        &ctx,
        &participant().1,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(second.status, 201, "{}", second.body);
    assert_eq!(ctx.ticketing().running().await, 1);
    assert_eq!(audit(&ctx, &ticket_type).await, (2, 0, 2, 0));
}

#[tokio::test]
async fn the_door_tells_a_ticket_of_another_event_from_an_unknown_code() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (stranger, _) = ctx.owner(&admin).await;
    let (hall_a, _) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 5})).await;
    let (hall_b, free_b) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 5})).await;
    let (elsewhere, _) = setup(&ctx, &stranger, json!({"name": "Free", "quantity": 5})).await;
    let (_, token) = participant();
    let r = register(&ctx, &token, &hall_b, &free_b, &Uuid::new_v4().to_string()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let code = r.body["confirmationCode"].as_str().unwrap().to_string();
    let title_b = ctx
        .get(&format!("/api/v1/events/{hall_b}"), Some(&owner.access))
        .await
        .body["title"]
        .clone();

    let at = |event: String, token: String, code: String| {
        let ctx = &ctx;
        async move {
            ctx.post(
                &format!("/api/v1/events/{event}/check-in"),
                Some(&token),
                json!({"confirmationCode": code}),
            )
            .await
        }
    };
    // Typed at hall A's door: refused, naming hall B, and nothing changes.
    let wrong_door = at(hall_a.clone(), owner.access.clone(), code.to_lowercase()).await;
    assert_eq!(wrong_door.status, 422, "{}", wrong_door.body);
    assert_eq!(wrong_door.body["code"], "business_rule_violation");
    assert_eq!(
        wrong_door.body["message"],
        "This ticket is for another event"
    );
    assert_eq!(wrong_door.body["details"]["eventId"], hall_b.as_str());
    assert_eq!(wrong_door.body["details"]["eventTitle"], title_b);
    let id = r.body["id"].as_str().unwrap();
    let still = ctx
        .get(&format!("/api/v1/registrations/{id}"), Some(&owner.access))
        .await;
    assert_eq!(still.body["status"], "CONFIRMED");
    // Another organization's door learns nothing of it: an unknown code.
    let other_org = at(elsewhere, stranger.access.clone(), code.clone()).await;
    assert_eq!(other_org.status, 404, "{}", other_org.body);
    assert!(
        other_org.body.get("details").is_none(),
        "{}",
        other_org.body
    );
    // A code no event has is unknown; the right door accepts the ticket.
    assert_eq!(
        at(hall_a, owner.access.clone(), "ZZZZZZZZ".into())
            .await
            .status,
        404
    );
    let right = at(hall_b, owner.access.clone(), code).await;
    assert_eq!(right.status, 200, "{}", right.body);
    assert_eq!(right.body["status"], "CHECKED_IN");
}

#[tokio::test]
async fn sixty_four_events_on_sale_together_each_sell_exactly_out() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    const EVENTS: usize = 64;
    const SEATS: usize = 6;
    const ASKING: usize = 10;
    let mut sales = Vec::new();
    for _ in 0..EVENTS {
        sales.push(setup(&ctx, &owner, json!({"name": "Free", "quantity": SEATS})).await);
    }
    // Round-robin over the events, all at once: the node's committer gets many ticket types'
    // small batches together.
    let asks: Vec<(usize, String)> = (0..EVENTS * ASKING)
        .map(|i| (i % EVENTS, participant().1))
        .collect();
    let replies = futures_util::future::join_all(asks.iter().map(|(sale, token)| {
        let (ctx, (event, ticket_type)) = (&ctx, &sales[*sale]);
        async move {
            let r = register(ctx, token, event, ticket_type, &Uuid::new_v4().to_string()).await;
            (*sale, r)
        }
    }))
    .await;
    for (sale, (_, ticket_type)) in sales.iter().enumerate() {
        let mine: Vec<&crate::support::Reply> = replies
            .iter()
            .filter(|(s, _)| *s == sale)
            .map(|(_, r)| r)
            .collect();
        let created = mine.iter().filter(|r| r.status == 201).count();
        let sold_out = mine
            .iter()
            .filter(|r| r.status == 422 && r.body["code"] == "sold_out")
            .count();
        assert_eq!(
            (created, sold_out),
            (SEATS, ASKING - SEATS),
            "event {sale}: every seat sold, every other answer a clean sold-out"
        );
        assert_eq!(
            audit(&ctx, ticket_type).await,
            (SEATS as i32, 0, SEATS as i64, 0),
            "event {sale}: counts equal the rows, nothing oversold"
        );
    }
    assert!(
        eventually(10, || async {
            ctx.events.of("registration.created").len() == EVENTS * SEATS
        })
        .await,
        "one announcement per registration"
    );
}

#[tokio::test]
async fn batches_of_several_organizations_commit_together_and_keep_their_answers() {
    use storage::events::seats::{self, SeatBatch, SeatOutcome, SeatRequest};
    let t = crate::support::TestDb::new().await;
    let owner = t.owner().await;
    let db = t.db.clone();
    // Two organizations, each an event with one free ticket type: one seat and two seats.
    let mut types = Vec::new();
    for seats in [1, 2] {
        let (tenant, event, ticket_type) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        owner.batch_execute(&format!(
            "INSERT INTO event_service.events (id, tenant_id, organizer_id, title, slug, status, starts_at)
               VALUES ('{event}', '{tenant}', '{tenant}', 'E', 'e-{event}', 'PUBLISHED', now() + interval '3 days');
             INSERT INTO event_service.ticket_types (id, tenant_id, event_id, name, price_cents, quantity, created_at, updated_at)
               VALUES ('{ticket_type}', '{tenant}', '{event}', 'Free', 0, {seats}, now(), now());"
        )).await.unwrap();
        types.push((domain::ids::TenantId(tenant), event, ticket_type));
    }
    // The batches go in against ticket-type order, so the answers must find their way back.
    types.sort_by_key(|(_, _, ticket_type)| std::cmp::Reverse(*ticket_type));
    let ask = |event: Uuid| SeatRequest {
        event,
        user: domain::ids::UserId::new(),
        caller_tenant: None,
        key: Uuid::new_v4(),
        request_hash: vec![1],
        email: None,
        first_name: "Ann".into(),
        last_name: "Lee".into(),
        custom_fields: json!({}),
        source: None,
        admitted: false,
    };
    let requests: Vec<Vec<SeatRequest>> = types
        .iter()
        .map(|(_, event, _)| vec![ask(*event), ask(*event)])
        .collect();
    let batches: Vec<SeatBatch<'_>> = types
        .iter()
        .zip(&requests)
        .map(|((tenant, _, ticket_type), requests)| SeatBatch {
            tenant: *tenant,
            ticket_type: *ticket_type,
            requests,
            now: Utc::now(),
        })
        .collect();
    let fence = storage::cluster::Fence::new("test", vec![]);
    let outcomes = seats::commit_batches(&db, &fence, &batches).await.unwrap();
    assert_eq!(outcomes.len(), 2);
    for ((tenant, event, ticket_type), answers) in types.iter().zip(&outcomes) {
        let seats = storage::events::registrations::seat_audit(&db, *ticket_type)
            .await
            .unwrap()
            .0 as usize;
        let created: Vec<_> = answers
            .iter()
            .filter_map(|o| match o {
                SeatOutcome::Created(r) => Some(r),
                _ => None,
            })
            .collect();
        assert_eq!(created.len(), seats, "each type sold its own seats");
        assert!(created.iter().all(|r| r.ticket_type_id == *ticket_type
            && r.event_id == *event
            && r.tenant_id == *tenant));
        assert_eq!(
            answers.len() - created.len(),
            answers
                .iter()
                .filter(|o| matches!(
                    o,
                    SeatOutcome::Refused(domain::events::seats::SeatRefusal::SoldOut)
                ))
                .count()
        );
    }
    // One announcement per registration, each with its own organization.
    let announced: i64 = owner
        .query_one(
            "SELECT count(*) FROM event_service.outbox WHERE event_type = 'registration.created'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(announced, 3);
}

/// A published event of `tenant` with free ticket types of `quantity` seats, straight into the
/// database (the seat path's own tests, below the actors).
async fn event_on_sale(
    owner: &tokio_postgres::Client,
    tenant: Uuid,
    event: Uuid,
    types: &[Uuid],
    quantity: i32,
) {
    owner.batch_execute(&format!(
        "INSERT INTO event_service.events (id, tenant_id, organizer_id, title, slug, status, starts_at)
           VALUES ('{event}', '{tenant}', '{tenant}', 'E', 'e-{event}', 'PUBLISHED', now() + interval '3 days');"
    )).await.unwrap();
    for ticket_type in types {
        owner.batch_execute(&format!(
            "INSERT INTO event_service.ticket_types (id, tenant_id, event_id, name, price_cents, quantity, created_at, updated_at)
               VALUES ('{ticket_type}', '{tenant}', '{event}', 'Free', 0, {quantity}, now(), now());"
        )).await.unwrap();
    }
}

/// A seat request for `event` by `user` with `key`; `hash` stands for what it asks.
fn seat_request(
    event: Uuid,
    user: domain::ids::UserId,
    key: Uuid,
    hash: u8,
) -> storage::events::seats::SeatRequest {
    storage::events::seats::SeatRequest {
        event,
        user,
        caller_tenant: None,
        key,
        request_hash: vec![hash],
        email: None,
        first_name: "Ann".into(),
        last_name: "Lee".into(),
        custom_fields: json!({}),
        source: None,
        admitted: false,
    }
}

/// A batch of `requests` for a ticket type of `tenant`, judged now.
fn seat_batch(
    tenant: Uuid,
    ticket_type: Uuid,
    requests: &[storage::events::seats::SeatRequest],
) -> storage::events::seats::SeatBatch<'_> {
    storage::events::seats::SeatBatch {
        tenant: domain::ids::TenantId(tenant),
        ticket_type,
        requests,
        now: Utc::now(),
    }
}

/// What the statistics views say `table` of the event service has been through:
/// (rows read by sequential scans, rows fetched through an index, rows inserted).
async fn table_reads(owner: &tokio_postgres::Client, table: &str) -> (i64, i64, i64) {
    let row = owner
        .query_one(
            "SELECT seq_tup_read, coalesce(idx_tup_fetch, 0), n_tup_ins FROM pg_stat_user_tables
             WHERE schemaname = 'event_service' AND relname = $1",
            &[&table],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test]
async fn seat_transactions_probe_by_key_on_plans_made_while_the_tables_were_empty() {
    use storage::events::seats;
    let t = crate::support::TestDb::new().await;
    let owner = t.owner().await;
    let (tenant, event, ticket_type) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    event_on_sale(&owner, tenant, event, &[ticket_type], 100_000).await;
    // Statistics that say the tables are empty, as autovacuum leaves them on a new installation
    // before its first sale; then 10,000 people, known to the event service, not analyzed.
    owner.batch_execute("ANALYZE").await.unwrap();
    owner
        .batch_execute(
            "SET app.system = 'on';
             INSERT INTO event_service.people (user_id, email, first_name, last_name, updated_at)
             SELECT gen_random_uuid(), 'p' || i || '@example.com', 'P', 'Q', now()
             FROM generate_series(1, 10000) AS i;",
        )
        .await
        .unwrap();
    let pool = |size: usize| {
        let mut settings = t.config.database.clone();
        settings.pool_size = size;
        storage::db::Database::connect(&settings).unwrap()
    };
    // One connection whose plans are made now, while the sale has not begun.
    let held = pool(1);
    let grow = pool(4);
    let fence = storage::cluster::Fence::new("test", vec![]);
    let commit = async |db: &storage::db::Database, n: usize| {
        let requests: Vec<_> = (0..n)
            .map(|_| seat_request(event, domain::ids::UserId::new(), Uuid::new_v4(), 1))
            .collect();
        let tenant = domain::ids::TenantId(tenant);
        let outcomes = seats::commit_batch(db, &fence, tenant, ticket_type, &requests, Utc::now())
            .await
            .unwrap();
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, seats::SeatOutcome::Created(_)))
        );
    };
    commit(&held, 2).await;
    // The sale grows the tables: 10,000 registrations and their idempotency records.
    for _ in 0..40 {
        commit(&grow, 250).await;
    }
    // The held connection sells on with the plans it made when everything was empty.
    for _ in 0..5 {
        commit(&held, 250).await;
    }
    let sold: i64 = 2 + 40 * 250 + 5 * 250;
    // A connection that ends reports its statistics. Rows an attempt inserted before it drew
    // a confirmation code twice and was run again count too (about one run in seventeen draws
    // one twice among 11,252 codes), so at least `sold`.
    drop((held, grow));
    let reported = eventually(15, || async {
        table_reads(&owner, "registrations").await.2 >= sold
    })
    .await;
    assert!(reported, "every insert reported");
    for table in ["seat_requests", "registrations", "people"] {
        let (scanned, _, _) = table_reads(&owner, table).await;
        assert_eq!(scanned, 0, "{table} was read by a sequential scan");
    }
    // A probe of the people's key for each person (none of them is known), never the whole
    // table through its index for a batch.
    let (_, people_fetched, _) = table_reads(&owner, "people").await;
    assert!(
        people_fetched <= sold,
        "{people_fetched} people fetched for {sold} registrations"
    );
}

#[tokio::test]
async fn a_confirmation_code_drawn_twice_is_drawn_again_and_the_batch_stays_whole() {
    use storage::events::seats::{self, SeatOutcome};
    let t = crate::support::TestDb::new().await;
    let owner = t.owner().await;
    let (tenant, event, ticket_type) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    event_on_sale(&owner, tenant, event, &[ticket_type], 10).await;
    let fence = storage::cluster::Fence::new("test", vec![]);
    let ask = || seat_request(event, domain::ids::UserId::new(), Uuid::new_v4(), 1);
    let commit = async |requests: &[storage::events::seats::SeatRequest]| {
        let tenant = domain::ids::TenantId(tenant);
        seats::commit_batch(&t.db, &fence, tenant, ticket_type, requests, Utc::now()).await
    };
    storage::faults::draw_codes(event, &["TAKEN234"]);
    let outcomes = commit(&[ask()]).await.unwrap();
    assert!(
        matches!(&outcomes[..], [SeatOutcome::Created(r)] if r.confirmation_code == "TAKEN234")
    );

    // The second batch's first seat draws the taken code, then (its transaction run again)
    // codes of chance: the batch is committed whole, in one piece, each with a code of its own.
    storage::faults::draw_codes(event, &["FREE2345", "FREE3456", "TAKEN234"]);
    let outcomes = commit(&[ask(), ask(), ask()])
        .await
        .expect("a code drawn twice does not fail the batch");
    let codes: Vec<&str> = outcomes
        .iter()
        .map(|o| match o {
            SeatOutcome::Created(r) => r.confirmation_code.as_str(),
            other => panic!("every request gets a seat, got {other:?}"),
        })
        .collect();
    assert_eq!(codes.len(), 3);
    assert!(!codes.contains(&"TAKEN234"), "{codes:?}");
    assert!(
        !codes.contains(&"FREE2345"),
        "the attempt that failed left nothing: {codes:?}"
    );
    let mut distinct = codes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{codes:?}");
    let (sold, registrations): (i32, i64) = {
        let row = owner
            .query_one(
                "SELECT (SELECT sold_count FROM event_service.ticket_types WHERE id = $1),
                        (SELECT count(*) FROM event_service.registrations WHERE ticket_type_id = $1)",
                &[&ticket_type],
            )
            .await
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!((sold, registrations), (4, 4), "counted once, written once");
}

#[tokio::test]
async fn one_joint_transaction_judges_each_type_by_its_own_event_people_and_keys() {
    use domain::events::seats::SeatRefusal;
    use storage::events::seats::{self, SeatOutcome};
    let t = crate::support::TestDb::new().await;
    let owner = t.owner().await;
    let db = t.db.clone();
    // Organization A: one event with two ticket types; organization B: one event, one type.
    let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
    let (event_a, event_b) = (Uuid::now_v7(), Uuid::now_v7());
    let (first, second, other) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
    event_on_sale(&owner, a, event_a, &[first, second], 2).await;
    event_on_sale(&owner, b, event_b, &[other], 2).await;
    let person = domain::ids::UserId::new();
    let key = Uuid::new_v4();
    let fence = storage::cluster::Fence::new("test", vec![]);
    // The same person with the same key registers with both organizations in one transaction:
    // a key belongs to one organization's requests.
    let (in_a, in_b) = (
        vec![seat_request(event_a, person, key, 1)],
        vec![seat_request(event_b, person, key, 1)],
    );
    let outcomes = seats::commit_batches(
        &db,
        &fence,
        &[seat_batch(a, first, &in_a), seat_batch(b, other, &in_b)],
    )
    .await
    .unwrap();
    let registered_in_a = match &outcomes[0][..] {
        [SeatOutcome::Created(r)] => r.id,
        other => panic!("a seat in A, got {other:?}"),
    };
    assert!(matches!(&outcomes[1][..], [SeatOutcome::Created(r)] if r.tenant_id.as_uuid() == b));

    // Then, in one transaction: the same request again in A (its first answer), the person
    // asking for A's other type (already registered for that event), the same key with
    // another request in B (refused), and someone new sending one key twice.
    let newcomer = domain::ids::UserId::new();
    let twice = Uuid::new_v4();
    let (again, other_type, reused) = (
        vec![seat_request(event_a, person, key, 1)],
        vec![
            seat_request(event_a, person, Uuid::new_v4(), 2),
            seat_request(event_a, newcomer, twice, 3),
            seat_request(event_a, newcomer, twice, 3),
        ],
        vec![seat_request(event_b, person, key, 9)],
    );
    let outcomes = seats::commit_batches(
        &db,
        &fence,
        &[
            seat_batch(b, other, &reused),
            seat_batch(a, second, &other_type),
            seat_batch(a, first, &again),
        ],
    )
    .await
    .unwrap();
    assert_eq!(outcomes[0], vec![SeatOutcome::KeyReused]);
    let [taken, seat, repeat] = &outcomes[1][..] else {
        panic!("three answers for the second type, got {:?}", outcomes[1]);
    };
    assert_eq!(taken, &SeatOutcome::Refused(SeatRefusal::AlreadyRegistered));
    let SeatOutcome::Created(newcomers) = seat else {
        panic!("the newcomer gets a seat, got {seat:?}");
    };
    assert_eq!(
        (newcomers.ticket_type_id, newcomers.user_id),
        (second, newcomer)
    );
    assert_eq!(repeat, &SeatOutcome::Replayed(Box::new(seat.clone())));
    assert!(
        matches!(&outcomes[2][..], [SeatOutcome::Replayed(r)] if matches!(&**r, SeatOutcome::Created(r) if r.id == registered_in_a)),
        "the repeated request gets its first registration back, got {:?}",
        outcomes[2]
    );
    // A request naming another event than its ticket type's is not found, and the batch
    // beside it in the transaction is unaffected.
    let (astray, beside) = (
        vec![seat_request(
            event_b,
            domain::ids::UserId::new(),
            Uuid::new_v4(),
            4,
        )],
        vec![seat_request(
            event_b,
            domain::ids::UserId::new(),
            Uuid::new_v4(),
            5,
        )],
    );
    let outcomes = seats::commit_batches(
        &db,
        &fence,
        &[
            seat_batch(a, second, &astray),
            seat_batch(b, other, &beside),
        ],
    )
    .await
    .unwrap();
    assert_eq!(outcomes[0], vec![SeatOutcome::NotFound]);
    assert!(matches!(&outcomes[1][..], [SeatOutcome::Created(r)] if r.ticket_type_id == other));
    for (ticket_type, sold) in [(first, 1), (second, 1), (other, 2)] {
        assert_eq!(
            storage::events::registrations::seat_audit(&db, ticket_type)
                .await
                .unwrap()
                .0,
            sold,
            "each type counts only its own seats"
        );
    }
}

/// With more seats free than a batch asks for, nobody's registration is probed before the
/// insert: the insert itself skips a person already registered for the event (earlier, or by
/// another ticket type's batch of the same transaction). They are refused as registered, their
/// key remembers that, and no seat is counted for them.
#[tokio::test]
async fn a_person_already_registered_is_refused_by_the_insert_and_costs_no_seat() {
    use domain::events::seats::SeatRefusal;
    use storage::events::seats::{self, SeatOutcome};
    let t = crate::support::TestDb::new().await;
    let owner = t.owner().await;
    let db = t.db.clone();
    let (tenant, event) = (Uuid::now_v7(), Uuid::now_v7());
    let (first, second) = (Uuid::now_v7(), Uuid::now_v7());
    event_on_sale(&owner, tenant, event, &[first, second], 50).await;
    let ask = |user, key| seat_request(event, user, key, 1);
    let fence = storage::cluster::Fence::new("test", vec![]);
    let (person, both, newcomer) = (
        domain::ids::UserId::new(),
        domain::ids::UserId::new(),
        domain::ids::UserId::new(),
    );
    let earlier = [ask(person, Uuid::new_v4())];
    let outcomes = seats::commit_batches(&db, &fence, &[seat_batch(tenant, first, &earlier)])
        .await
        .unwrap();
    assert!(matches!(&outcomes[0][..], [SeatOutcome::Created(r)] if r.user_id == person));

    // One transaction: the registered person asks for the other type beside a newcomer, and
    // someone else asks for both types at once.
    let (key, both_key) = (Uuid::new_v4(), Uuid::new_v4());
    let in_second = [
        ask(person, key),
        ask(newcomer, Uuid::new_v4()),
        ask(both, both_key),
    ];
    let in_first = [ask(both, Uuid::new_v4())];
    let outcomes = seats::commit_batches(
        &db,
        &fence,
        &[
            seat_batch(tenant, first, &in_first),
            seat_batch(tenant, second, &in_second),
        ],
    )
    .await
    .unwrap();
    let refused = SeatOutcome::Refused(SeatRefusal::AlreadyRegistered);
    let [in_first] = &outcomes[0][..] else {
        panic!("one answer for the first type, got {:?}", outcomes[0]);
    };
    let [again, new, in_second] = &outcomes[1][..] else {
        panic!("three answers for the second type, got {:?}", outcomes[1]);
    };
    assert_eq!(again, &refused, "registered earlier");
    assert!(
        matches!(new, SeatOutcome::Created(r) if r.user_id == newcomer && r.ticket_type_id == second)
    );
    // Whichever of the two rows the insert wrote first is the registration; the other is refused.
    let (seated, other) = match (in_first, in_second) {
        (SeatOutcome::Created(r), other) | (other, SeatOutcome::Created(r)) => (r, other),
        _ => panic!("one seat for the person asking twice, got {in_first:?} and {in_second:?}"),
    };
    assert_eq!(seated.user_id, both);
    assert_eq!(other, &refused, "registered by the other type's batch");
    let both_first = seated.ticket_type_id == first;

    // The key keeps the refusal, and the counts are the rows.
    let replay = [ask(person, key)];
    let outcomes = seats::commit_batches(&db, &fence, &[seat_batch(tenant, second, &replay)])
        .await
        .unwrap();
    assert_eq!(outcomes[0], vec![SeatOutcome::Replayed(Box::new(refused))]);
    let (in_first, in_second) = if both_first { (2, 1) } else { (1, 2) };
    for (ticket_type, sold) in [(first, in_first), (second, in_second)] {
        let (counted, _, rows, _) = storage::events::registrations::seat_audit(&db, ticket_type)
            .await
            .unwrap();
        assert_eq!(
            (counted, rows),
            (sold, i64::from(sold)),
            "no seat for the refused"
        );
    }
}

/// A sale while its organizers edit it: quantities, prices and sales windows saved, the event
/// unpublished and published again, and participants cancelling, all at the same instants as
/// the seat batches. Whatever lock races PostgreSQL resolves by aborting one side are run
/// again inside bilet: nobody gets a 500, and every count equals its rows.
#[tokio::test]
async fn a_sale_while_organizers_edit_it_answers_no_500_and_counts_equal_rows() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    const SEATS: usize = 150;
    let (event, first) = setup(&ctx, &owner, json!({"name": "Stalls", "quantity": SEATS})).await;
    let second = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Balcony", "quantity": SEATS}),
        )
        .await;
    assert_eq!(second.status, 201, "{}", second.body);
    let second = second.body["id"].as_str().unwrap().to_string();
    let types = [first.clone(), second.clone()];

    let selling = std::sync::atomic::AtomicBool::new(true);
    let sale = async {
        let replies = futures_util::future::join_all((0..SEATS * 3).map(|i| {
            let (ctx, ticket_type, event) = (&ctx, &types[i % 2], &event);
            async move {
                let token = participant().1;
                let key = Uuid::new_v4().to_string();
                let mut reply = register(ctx, &token, event, ticket_type, &key).await;
                // A participant whose registration went through cancels every third one.
                if reply.status == 201 && i.is_multiple_of(3) {
                    let id = reply.body["id"].as_str().unwrap_or_default().to_string();
                    let cancel = send(
                        ctx.http
                            .delete(format!("{}/api/v1/registrations/{id}", ctx.base))
                            .bearer_auth(&token),
                    )
                    .await;
                    reply = cancel;
                }
                reply
            }
        }))
        .await;
        selling.store(false, std::sync::atomic::Ordering::SeqCst);
        replies
    };
    let organizers = async {
        let mut answers = Vec::new();
        let mut round = 0u32;
        while selling.load(std::sync::atomic::Ordering::SeqCst) {
            round += 1;
            let ticket_type = &types[round as usize % 2];
            let ends = (Utc::now() + Duration::days(5 + i64::from(round % 3))).to_rfc3339();
            let edits = [
                ctx.put(
                    &format!("/api/v1/events/{event}/ticket-types/{ticket_type}"),
                    Some(&owner.access),
                    json!({"name": "Stalls", "quantity": SEATS + (round as usize % 2),
                           "salesEnd": ends}),
                )
                .await,
                ctx.put(
                    &format!("/api/v1/events/{event}/ticket-types/{ticket_type}"),
                    Some(&owner.access),
                    json!({"name": "Stalls", "quantity": SEATS, "priceCents": 0, "salesEnd": ends}),
                )
                .await,
            ];
            answers.extend(edits);
            if round.is_multiple_of(4) {
                for step in ["unpublish", "publish"] {
                    answers.push(
                        ctx.post_empty(
                            &format!("/api/v1/events/{event}/{step}"),
                            Some(&owner.access),
                        )
                        .await,
                    );
                }
            }
        }
        answers
    };
    let (replies, edits) = tokio::join!(sale, organizers);

    for r in replies.iter().chain(&edits) {
        assert_ne!(r.status, 500, "{}", r.body);
        assert!(
            [200, 201, 204, 409, 422].contains(&r.status),
            "a clean answer: {} {}",
            r.status,
            r.body
        );
    }
    assert!(
        edits.iter().filter(|r| r.status == 200).count() >= 2,
        "the organizers' edits went through during the sale"
    );
    assert!(
        replies.iter().any(|r| r.status == 204),
        "participants cancelled during the sale"
    );
    for ticket_type in &types {
        let (sold, reserved, sold_rows, reserved_rows) = audit(&ctx, ticket_type).await;
        assert_eq!(
            (i64::from(sold), i64::from(reserved)),
            (sold_rows, reserved_rows),
            "counts equal rows"
        );
        assert!(sold as usize <= SEATS + 1, "nothing oversold: {sold}");
    }
}

/// Holds `ticket_type` in a session of its own, lets `request` take its event and wait for the
/// type, then takes the event too: a deadlock against the one lock order. The session looks
/// for deadlocks after 30 s, the request's after PostgreSQL's default second, so it is the
/// request's transaction that PostgreSQL ends. Returns the request's answer.
async fn against_the_order(
    raw: &tokio_postgres::Client,
    watcher: &tokio_postgres::Client,
    event: &str,
    ticket_type: &str,
    request: impl std::future::Future<Output = crate::support::Reply>,
) -> crate::support::Reply {
    raw.batch_execute(&format!(
        "BEGIN; SET LOCAL deadlock_timeout = '30s';
         SELECT 1 FROM event_service.ticket_types WHERE id = '{ticket_type}' FOR UPDATE;"
    ))
    .await
    .unwrap();
    let session = async {
        // Once the request waits for the ticket type, it holds the event.
        let waiting = eventually(10, || async {
            watcher
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                    &[],
                )
                .await
                .unwrap()
                .get::<_, i64>(0)
                >= 1
        })
        .await;
        assert!(waiting, "the request never waited for the ticket type");
        raw.batch_execute(&format!(
            "SELECT 1 FROM event_service.events WHERE id = '{event}' FOR UPDATE"
        ))
        .await
        .unwrap();
        raw.batch_execute("ROLLBACK").await.unwrap();
    };
    tokio::join!(request, session).0
}

async fn deadlocks(raw: &tokio_postgres::Client) -> i64 {
    raw.query_one(
        "SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()",
        &[],
    )
    .await
    .unwrap()
    .get(0)
}

/// Deadlocks made on purpose (`against_the_order`) against an organizer's edit and a seat
/// batch, which take the event and then its ticket type: PostgreSQL aborts the request's
/// transaction and bilet runs it again, so the organizer gets 200 and the participant 201.
#[tokio::test]
async fn a_request_that_loses_a_deadlock_runs_again_and_answers() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Stalls", "quantity": 10})).await;
    let raw = ctx.t.owner().await;
    let watcher = ctx.t.owner().await;

    let before = deadlocks(&raw).await;
    let path = format!("/api/v1/events/{event}/ticket-types/{ticket_type}");
    let edit = ctx.put(
        &path,
        Some(&owner.access),
        json!({"name": "Stalls", "quantity": 12}),
    );
    let edited = against_the_order(&raw, &watcher, &event, &ticket_type, edit).await;
    assert_eq!(edited.status, 200, "{}", edited.body);
    assert_eq!(edited.body["quantity"], 12);

    let token = participant().1;
    let key = Uuid::new_v4().to_string();
    let seat = register(&ctx, &token, &event, &ticket_type, &key);
    let seated = against_the_order(&raw, &watcher, &event, &ticket_type, seat).await;
    assert_eq!(seated.status, 201, "{}", seated.body);
    assert_eq!(audit(&ctx, &ticket_type).await, (1, 0, 1, 0));

    // Both requests did lose a deadlock: the answers above are the runs after it.
    assert!(
        eventually(5, || async { deadlocks(&raw).await >= before + 2 }).await,
        "two deadlocks were detected: {} before, {} after",
        before,
        deadlocks(&raw).await
    );
}

/// Participants known to notifications and registrations recorded by analytics, for `event`.
async fn applied_for(ctx: &Ctx, event: &str) -> (i64, i64) {
    let event = Uuid::parse_str(event).unwrap();
    let owner = ctx.t.owner().await;
    let participants: i64 = owner
        .query_one(
            "SELECT count(*) FROM notification_service.participants WHERE event_id = $1",
            &[&event],
        )
        .await
        .unwrap()
        .get(0);
    let recorded: i64 = owner
        .query_one(
            "SELECT count(*) FROM analytics_service.analytics_events
              WHERE event_id = $1 AND event_type = 'registration.completed'",
            &[&event],
        )
        .await
        .unwrap()
        .get(0);
    (participants, recorded)
}

/// While the node has seat requests in flight, the consumers of every registration hold their
/// work back, and apply it the moment the seat path is idle; a seat path that stays busy holds
/// them only `ticketing.consumer_lag_ms` behind an event. (A request in flight is made by
/// entering the node's foreground directly, as a request does for as long as it is answered.)
#[tokio::test]
async fn the_consumers_give_way_to_a_sale_in_flight_and_no_longer_than_their_lag() {
    let ctx = Ctx::with_config(|c| c.ticketing.consumer_lag_ms = 8_000).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 10})).await;
    let sign_up = || {
        let (ctx, event, ticket_type) = (&ctx, &event, &ticket_type);
        async move {
            let (_, token) = participant();
            let key = Uuid::new_v4().to_string();
            let reply = register(ctx, &token, event, ticket_type, &key).await;
            assert_eq!(reply.status, 201, "{}", reply.body);
        }
    };

    // A quiet node applies at once.
    sign_up().await;
    assert!(eventually(10, || async { applied_for(&ctx, &event).await == (1, 1) }).await);

    // Seats in flight: the second registration waits, then goes as soon as they are answered.
    let selling = ctx.ticketing().foreground().enter();
    sign_up().await;
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    assert_eq!(
        applied_for(&ctx, &event).await,
        (1, 1),
        "held while seats are sold"
    );
    let idle = std::time::Instant::now();
    drop(selling);
    assert!(eventually(10, || async { applied_for(&ctx, &event).await == (2, 2) }).await);
    assert!(
        idle.elapsed() < std::time::Duration::from_millis(3_000),
        "applied {:?} after the seat path went idle",
        idle.elapsed()
    );

    // A sale that never pauses: the third is applied once it is 8 s old, though still busy.
    let _selling = ctx.ticketing().foreground().enter();
    let created = std::time::Instant::now();
    sign_up().await;
    assert!(eventually(20, || async { applied_for(&ctx, &event).await == (3, 3) }).await);
    let waited = created.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(7_500),
        "applied after {waited:?}, before its lag was up"
    );
}
