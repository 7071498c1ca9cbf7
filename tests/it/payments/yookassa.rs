//! YooKassa against the fake: what bilet sends it, notifications confirmed by reading the
//! payment back, amounts that differ, a provider that does not answer in time, refunds.

use super::fake_yookassa::{FakeYooKassa, KEY, SHOP};
use super::{checkout, notify, on_sale, paid, refund_settles, reserve, status};
use crate::identity::Ctx;
use domain::events::checkout::ProviderKind;
use serde_json::json;
use std::time::Duration;

async fn with_yookassa(fake: &FakeYooKassa) -> Ctx {
    let api = fake.api.clone();
    Ctx::with_config(move |c| {
        c.payments.provider = ProviderKind::YooKassa;
        c.payments.yookassa_api_url = api;
        c.payments.yookassa_shop_id = SHOP.into();
        c.payments.yookassa_secret_key = Some(domain::config::Secret::new(KEY));
        c.payments.yookassa_receipts = true;
        c.payments.timeout_ms = 700;
    })
    .await
}

fn notification(event: &str, id: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"type": "notification", "event": event,
        "object": {"id": id, "status": "succeeded", "paid": true,
                   "amount": {"value": "1500.00", "currency": "RUB"}}}))
    .unwrap()
}

#[tokio::test]
async fn yookassa_payments_take_effect_only_as_yookassa_confirms_them() {
    let fake = FakeYooKassa::start().await;
    let ctx = with_yookassa(&fake).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid_type) = on_sale(&ctx, &owner, paid("RUB", 5)).await;
    let ann = ctx.user().await;
    let held = reserve(&ctx, &ann, &event, &paid_type).await;
    let id = held["id"].as_str().unwrap().to_string();

    let open = checkout(&ctx, &ann, &id).await;
    assert_eq!(open.status, 200, "{}", open.body);
    assert_eq!(open.body["provider"], "yookassa");
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
    let payment = fake.payment_of(&id);
    let payment_id = payment["id"].as_str().unwrap().to_string();
    assert_eq!(
        open.body["paymentUrl"],
        payment["confirmation"]["confirmation_url"]
    );
    assert_eq!(
        payment["amount"],
        json!({"value": "1500.00", "currency": "RUB"})
    );
    assert_eq!(payment["description"], "Opera night — Stalls");
    assert_eq!(payment["receipt"]["customer"]["email"], ann.email.as_str());

    // Told it succeeded while YooKassa says it is pending: nothing happens.
    let forged = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("payment.succeeded", &payment_id),
    )
    .await;
    assert_eq!(forged.status, 200, "{}", forged.body);
    assert_eq!(forged.body["applied"], false, "{}", forged.body);
    assert_eq!(status(&ctx, &ann, &id).await, "RESERVED");
    // A payment YooKassa does not know, and one bilet did not open: nothing either.
    let unknown = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("payment.succeeded", "2f9c1d4e-0000-4000-8000-000000000000"),
    )
    .await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    let foreign = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("payment.succeeded", &fake.foreign_payment()),
    )
    .await;
    assert_eq!(foreign.status, 200, "{}", foreign.body);
    assert_eq!(foreign.body["effect"], "ignored");
    let malformed = notify(&ctx, "yookassa", &[], b"{\"type\":\"notification\"}").await;
    assert_eq!(malformed.status, 400, "{}", malformed.body);

    // YooKassa took the money: confirmed, once.
    fake.succeed(&payment_id, None);
    let told = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("payment.succeeded", &payment_id),
    )
    .await;
    assert_eq!(told.status, 200, "{}", told.body);
    assert_eq!(told.body["effect"], "paid");
    assert_eq!(status(&ctx, &ann, &id).await, "CONFIRMED");
    let replay = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("payment.succeeded", &payment_id),
    )
    .await;
    assert_eq!(replay.body["effect"], "unchanged", "{}", replay.body);

    // The organizer refunds it: sent with an Idempotence-Key, recorded with YooKassa's id.
    let refund = ctx
        .post_empty(
            &format!("/api/v1/registrations/{id}/refund"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(refund.status, 201, "{}", refund.body);
    let settled = refund_settles(&ctx, &ann, &id, "SUCCEEDED").await;
    let made = fake.refunds();
    assert_eq!(made.len(), 1, "{made:?}");
    assert_eq!(settled["providerRefundId"], made[0]["id"]);
    assert_eq!(
        made[0]["amount"],
        json!({"value": "1500.00", "currency": "RUB"})
    );
    assert_eq!(made[0]["payment_id"], payment_id.as_str());
    // YooKassa's refund.succeeded for it changes nothing more.
    let rf = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("refund.succeeded", made[0]["id"].as_str().unwrap()),
    )
    .await;
    assert_eq!(rf.status, 200, "{}", rf.body);
    assert_eq!(ctx.events.of("refund.succeeded").len(), 1);
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
}

