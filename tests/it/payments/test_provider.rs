//! The `test` provider, the embedded default: checkout, its payment page (Pay / Decline), the
//! signed notification it delivers, refunds of a cancelled event and of one ticket, and late
//! payments after a lapse.

use super::{
    checkout, lapse, notify, on_sale, page_path, paid, press, refund_settles, refunds, reserve,
    status,
};
use crate::identity::{Ctx, Session};
use crate::support::{SERVICE_SECRET, eventually};
use serde_json::{Value, json};

async fn owner(ctx: &Ctx) -> Session {
    let admin = ctx.admin().await;
    ctx.owner(&admin).await.0
}

#[tokio::test]
async fn a_reserved_ticket_is_declined_then_paid_at_the_test_provider() {
    let ctx = Ctx::new().await;
    let owner = owner(&ctx).await;
    let (event, paid_type) = on_sale(&ctx, &owner, paid("RUB", 5)).await;
    let ann = ctx.user().await;
    let held = reserve(&ctx, &ann, &event, &paid_type).await;
    assert_eq!(held["status"], "RESERVED");
    let id = held["id"].as_str().unwrap().to_string();

    let first = checkout(&ctx, &ann, &id).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body["provider"], "test");
    assert_eq!(first.body["amountCents"], 150000);
    assert_eq!(first.body["currency"], "RUB");
    assert_eq!(first.body["status"], "OPEN");
    assert_eq!(first.body["attempt"], 1);
    assert_eq!(
        first.body["expiresAt"], held["expiresAt"],
        "the reservation's deadline"
    );
    let url = first.body["paymentUrl"].as_str().unwrap().to_string();
    assert!(url.contains("/api/v1/payments/test/test_bilet-"), "{url}");
    // Asked again: the same payment, not a second one.
    let again = checkout(&ctx, &ann, &id).await;
    assert_eq!(again.body["checkoutId"], first.body["checkoutId"]);
    assert_eq!(again.body["paymentUrl"], first.body["paymentUrl"]);

    // Nobody else pays it, and nobody anonymous.
    let bob = ctx.user().await;
    let other = checkout(&ctx, &bob, &id).await;
    assert_eq!(other.status, 404, "{}", other.body);
    let anonymous = ctx
        .post_empty(&format!("/api/v1/registrations/{id}/checkout"), None)
        .await;
    assert_eq!(anonymous.status, 401);
    let unknown = checkout(&ctx, &ann, &uuid::Uuid::now_v7().to_string()).await;
    assert_eq!(unknown.status, 404);
    let malformed = checkout(&ctx, &ann, "not-a-uuid").await;
    assert_eq!(malformed.status, 400, "{}", malformed.body);

    // The provider's page shows the amount and both buttons, in the visitor's language.
    let page = ctx
        .http
        .get(format!("{}{}", ctx.base, page_path(&url)))
        .header("Accept-Language", "en")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text().await.unwrap();
    assert!(
        html.contains("1500.00 RUB")
            && html.contains("value=\"pay\"")
            && html.contains("value=\"decline\""),
        "{html}"
    );
    let missing = ctx.get("/api/v1/payments/test/test_nothing", None).await;
    assert_eq!(missing.status, 404);

    // Declined: the seat stays held, the checkout says so, and a new attempt is a new payment.
    let bad = press(&ctx, &url, "steal").await;
    assert_eq!(bad.status(), 400);
    let declined = press(&ctx, &url, "decline").await;
    assert_eq!(declined.status(), 303);
    assert_eq!(
        declined.headers()["location"],
        format!("/me/tickets/{id}").as_str()
    );
    assert_eq!(status(&ctx, &ann, &id).await, "RESERVED");
    let latest = ctx
        .get(
            &format!("/api/v1/registrations/{id}/checkout"),
            Some(&ann.access),
        )
        .await;
    assert_eq!(latest.body["status"], "DECLINED", "{}", latest.body);
    let second = checkout(&ctx, &ann, &id).await;
    assert_eq!(second.status, 200, "{}", second.body);
    assert_eq!(second.body["attempt"], 2);
    let url2 = second.body["paymentUrl"].as_str().unwrap().to_string();
    assert_ne!(url2, url);

    let paid_answer = press(&ctx, &url2, "pay").await;
    assert_eq!(paid_answer.status(), 303);
    assert_eq!(status(&ctx, &ann, &id).await, "CONFIRMED");
    assert!(
        eventually(5, || async {
            ctx.events.of("payment.completed").iter().any(|e| {
                e.data.value()["registrationId"] == id.as_str()
                    && e.data.value()["channel"] == "WEBHOOK"
                    && e.data.value()["amountCents"] == 150000
            })
        })
        .await
    );
    // Paid: nothing more to pay, and the page says the payment is closed.
    let done = checkout(&ctx, &ann, &id).await;
    assert_eq!(done.status, 422, "{}", done.body);
    assert_eq!(done.body["code"], "business_rule_violation");
    let closed = ctx
        .http
        .get(format!("{}{}", ctx.base, page_path(&url2)))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!closed.contains("value=\"pay\""), "{closed}");

    // A notification that is not the provider's changes nothing; the provider's own, replayed,
    // changes nothing either.
    let payment_id = page_path(&url2).rsplit('/').next().unwrap().to_string();
    let body = serde_json::to_vec(&json!({"paymentId": payment_id, "status": "canceled",
        "amountCents": 150000, "currency": "RUB"}))
    .unwrap();
    let forged =
        domain::events::payments::signature_header(b"guess", chrono::Utc::now().timestamp(), &body);
    let refused = notify(&ctx, "test", &[("x-bilet-signature", forged)], &body).await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(notify(&ctx, "test", &[], &body).await.status, 401);
    let provider = payments::test_provider::TestProvider::new(SERVICE_SECRET.as_bytes(), "");
    let success = serde_json::to_vec(&json!({"paymentId": payment_id, "status": "succeeded",
        "amountCents": 150000, "currency": "RUB"}))
    .unwrap();
    let replay = notify(
        &ctx,
        "test",
        &[(
            "x-bilet-signature",
            provider.sign(chrono::Utc::now().timestamp(), &success),
        )],
        &success,
    )
    .await;
    assert_eq!(replay.status, 200, "{}", replay.body);
    assert_eq!(replay.body["effect"], "unchanged");
    let stale = notify(
        &ctx,
        "test",
        &[(
            "x-bilet-signature",
            provider.sign(chrono::Utc::now().timestamp() - 600, &body),
        )],
        &body,
    )
    .await;
    assert_eq!(stale.status, 401, "{}", stale.body);
    let garbage = notify(
        &ctx,
        "test",
        &[(
            "x-bilet-signature",
            provider.sign(chrono::Utc::now().timestamp(), b"[1]"),
        )],
        b"[1]",
    )
    .await;
    assert_eq!(garbage.status, 400, "{}", garbage.body);
    assert_eq!(notify(&ctx, "paypal", &[], b"{}").await.status, 404);
    assert_eq!(status(&ctx, &ann, &id).await, "CONFIRMED");
    assert_eq!(
        ctx.events
            .of("payment.completed")
            .iter()
            .filter(|e| e.data.value()["registrationId"] == id.as_str())
            .count(),
        1,
        "one payment, however often it is told"
    );

    // Without a key to seal them, an organization cannot store provider keys.
    let sealed = ctx
        .put(
            "/api/v1/payments/accounts/yookassa",
            Some(&owner.access),
            json!({"shopId": "1", "secretKey": "k"}),
        )
        .await;
    assert_eq!(sealed.status, 503, "{}", sealed.body);

    // A free ticket has nothing to pay.
    let free =
        super::another_type(&ctx, &owner, &event, json!({"name": "Free", "quantity": 5})).await;
    let cid = ctx.user().await;
    let gratis = reserve(&ctx, &cid, &event, &free).await;
    let nothing = checkout(&ctx, &cid, gratis["id"].as_str().unwrap()).await;
    assert_eq!(nothing.status, 422, "{}", nothing.body);
}

