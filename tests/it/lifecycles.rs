//! Life cycles followed to their end for the people they touch: an event cancelled mid-sale,
//! payments arriving late or twice or forged, waiting-list offers only people can use, tickets
//! carrying names, and the registration's own cancel rules.

use crate::identity::{Ctx, Session};
use crate::support::{eventually, send};
use crate::ticketing::{audit, participant, register, setup};
use chrono::{Duration, Utc};
use domain::clock::Clock;
use serde_json::{Value, json};
use uuid::Uuid;

const WEBHOOK_SECRET: &str = "whsec-test-test-test-test-test-test";

async fn webhook_ctx() -> Ctx {
    Ctx::with_config(|c| {
        c.payments.webhook_secret = Some(domain::config::Secret::new(WEBHOOK_SECRET));
    })
    .await
}

/// Sends the provider's webhook, signed at unix time `t` with `secret`.
async fn webhook_signed(ctx: &Ctx, body: &Value, secret: &str, t: i64) -> crate::support::Reply {
    let raw = body.to_string();
    send(
        ctx.http
            .post(format!("{}/api/v1/payments/webhook", ctx.base))
            .header("content-type", "application/json")
            .header("Accept-Language", "en")
            .header(
                "X-Bilet-Signature",
                domain::events::payments::signature_header(secret.as_bytes(), t, raw.as_bytes()),
            )
            .body(raw),
    )
    .await
}

async fn webhook(ctx: &Ctx, body: &Value) -> crate::support::Reply {
    webhook_signed(ctx, body, WEBHOOK_SECRET, Utc::now().timestamp()).await
}

fn payment(id: &str, kind: &str, registration: &str, cents: i64) -> Value {
    json!({"id": id, "type": kind, "registrationId": registration, "amountCents": cents, "currency": "RUB"})
}

/// A free type of one seat and a paid type with a 30-minute reservation, published.
async fn two_types(ctx: &Ctx, owner: &Session) -> (String, String, String) {
    let (event, free) = setup(ctx, owner, json!({"name": "Free", "quantity": 1})).await;
    let paid = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Paid", "quantity": 5, "priceCents": 1500, "currency": "RUB", "reservationMinutes": 30}),
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    (event, free, paid.body["id"].as_str().unwrap().to_string())
}