#[tokio::test]
async fn a_payment_of_another_amount_is_returned_and_a_slow_yookassa_is_asked_again() {
    let fake = FakeYooKassa::start().await;
    let ctx = with_yookassa(&fake).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid_type) = on_sale(&ctx, &owner, paid("RUB", 5)).await;

    // YooKassa answers after the time limit: 503, and the retry returns the same payment.
    let ann = ctx.user().await;
    let held = reserve(&ctx, &ann, &event, &paid_type).await;
    let id = held["id"].as_str().unwrap().to_string();
    fake.set_delay(Duration::from_millis(1500));
    let slow = checkout(&ctx, &ann, &id).await;
    assert_eq!(slow.status, 503, "{}", slow.body);
    assert_eq!(slow.body["code"], "service_unavailable");
    fake.set_delay(Duration::ZERO);
    let retried = checkout(&ctx, &ann, &id).await;
    assert_eq!(retried.status, 200, "{}", retried.body);
    assert_eq!(
        retried.body["attempt"], 1,
        "the same attempt, under the same key"
    );
    let payment = fake.payment_of(&id);
    assert_eq!(
        retried.body["paymentUrl"],
        payment["confirmation"]["confirmation_url"]
    );

    // YooKassa reports less than was asked: the seat is not confirmed, the money goes back.
    let payment_id = payment["id"].as_str().unwrap().to_string();
    fake.succeed(&payment_id, Some("10.00"));
    let told = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("payment.succeeded", &payment_id),
    )
    .await;
    assert_eq!(told.status, 200, "{}", told.body);
    assert_eq!(status(&ctx, &ann, &id).await, "RESERVED");
    let back = refund_settles(&ctx, &ann, &id, "SUCCEEDED").await;
    assert_eq!(back["reason"], "AMOUNT_MISMATCH");
    assert_eq!(back["amountCents"], 1000);
    assert_eq!(fake.refunds()[0]["amount"]["value"], "10.00");
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
}