#[tokio::test]
async fn a_cancelled_event_and_an_organizer_refund_give_the_money_back_once() {
    let ctx = Ctx::new().await;
    let owner = owner(&ctx).await;
    let (event, paid_type) = on_sale(&ctx, &owner, paid("RUB", 5)).await;
    let (ann, bob) = (ctx.user().await, ctx.user().await);
    let mut ids = Vec::new();
    for person in [&ann, &bob] {
        let held = reserve(&ctx, person, &event, &paid_type).await;
        let id = held["id"].as_str().unwrap().to_string();
        let open = checkout(&ctx, person, &id).await;
        assert_eq!(
            press(&ctx, open.body["paymentUrl"].as_str().unwrap(), "pay")
                .await
                .status(),
            303
        );
        assert_eq!(status(&ctx, person, &id).await, "CONFIRMED");
        ids.push(id);
    }

    // The organizer refunds Ann's ticket: her seat goes back, the money follows once.
    let path = format!("/api/v1/registrations/{}/refund", ids[0]);
    assert_eq!(
        ctx.post_empty(&path, Some(&ann.access)).await.status,
        403,
        "participants do not refund"
    );
    let stranger = owner_of_another(&ctx).await;
    assert_eq!(
        ctx.post_empty(&path, Some(&stranger.access)).await.status,
        404,
        "another organization's"
    );
    let refund = ctx.post_empty(&path, Some(&owner.access)).await;
    assert_eq!(refund.status, 201, "{}", refund.body);
    assert_eq!(refund.body["amountCents"], 150000);
    assert_eq!(refund.body["reason"], "REFUNDED_BY_ORGANIZER");
    assert_eq!(refund.body["provider"], "test");
    let twice = ctx.post_empty(&path, Some(&owner.access)).await;
    assert_eq!(twice.status, 409, "{}", twice.body);
    assert_eq!(status(&ctx, &ann, &ids[0]).await, "CANCELLED");
    let settled = refund_settles(&ctx, &ann, &ids[0], "SUCCEEDED").await;
    assert!(
        settled["providerRefundId"]
            .as_str()
            .unwrap()
            .starts_with("test_refund_"),
        "{settled}"
    );
    assert_eq!(settled["sends"], 1);

    // Cancelling the event refunds Bob; Ann's money went back already.
    let cancelled = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/cancel"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.body);
    let bobs = refund_settles(&ctx, &bob, &ids[1], "SUCCEEDED").await;
    assert_eq!(bobs["reason"], "EVENT_CANCELLED");
    assert_eq!(bobs["amountCents"], 150000);
    assert_eq!(
        refunds(&ctx, &ann, &ids[0]).await.len(),
        1,
        "nothing more for Ann"
    );
    assert!(
        eventually(5, || async {
            let told = ctx.events.of("refund.succeeded");
            told.len() == 2
                && told
                    .iter()
                    .any(|e| e.data.value()["registrationId"] == ids[1].as_str())
        })
        .await,
        "each success is told once"
    );

    // The organizer sees both; another organization sees none; a participant may not list.
    let listed = ctx
        .get(
            &format!("/api/v1/events/{event}/refunds"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body.as_array().unwrap().len(), 2);
    let hidden = ctx
        .get(
            &format!("/api/v1/events/{event}/refunds"),
            Some(&stranger.access),
        )
        .await;
    assert_eq!(hidden.status, 404, "{}", hidden.body);
    assert_eq!(
        ctx.get(
            &format!("/api/v1/events/{event}/refunds"),
            Some(&ann.access)
        )
        .await
        .status,
        403
    );
    // The money: both payments in, both returned; the same in the organization's revenue and
    // in the registrations download.
    let revenue = ctx
        .get(
            &format!("/api/v1/events/{event}/revenue"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(revenue.status, 200, "{}", revenue.body);
    assert_eq!(
        revenue.body["currencies"],
        json!([{"currency": "RUB", "paidCents": 300000, "payments": 2, "refundedCents": 300000,
                "refunds": 2, "refundPendingCents": 0, "netCents": 0}])
    );
    let all = ctx.get("/api/v1/events/revenue", Some(&owner.access)).await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(all.body["totals"][0]["paidCents"], 300000, "{}", all.body);
    assert_eq!(all.body["events"][0]["title"], "Opera night");
    let elsewhere = ctx
        .get("/api/v1/events/revenue", Some(&stranger.access))
        .await;
    assert_eq!(elsewhere.body, json!({"totals": [], "events": []}));
    assert_eq!(
        ctx.get(
            &format!("/api/v1/events/{event}/revenue"),
            Some(&stranger.access)
        )
        .await
        .status,
        404
    );
    assert_eq!(
        ctx.get("/api/v1/events/revenue?from=yesterday", Some(&owner.access))
            .await
            .status,
        400
    );
    let csv = ctx
        .http
        .get(format!(
            "{}/api/v1/events/{event}/registrations/export",
            ctx.base
        ))
        .bearer_auth(&owner.access)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let rows: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(
        rows[1..]
            .iter()
            .all(|r| r.ends_with("\"RUB\",\"150000\",\"150000\"")),
        "{csv}"
    );

    // Bob cannot read Ann's refunds.
    let hers = ctx
        .get(
            &format!("/api/v1/registrations/{}/refunds", ids[0]),
            Some(&bob.access),
        )
        .await;
    assert_eq!(hers.status, 404, "{}", hers.body);
}

async fn owner_of_another(ctx: &Ctx) -> Session {
    owner(ctx).await
}

#[tokio::test]
async fn a_lapsed_reservation_paid_late_takes_a_free_seat_or_is_refunded() {
    let ctx = Ctx::new().await;
    let owner = owner(&ctx).await;
    let short = json!({"name": "Last seat", "quantity": 1, "priceCents": 90000, "currency": "RUB",
        "reservationMinutes": 5});
    let (event, one_seat) = on_sale(&ctx, &owner, short.clone()).await;
    let other_seat = super::another_type(&ctx, &owner, &event, short).await;

    // Ann's reservation runs out with her payment open; the seat is still free when she pays.
    let ann = ctx.user().await;
    let a = reserve(&ctx, &ann, &event, &one_seat).await;
    let a_id = a["id"].as_str().unwrap().to_string();
    let a_url = checkout(&ctx, &ann, &a_id).await.body["paymentUrl"]
        .as_str()
        .unwrap()
        .to_string();
    lapse(&ctx, &ann, &a_id).await;
    assert!(
        eventually(10, || async {
            let c = ctx
                .get(
                    &format!("/api/v1/registrations/{a_id}/checkout"),
                    Some(&ann.access),
                )
                .await;
            c.body["status"] == "CLOSED"
        })
        .await,
        "the lapse closes the open payment"
    );
    let lapsed = checkout(&ctx, &ann, &a_id).await;
    assert_eq!(
        lapsed.status, 422,
        "no new payment after the lapse: {}",
        lapsed.body
    );
    assert_eq!(press(&ctx, &a_url, "pay").await.status(), 303);
    assert_eq!(
        status(&ctx, &ann, &a_id).await,
        "CONFIRMED",
        "the free seat is taken"
    );

    // Bob's runs out, Cid takes the seat, then Bob pays: no seat, so his money goes back.
    let (bob, cid) = (ctx.user().await, ctx.user().await);
    let b = reserve(&ctx, &bob, &event, &other_seat).await;
    let b_id = b["id"].as_str().unwrap().to_string();
    let b_url = checkout(&ctx, &bob, &b_id).await.body["paymentUrl"]
        .as_str()
        .unwrap()
        .to_string();
    lapse(&ctx, &bob, &b_id).await;
    let c: Value = reserve(&ctx, &cid, &event, &other_seat).await;
    assert_eq!(c["status"], "RESERVED");
    assert_eq!(press(&ctx, &b_url, "pay").await.status(), 303);
    assert_eq!(status(&ctx, &bob, &b_id).await, "EXPIRED");
    let back = refund_settles(&ctx, &bob, &b_id, "SUCCEEDED").await;
    assert_eq!(back["reason"], "NO_SEAT");
    assert_eq!(back["amountCents"], 90000);
}

#[tokio::test]
async fn money_received_by_hand_is_refunded_by_hand() {
    let ctx = Ctx::new().await;
    let owner = owner(&ctx).await;
    let (event, paid_type) = on_sale(&ctx, &owner, paid("RUB", 5)).await;
    let ann = ctx.user().await;
    let held = reserve(&ctx, &ann, &event, &paid_type).await;
    let id = held["id"].as_str().unwrap().to_string();
    let cash = ctx
        .post_empty(
            &format!("/api/v1/registrations/{id}/mark-paid"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(cash.status, 200, "{}", cash.body);
    let refund = ctx
        .post_empty(
            &format!("/api/v1/registrations/{id}/refund"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(refund.status, 201, "{}", refund.body);
    assert_eq!(refund.body["status"], "FAILED", "{}", refund.body);
    assert!(
        refund.body["lastError"]
            .as_str()
            .unwrap()
            .contains("by hand")
    );
    // No provider can make it: a retry is refused, and the worker never sends it.
    let retried = storage::events::refunds::retry(
        &ctx.t.db,
        storage::Scope::system(),
        refund.body["id"].as_str().unwrap().parse().unwrap(),
        chrono::Utc::now(),
    )
    .await;
    assert!(retried.is_err());
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(refunds(&ctx, &ann, &id).await[0]["sends"], 0);
    // A free registration has nothing to refund.
    let free =
        super::another_type(&ctx, &owner, &event, json!({"name": "Free", "quantity": 5})).await;
    let bob = ctx.user().await;
    let gratis = reserve(&ctx, &bob, &event, &free).await;
    let nothing = ctx
        .post_empty(
            &format!(
                "/api/v1/registrations/{}/refund",
                gratis["id"].as_str().unwrap()
            ),
            Some(&owner.access),
        )
        .await;
    assert_eq!(nothing.status, 422, "{}", nothing.body);
}