async fn owner_count(ctx: &Ctx, sql: &str, id: &str) -> i64 {
    ctx.t
        .owner()
        .await
        .query_one(sql, &[&id])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn an_event_cancelled_mid_sale_follows_through_for_everyone() {
    let ctx = webhook_ctx().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, free, paid) = two_types(&ctx, &owner).await;

    // The free seat goes to the first; three more queue for it.
    let (_, first) = participant();
    let r = register(&ctx, &first, &event, &free, &Uuid::new_v4().to_string()).await;
    assert_eq!(r.body["status"], "CONFIRMED");
    let first_code = r.body["confirmationCode"].as_str().unwrap().to_string();
    let first_id = r.body["id"].as_str().unwrap().to_string();
    for _ in 0..3 {
        let (_, waiting) = participant();
        let joined = ctx
            .post(
                &format!("/api/v1/events/{event}/waitlist"),
                Some(&waiting),
                json!({"ticketTypeId": free}),
            )
            .await;
        assert_eq!(joined.status, 201, "{}", joined.body);
    }
    // One reservation awaits payment; another is paid through the webhook.
    let (_, holder) = participant();
    let reserved = register(&ctx, &holder, &event, &paid, &Uuid::new_v4().to_string()).await;
    assert_eq!(reserved.body["status"], "RESERVED");
    let reserved_id = reserved.body["id"].as_str().unwrap().to_string();
    let (_, payer) = participant();
    let bought = register(&ctx, &payer, &event, &paid, &Uuid::new_v4().to_string()).await;
    let bought_id = bought.body["id"].as_str().unwrap().to_string();
    let paid_now = webhook(
        &ctx,
        &payment("pay-1", "payment.completed", &bought_id, 1500),
    )
    .await;
    assert_eq!(paid_now.status, 200, "{}", paid_now.body);
    assert_eq!(paid_now.body["outcome"], "CONFIRMED");

    // The organizer calls it off.
    let cancelled = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/cancel"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    assert_eq!(cancelled.body["status"], "CANCELLED");
    for id in [&first_id, &reserved_id, &bought_id] {
        let r = ctx
            .get(&format!("/api/v1/registrations/{id}"), Some(&owner.access))
            .await;
        assert_eq!(r.body["status"], "CANCELLED", "{}", r.body);
        assert_eq!(r.body["cancellationReason"], "EVENT_CANCELLED");
    }
    assert_eq!(audit(&ctx, &free).await, (0, 0, 0, 0), "seats released");
    assert_eq!(audit(&ctx, &paid).await, (0, 0, 0, 0), "seats released");
    assert_eq!(
        owner_count(
            &ctx,
            "SELECT count(*) FROM event_service.waiting_list WHERE event_id = $1::text::uuid AND status = 'CLOSED'",
            &event
        )
        .await,
        3,
        "the waiting list is closed"
    );

    // The payment for the reservation arrives afterwards: refunded, never confirmed.
    let late = webhook(
        &ctx,
        &payment("pay-2", "payment.completed", &reserved_id, 1500),
    )
    .await;
    assert_eq!(late.status, 200, "{}", late.body);
    assert_eq!(late.body["outcome"], "REFUND_REQUESTED");
    assert_eq!(late.body["registrationStatus"], "CANCELLED");

    // The door refuses every ticket; nobody registers any more.
    let door = ctx
        .post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&owner.access),
            json!({"confirmationCode": first_code}),
        )
        .await;
    assert_eq!(door.status, 422, "{}", door.body);
    assert_eq!(door.body["code"], "business_rule_violation");
    assert_eq!(
        door.body["message"],
        "Only a confirmed registration can be checked in"
    );
    let (_, late_comer) = participant();
    let refused = register(
        &ctx,
        &late_comer,
        &event,
        &paid,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert!(
        [404, 422].contains(&refused.status),
        "a cancelled event takes no registration: {}",
        refused.body
    );

    // Cancelling again changes nothing.
    let again = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/cancel"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(again.status, 200);
    assert!(
        eventually(10, || async {
            ctx.events.of("refund.requested").len() == 2
                && ctx.events.of("registration.cancelled").len() == 3
        })
        .await,
        "two refunds and three cancellations announced"
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(ctx.events.of("event.cancelled").len(), 1, "announced once");
    assert!(
        ctx.events.of("waitlist.available").is_empty(),
        "nobody was offered a seat"
    );
    let mut refunds: Vec<(String, i64, String)> = ctx
        .events
        .of("refund.requested")
        .iter()
        .map(|e| {
            (
                e.data.value()["registrationId"]
                    .as_str()
                    .unwrap()
                    .to_string(),
                e.data.value()["amountCents"].as_i64().unwrap(),
                e.data.value()["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    refunds.sort();
    let mut expected = vec![
        (bought_id.clone(), 1500, "EVENT_CANCELLED".to_string()),
        (
            reserved_id.clone(),
            1500,
            "EVENT_CANCELLED_BEFORE_PAYMENT".to_string(),
        ),
    ];
    expected.sort();
    assert_eq!(refunds, expected, "every paid ticket, and only those");

    // Each participant is told once, by the event's notice.
    for id in [&first_id, &reserved_id, &bought_id] {
        let user: String = ctx
            .t
            .owner()
            .await
            .query_one(
                "SELECT user_id::text FROM event_service.registrations WHERE id = $1::text::uuid",
                &[id],
            )
            .await
            .unwrap()
            .get(0);
        assert!(
            eventually(10, || async {
                owner_count(
                    &ctx,
                    "SELECT count(*) FROM notification_service.messages WHERE user_id = $1::text::uuid AND kind = 'event.cancelled'",
                    &user,
                )
                .await
                    == 1
            })
            .await,
            "{user} told of the cancellation"
        );
        assert_eq!(
            owner_count(
                &ctx,
                "SELECT count(*) FROM notification_service.messages WHERE user_id = $1::text::uuid AND kind = 'registration.cancelled'",
                &user,
            )
            .await,
            0,
            "{user} told only once"
        );
    }

    // The one who paid too late learns the money goes back, and gets no receipt naming a code.
    let late_user: String = ctx
        .t
        .owner()
        .await
        .query_one(
            "SELECT user_id::text FROM event_service.registrations WHERE id = $1::text::uuid",
            &[&reserved_id],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        eventually(10, || async {
            owner_count(
                &ctx,
                "SELECT count(*) FROM notification_service.messages WHERE user_id = $1::text::uuid AND kind = 'payment.refund'",
                &late_user,
            )
            .await
                == 1
        })
        .await,
        "the late payer is told of the refund"
    );
    assert_eq!(
        owner_count(
            &ctx,
            "SELECT count(*) FROM notification_service.messages WHERE user_id = $1::text::uuid AND kind = 'payment.receipt'",
            &late_user,
        )
        .await,
        0
    );

    // The dashboard adds up: three registrations, two confirmed (the free seat and the paid
    // one; the refunded late payment confirms nothing).
    let dashboard = ctx
        .get(
            &format!("/api/v1/analytics/events/{event}/dashboard"),
            Some(&owner.access),
        )
        .await;
    assert!(
        eventually(10, || async {
            let d = ctx
                .get(
                    &format!("/api/v1/analytics/events/{event}/dashboard"),
                    Some(&owner.access),
                )
                .await;
            d.body["totalRegistrations"] == 3 && d.body["confirmedRegistrations"] == 2
        })
        .await,
        "{}",
        dashboard.body
    );
}

#[tokio::test]
async fn the_webhook_refuses_forgeries_and_takes_a_payment_once() {
    let ctx = webhook_ctx().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _, paid) = two_types(&ctx, &owner).await;
    let (_, token) = participant();
    let r = register(&ctx, &token, &event, &paid, &Uuid::new_v4().to_string()).await;
    let id = r.body["id"].as_str().unwrap().to_string();
    let body = payment("pay-x", "payment.completed", &id, 1500);
    let now = Utc::now().timestamp();

    for (what, reply, reason) in [
        (
            "another secret",
            webhook_signed(&ctx, &body, "not-the-secret", now).await,
            "the signature does not match the body",
        ),
        (
            "six minutes old",
            webhook_signed(&ctx, &body, WEBHOOK_SECRET, now - 360).await,
            "the signature is older than five minutes",
        ),
        // Extreme times once overflowed `(now - t).abs()`: a panic and a 500 in a debug build.
        (
            "signed at i64::MIN",
            webhook_signed(&ctx, &body, WEBHOOK_SECRET, i64::MIN).await,
            "the signature is older than five minutes",
        ),
        (
            "signed at i64::MAX",
            webhook_signed(&ctx, &body, WEBHOOK_SECRET, i64::MAX).await,
            "the signature is older than five minutes",
        ),
    ] {
        assert_eq!(reply.status, 401, "{what}: {}", reply.body);
        assert_eq!(reply.body["code"], "unauthorized", "{what}");
        assert_eq!(reply.body["details"]["reason"], reason, "{what}");
    }
    // A body changed after signing.
    let raw = body.to_string();
    let header =
        domain::events::payments::signature_header(WEBHOOK_SECRET.as_bytes(), now, raw.as_bytes());
    let tampered = send(
        ctx.http
            .post(format!("{}/api/v1/payments/webhook", ctx.base))
            .header("content-type", "application/json")
            .header("X-Bilet-Signature", header)
            .body(raw.replace("1500", "1")),
    )
    .await;
    assert_eq!(tampered.status, 401);
    let unsigned = send(
        ctx.http
            .post(format!("{}/api/v1/payments/webhook", ctx.base))
            .json(&body),
    )
    .await;
    assert_eq!(unsigned.status, 401);
    assert_eq!(
        unsigned.body["details"]["reason"],
        "the X-Bilet-Signature header is missing"
    );
    assert_eq!(audit(&ctx, &paid).await, (0, 1, 0, 1), "nothing changed");

    // Signed but wrong: clear 4xx, nothing recorded.
    for (bad, field) in [
        (
            json!({"id": "p", "type": "payment.stolen", "registrationId": id, "amountCents": 1, "currency": "RUB"}),
            "type",
        ),
        (
            json!({"id": "p", "type": "payment.completed", "registrationId": "x", "amountCents": 1, "currency": "RUB"}),
            "registrationId",
        ),
        (
            json!({"id": "p", "type": "payment.completed", "registrationId": id, "amountCents": -5, "currency": "RUB"}),
            "amountCents",
        ),
        (
            json!({"id": "p", "type": "payment.completed", "registrationId": id, "amountCents": 5, "currency": "rubles"}),
            "currency",
        ),
        (
            json!({"id": "", "type": "payment.completed", "registrationId": id, "amountCents": 5, "currency": "RUB"}),
            "id",
        ),
        (
            json!({"type": "payment.completed", "registrationId": id, "amountCents": 5, "currency": "RUB"}),
            "id",
        ),
    ] {
        let reply = webhook(&ctx, &bad).await;
        assert_eq!(reply.status, 400, "{bad}: {}", reply.body);
        assert!(
            reply.body["details"][field].is_string(),
            "{bad}: {}",
            reply.body
        );
    }
    let unknown = webhook(
        &ctx,
        &payment(
            "pay-y",
            "payment.completed",
            &Uuid::now_v7().to_string(),
            1500,
        ),
    )
    .await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    assert_eq!(unknown.body["code"], "not_found");
    assert_eq!(
        owner_count(
            &ctx,
            "SELECT count(*) FROM event_service.payments WHERE id <> $1",
            ""
        )
        .await,
        0,
        "no refusal recorded a payment"
    );

    // The real one, twice: one effect, the second answered as the first.
    let first = webhook(&ctx, &body).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body["outcome"], "CONFIRMED");
    assert!(first.headers.get("idempotent-replayed").is_none());
    let second = webhook(&ctx, &body).await;
    assert_eq!(second.status, 200);
    assert_eq!(second.body["outcome"], "CONFIRMED");
    assert_eq!(second.headers["idempotent-replayed"], "true");
    assert_eq!(audit(&ctx, &paid).await, (1, 0, 1, 0));
    assert!(
        eventually(5, || async {
            ctx.events.of("payment.completed").len() == 1
                && ctx.events.of("registration.confirmed").len() == 1
        })
        .await,
        "announced once, as a broker payment would be"
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        audit(&ctx, &paid).await,
        (1, 0, 1, 0),
        "our own echo changed nothing"
    );
    assert!(ctx.events.of("refund.requested").is_empty());

    // Without a secret configured, the webhook is closed.
    let closed = Ctx::new().await;
    let reply = webhook(&closed, &body).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body["code"], "service_unavailable");
}

#[tokio::test]
async fn a_late_payment_takes_a_free_seat_or_is_refunded() {
    let ctx = webhook_ctx().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(
        &ctx,
        &owner,
        json!({"name": "Paid", "quantity": 1, "priceCents": 900, "currency": "RUB", "reservationMinutes": 5}),
    )
    .await;
    let (_, ann) = participant();
    let first = register(
        &ctx,
        &ann,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    let ann_id = first.body["id"].as_str().unwrap().to_string();
    ctx.clock.advance(Duration::minutes(6));
    assert!(
        eventually(10, || async {
            audit(&ctx, &ticket_type).await == (0, 0, 0, 0)
        })
        .await,
        "the reservation ran out"
    );
    // The seat is free: Ann's late payment takes it.
    let taken = webhook(&ctx, &payment("late-1", "payment.completed", &ann_id, 900)).await;
    assert_eq!(taken.status, 200, "{}", taken.body);
    assert_eq!(taken.body["outcome"], "SEAT_TAKEN");
    assert_eq!(taken.body["registrationStatus"], "CONFIRMED");
    assert_eq!(audit(&ctx, &ticket_type).await, (1, 0, 1, 0));

    // Ann cancels; Bob takes the seat and lets it run out while Cid buys it; Bob pays late.
    assert_eq!(
        ctx.delete(&format!("/api/v1/registrations/{ann_id}"), Some(&ann))
            .await
            .status,
        204
    );
    let (bob_user, bob) = participant();
    let b = register(
        &ctx,
        &bob,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    let bob_id = b.body["id"].as_str().unwrap().to_string();
    ctx.clock.advance(Duration::minutes(6));
    assert!(
        eventually(10, || async {
            audit(&ctx, &ticket_type).await == (0, 0, 0, 0)
        })
        .await
    );
    let (_, cid) = participant();
    let c = register(
        &ctx,
        &cid,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(c.status, 201);
    let refused = webhook(&ctx, &payment("late-2", "payment.completed", &bob_id, 900)).await;
    assert_eq!(refused.status, 200, "{}", refused.body);
    assert_eq!(refused.body["outcome"], "REFUND_REQUESTED");
    assert_eq!(refused.body["registrationStatus"], "EXPIRED");
    assert!(
        eventually(5, || async {
            ctx.events.of("refund.requested").iter().any(|e| {
                e.data.value()["registrationId"] == bob_id.as_str()
                    && e.data.value()["amountCents"] == 900
                    && e.data.value()["reason"] == "NO_SEAT"
            })
        })
        .await,
        "Bob's money is asked back"
    );
    assert!(
        eventually(10, || async {
            owner_count(
                &ctx,
                "SELECT count(*) FROM notification_service.messages WHERE user_id = $1::text::uuid AND kind = 'payment.refund'",
                &bob_user.to_string(),
            )
            .await
                == 1
        })
        .await,
        "and Bob is told"
    );
    assert_eq!(
        audit(&ctx, &ticket_type).await,
        (0, 1, 0, 1),
        "Cid keeps the seat"
    );

    // A failure cancels from any active state; a refund of a cancelled one changes nothing.
    let cid_id = c.body["id"].as_str().unwrap().to_string();
    let failed = webhook(&ctx, &payment("fail-1", "payment.failed", &cid_id, 900)).await;
    assert_eq!(failed.body["outcome"], "CANCELLED");
    let nothing = webhook(&ctx, &payment("ref-1", "payment.refunded", &cid_id, 900)).await;
    assert_eq!(nothing.body["outcome"], "NO_CHANGE");
    assert_eq!(audit(&ctx, &ticket_type).await, (0, 0, 0, 0));
}

#[tokio::test]
async fn organizers_mark_cash_as_paid_once() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(
        &ctx,
        &owner,
        json!({"name": "Cash", "quantity": 2, "priceCents": 500, "currency": "RUB"}),
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
    assert_eq!(r.body["status"], "PENDING");
    let id = r.body["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/registrations/{id}/mark-paid");
    let by_participant = ctx.post_empty(&path, Some(&token)).await;
    assert_eq!(by_participant.status, 403, "{}", by_participant.body);
    let bad = ctx
        .post(&path, Some(&owner.access), json!({"amountCents": "five"}))
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body["details"]["amountCents"].is_string());
    let paid = ctx.post_empty(&path, Some(&owner.access)).await;
    assert_eq!(paid.status, 200, "{}", paid.body);
    assert_eq!(paid.body["outcome"], "CONFIRMED");
    let again = ctx.post_empty(&path, Some(&owner.access)).await;
    assert_eq!(
        again.body["outcome"], "NO_CHANGE",
        "a second click is not a payment"
    );
    assert_eq!(audit(&ctx, &ticket_type).await, (1, 0, 1, 0));
    let missing = ctx
        .post_empty(
            &format!("/api/v1/registrations/{}/mark-paid", Uuid::now_v7()),
            Some(&owner.access),
        )
        .await;
    assert_eq!(missing.status, 404);
    // Another organization's organizer cannot.
    let (other, _) = ctx.owner(&admin).await;
    let foreign = ctx.post_empty(&path, Some(&other.access)).await;
    assert_eq!(foreign.status, 404, "{}", foreign.body);
}

#[tokio::test]
async fn cancelling_a_registration_follows_the_any_rule() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 3})).await;
    let (_, token) = participant();
    let r = register(
        &ctx,
        &token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    let id = r.body["id"].as_str().unwrap().to_string();
    let checked = ctx
        .post_empty(
            &format!("/api/v1/registrations/{id}/check-in"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(checked.status, 200, "{}", checked.body);
    let own = ctx
        .delete(&format!("/api/v1/registrations/{id}"), Some(&token))
        .await;
    assert_eq!(own.status, 422, "only organizers after check-in");
    assert_eq!(own.body["code"], "business_rule_violation");
    let by_organizer = ctx
        .delete(&format!("/api/v1/registrations/{id}"), Some(&owner.access))
        .await;
    assert_eq!(by_organizer.status, 204);
    let twice = ctx
        .delete(&format!("/api/v1/registrations/{id}"), Some(&token))
        .await;
    assert_eq!(twice.status, 204, "already cancelled");
    assert_eq!(audit(&ctx, &ticket_type).await, (0, 0, 0, 0));
}

#[tokio::test]
async fn tickets_carry_the_names_and_email_of_the_profile() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 3})).await;
    let person = ctx.user().await;
    // The event service learns the profile from user.registered.
    assert!(
        eventually(10, || async {
            owner_count(
                &ctx,
                "SELECT count(*) FROM event_service.people WHERE user_id = $1::text::uuid",
                &person.user_id,
            )
            .await
                == 1
        })
        .await
    );
    let bare = send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&person.access)
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type, "source": "vk"})),
    )
    .await;
    assert_eq!(bare.status, 201, "{}", bare.body);
    assert_eq!(bare.body["firstName"], "Test");
    assert_eq!(bare.body["lastName"], "User");
    assert_eq!(bare.body["email"], person.email.as_str());
    assert_eq!(bare.body["source"], "vk");
    // The body may give other names.
    let (_, other) = participant();
    let named = send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&other)
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type, "firstName": "Ада", "lastName": "Лавлейс"})),
    )
    .await;
    assert_eq!(named.body["firstName"], "Ада");
    let bad_source = send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&participant().1)
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type, "source": "Not A Slug"})),
    )
    .await;
    assert_eq!(bad_source.status, 400);
    assert!(bad_source.body["details"]["source"].is_string());
    let listed = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations"),
            Some(&owner.access),
        )
        .await;
    assert!(
        listed.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["firstName"].as_str().unwrap().is_empty()),
        "no nameless tickets: {}",
        listed.body
    );
}