#[tokio::test]
async fn wrong_shop_credentials_are_a_clear_refusal() {
    let fake = FakeYooKassa::start().await;
    let api = fake.api.clone();
    let ctx = Ctx::with_config(move |c| {
        c.payments.provider = ProviderKind::YooKassa;
        c.payments.yookassa_api_url = api;
        c.payments.yookassa_shop_id = SHOP.into();
        c.payments.yookassa_secret_key = Some(domain::config::Secret::new("wrong"));
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid_type) = on_sale(&ctx, &owner, paid("RUB", 5)).await;
    let (eur_event, eur_type) = on_sale(&ctx, &owner, paid("EUR", 5)).await;
    let ann = ctx.user().await;
    let held = reserve(&ctx, &ann, &event, &paid_type).await;
    let refused = checkout(&ctx, &ann, held["id"].as_str().unwrap()).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert_eq!(fake.refusals(), vec!["bad credentials".to_string()]);
    // Euros have no provider here (no Stripe keys).
    let bob = ctx.user().await;
    let euros = reserve(&ctx, &bob, &eur_event, &eur_type).await;
    let unpaid = checkout(&ctx, &bob, euros["id"].as_str().unwrap()).await;
    assert_eq!(unpaid.status, 422, "{}", unpaid.body);
    assert_eq!(
        unpaid.body["message"],
        "Payments in this currency are not accepted"
    );
}

#[tokio::test]
async fn an_organizations_own_shop_takes_its_events_money() {
    let fake = FakeYooKassa::start().await;
    let api = fake.api.clone();
    let ctx = Ctx::with_config(move |c| {
        // The platform pays with the test provider; one organization brings its own shop.
        c.payments.yookassa_api_url = api;
        c.payments.credentials_key = Some(domain::config::Secret::new(
            "credentials-key-of-this-installation-0123456789",
        ));
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    let path = "/api/v1/payments/accounts/yookassa";
    let shop = json!({"shopId": SHOP, "secretKey": KEY, "receipts": true});
    assert_eq!(
        ctx.put(path, Some(&moderator.access), shop.clone())
            .await
            .status,
        403
    );
    let ann = ctx.user().await;
    assert_eq!(
        ctx.put(path, Some(&ann.access), shop.clone()).await.status,
        403
    );
    let no_shop = ctx
        .put(path, Some(&owner.access), json!({"secretKey": KEY}))
        .await;
    assert_eq!(no_shop.status, 400, "{}", no_shop.body);
    let spaced = ctx
        .put(
            path,
            Some(&owner.access),
            json!({"shopId": SHOP, "secretKey": "a b"}),
        )
        .await;
    assert_eq!(spaced.status, 400, "{}", spaced.body);
    let unknown = ctx
        .put(
            "/api/v1/payments/accounts/test",
            Some(&owner.access),
            shop.clone(),
        )
        .await;
    assert_eq!(unknown.status, 404);
    let extra = ctx
        .put(
            path,
            Some(&owner.access),
            json!({"shopId": SHOP, "secretKey": KEY, "bank": 1}),
        )
        .await;
    assert_eq!(extra.status, 400, "{}", extra.body);
    let saved = ctx.put(path, Some(&owner.access), shop).await;
    assert_eq!(saved.status, 200, "{}", saved.body);
    assert!(
        !saved.body.to_string().contains(KEY),
        "the key is never shown"
    );
    let notify_path = format!("/api/v1/payments/providers/yookassa/notifications/{org}");
    assert!(
        saved.body["notificationUrl"]
            .as_str()
            .unwrap()
            .ends_with(&notify_path)
    );
    let listed = ctx
        .get("/api/v1/payments/accounts", Some(&moderator.access))
        .await;
    assert_eq!(listed.body.as_array().unwrap().len(), 1, "{}", listed.body);
    assert_eq!(listed.body[0]["shopId"], SHOP);
    let sealed: Vec<u8> = ctx
        .t
        .owner()
        .await
        .query_one(
            "SELECT secret_sealed FROM event_service.payment_accounts",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        !sealed.windows(KEY.len()).any(|w| w == KEY.as_bytes()),
        "stored sealed"
    );

    // Its event's roubles go to its shop, with a receipt.
    let (event, paid_type) = on_sale(&ctx, &owner, paid("RUB", 5)).await;
    let held = reserve(&ctx, &ann, &event, &paid_type).await;
    let id = held["id"].as_str().unwrap().to_string();
    let open = checkout(&ctx, &ann, &id).await;
    assert_eq!(open.status, 200, "{}", open.body);
    assert_eq!(open.body["provider"], "yookassa");
    let payment = fake.payment_of(&id);
    assert_eq!(payment["receipt"]["customer"]["email"], ann.email.as_str());
    let payment_id = payment["id"].as_str().unwrap().to_string();
    fake.succeed(&payment_id, None);
    // Told through the platform's address: the platform has no YooKassa shop.
    let platform = notify(
        &ctx,
        "yookassa",
        &[],
        &notification("payment.succeeded", &payment_id),
    )
    .await;
    assert_eq!(platform.status, 404, "{}", platform.body);
    // Through another organization's address: not its payment.
    let other_org = uuid::Uuid::now_v7();
    let wrong = ctx
        .http
        .post(format!(
            "{}/api/v1/payments/providers/yookassa/notifications/{other_org}",
            ctx.base
        ))
        .body(notification("payment.succeeded", &payment_id))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 404);
    let told = ctx
        .http
        .post(format!("{}{notify_path}", ctx.base))
        .body(notification("payment.succeeded", &payment_id))
        .send()
        .await
        .unwrap();
    assert_eq!(told.status(), 200);
    assert_eq!(status(&ctx, &ann, &id).await, "CONFIRMED");

    // Refunded from its shop.
    let refund = ctx
        .post_empty(
            &format!("/api/v1/registrations/{id}/refund"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(refund.status, 201, "{}", refund.body);
    refund_settles(&ctx, &ann, &id, "SUCCEEDED").await;
    assert_eq!(fake.refunds().len(), 1);

    // Another organization without a shop of its own still pays through the platform's.
    let (other, _) = ctx.owner(&admin).await;
    let (event2, type2) = on_sale(&ctx, &other, paid("RUB", 5)).await;
    let bob = ctx.user().await;
    let b = reserve(&ctx, &bob, &event2, &type2).await;
    let theirs = checkout(&ctx, &bob, b["id"].as_str().unwrap()).await;
    assert_eq!(theirs.body["provider"], "test", "{}", theirs.body);

    // The owner removes the account: the next payment goes through the platform again.
    let gone = ctx.delete(path, Some(&owner.access)).await;
    assert_eq!(gone.status, 204);
    assert_eq!(ctx.delete(path, Some(&owner.access)).await.status, 404);
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
}