#[tokio::test]
async fn offers_go_only_to_people_who_can_use_them() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, a) = setup(&ctx, &owner, json!({"name": "A", "quantity": 1})).await;
    let b = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "B", "quantity": 1}),
        )
        .await
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, holder) = participant();
    let held = register(&ctx, &holder, &event, &a, &Uuid::new_v4().to_string()).await;
    let held_id = held.body["id"].as_str().unwrap().to_string();
    // Wendy queues for A, then takes a seat of B: her wait ends.
    let (wendy_id, wendy) = participant();
    let (xavier_id, xavier) = participant();
    for token in [&wendy, &xavier] {
        let joined = ctx
            .post(
                &format!("/api/v1/events/{event}/waitlist"),
                Some(token),
                json!({"ticketTypeId": a}),
            )
            .await;
        assert_eq!(joined.status, 201, "{}", joined.body);
    }
    let wb = register(&ctx, &wendy, &event, &b, &Uuid::new_v4().to_string()).await;
    assert_eq!(wb.status, 201);
    // A's seat frees: Xavier, not Wendy, is offered it.
    assert_eq!(
        ctx.delete(&format!("/api/v1/registrations/{held_id}"), Some(&holder))
            .await
            .status,
        204
    );
    assert!(
        eventually(5, || async {
            !ctx.events.of("waitlist.available").is_empty()
        })
        .await
    );
    let offers = ctx.events.of("waitlist.available");
    assert_eq!(offers.len(), 1);
    assert_eq!(
        offers[0].data.value()["userId"],
        xavier_id.to_string().as_str()
    );
    assert_ne!(
        offers[0].data.value()["userId"],
        wendy_id.to_string().as_str()
    );

    // Added seats go to the list too: Yuri waits for B (sold out to Wendy); B grows by one.
    let (yuri_id, yuri) = participant();
    let joined = ctx
        .post(
            &format!("/api/v1/events/{event}/waitlist"),
            Some(&yuri),
            json!({"ticketTypeId": b}),
        )
        .await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    let grown = ctx
        .put(
            &format!("/api/v1/events/{event}/ticket-types/{b}"),
            Some(&owner.access),
            json!({"name": "B", "quantity": 2}),
        )
        .await;
    assert_eq!(grown.status, 200, "{}", grown.body);
    assert!(
        eventually(5, || async {
            ctx.events
                .of("waitlist.available")
                .iter()
                .any(|e| e.data.value()["userId"] == yuri_id.to_string().as_str())
        })
        .await,
        "added quantity is offered to the list"
    );
    // While the event is not taking registrations, nobody is offered anything.
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/events/{event}/unpublish"),
            Some(&owner.access)
        )
        .await
        .status,
        200
    );
    let before = ctx.events.of("waitlist.available").len();
    let (_, zoe) = participant();
    let _ = zoe;
    let wendy_b = wb.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        ctx.delete(
            &format!("/api/v1/registrations/{wendy_b}"),
            Some(&owner.access)
        )
        .await
        .status,
        204
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(ctx.events.of("waitlist.available").len(), before);
}

#[tokio::test]
async fn no_event_completes_before_it_ends() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 3})).await;
    // Ten days ahead plus two hours: started, no end given.
    let started = ctx.clock.now() + Duration::days(10) + Duration::hours(2);
    let n = storage::events::catalog::complete_ended(&ctx.t.db, started)
        .await
        .unwrap();
    assert_eq!(n, 0, "still going on two hours after its start");
    let n = storage::events::catalog::complete_ended(&ctx.t.db, started + Duration::hours(23))
        .await
        .unwrap();
    assert_eq!(n, 1, "completed a day after its start");
    let e = ctx
        .get(&format!("/api/v1/events/{event}"), Some(&owner.access))
        .await;
    assert_eq!(e.body["status"], "COMPLETED");
}

#[tokio::test]
async fn deleting_an_organization_cancels_its_events_for_their_participants() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 3})).await;
    let (_, token) = participant();
    let r = register(
        &ctx,
        &token,
        &event,
        &ticket_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    let id = r.body["id"].as_str().unwrap().to_string();
    let deleted = ctx
        .delete(&format!("/api/v1/organizations/{org}"), Some(&owner.access))
        .await;
    assert!(
        deleted.status == 204 || deleted.status == 200,
        "{}",
        deleted.body
    );
    assert!(
        eventually(10, || async {
            owner_count(
                &ctx,
                "SELECT count(*) FROM event_service.registrations WHERE id = $1::text::uuid AND status = 'CANCELLED' AND cancellation_reason = 'EVENT_CANCELLED'",
                &id,
            )
            .await
                == 1
        })
        .await,
        "the registration is cancelled with its event"
    );
    // The announcement travels through the outbox after the commit that cancelled it.
    assert!(
        eventually(10, || async { ctx.events.of("event.cancelled").len() == 1 }).await,
        "one event.cancelled: {}",
        ctx.events.of("event.cancelled").len()
    );
    assert_eq!(audit(&ctx, &ticket_type).await, (0, 0, 0, 0));
}

#[tokio::test]
async fn a_sale_running_while_the_event_is_cancelled_leaves_nobody_registered() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 500})).await;
    let people: Vec<String> = (0..120).map(|_| participant().1).collect();
    let sale =
        futures_util::future::join_all(
            people.iter().map(|token| {
                let (ctx, event, ticket_type) = (&ctx, &event, &ticket_type);
                async move {
                    register(ctx, token, event, ticket_type, &Uuid::new_v4().to_string()).await
                }
            }),
        );
    let cancel = async {
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        ctx.post_empty(
            &format!("/api/v1/events/{event}/cancel"),
            Some(&owner.access),
        )
        .await
    };
    let (replies, cancelled) = tokio::join!(sale, cancel);
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    for r in &replies {
        assert!(
            r.status == 201 || r.status == 404 || r.status == 422,
            "a clear answer, never a 500: {} {}",
            r.status,
            r.body
        );
    }
    assert_eq!(
        owner_count(
            &ctx,
            "SELECT count(*) FROM event_service.registrations WHERE event_id = $1::text::uuid
               AND status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN')",
            &event,
        )
        .await,
        0,
        "no registration outlives the cancellation"
    );
    assert_eq!(
        audit(&ctx, &ticket_type).await.0 + audit(&ctx, &ticket_type).await.1,
        0
    );
    let created = replies.iter().filter(|r| r.status == 201).count() as i64;
    assert_eq!(
        owner_count(
            &ctx,
            "SELECT count(*) FROM event_service.registrations WHERE event_id = $1::text::uuid AND status = 'CANCELLED'",
            &event,
        )
        .await,
        created,
        "every registration made before the cancel was cancelled with it"
    );
}

#[tokio::test]
async fn deleting_one_organization_leaves_the_others_events_alone() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (leaving, org) = ctx.owner(&admin).await;
    let (staying, _) = ctx.owner(&admin).await;
    let (mine, _) = setup(&ctx, &leaving, json!({"name": "Free", "quantity": 3})).await;
    let (theirs, their_type) = setup(&ctx, &staying, json!({"name": "Free", "quantity": 3})).await;
    let (_, token) = participant();
    let kept = register(
        &ctx,
        &token,
        &theirs,
        &their_type,
        &Uuid::new_v4().to_string(),
    )
    .await;
    assert_eq!(kept.status, 201);
    let deleted = ctx
        .delete(
            &format!("/api/v1/organizations/{org}"),
            Some(&leaving.access),
        )
        .await;
    assert!(
        deleted.status == 204 || deleted.status == 200,
        "{}",
        deleted.body
    );
    assert!(
        eventually(10, || async {
            owner_count(
                &ctx,
                "SELECT count(*) FROM event_service.events WHERE id = $1::text::uuid AND status = 'CANCELLED' AND deleted_at IS NOT NULL",
                &mine,
            )
            .await
                == 1
        })
        .await,
        "the deleted organization's event is cancelled and archived"
    );
    let other = ctx.get(&format!("/api/v1/events/{theirs}"), None).await;
    assert_eq!(other.status, 200);
    assert_eq!(
        other.body["status"], "PUBLISHED",
        "the other organization's event stands"
    );
    assert_eq!(audit(&ctx, &their_type).await, (1, 0, 1, 0));
}
