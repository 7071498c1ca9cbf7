//! Stripe against the fake: Checkout Sessions, signed webhook events (forged, stale and
//! replayed ones change nothing), refunds of the payment intent, and the session of a lapsed
//! reservation expired at Stripe.

use super::fake_stripe::{FakeStripe, SECRET_KEY, WEBHOOK_SECRET, event, sign};
use super::{checkout, lapse, notify, on_sale, paid, refund_settles, reserve, status};
use crate::identity::Ctx;
use crate::support::eventually;
use chrono::Utc;
use domain::events::checkout::ProviderKind;
use serde_json::json;

async fn with_stripe(fake: &FakeStripe) -> Ctx {
    let api = fake.api.clone();
    Ctx::with_config(move |c| {
        c.payments.provider = ProviderKind::Stripe;
        c.payments.stripe_api_url = api;
        c.payments.stripe_secret_key = Some(domain::config::Secret::new(SECRET_KEY));
        c.payments.stripe_webhook_secret = Some(domain::config::Secret::new(WEBHOOK_SECRET));
    })
    .await
}

#[tokio::test]
async fn stripe_checkout_is_confirmed_by_its_signed_event_and_refunded() {
    let fake = FakeStripe::start().await;
    let ctx = with_stripe(&fake).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event_id, paid_type) = on_sale(&ctx, &owner, paid("EUR", 5)).await;
    let ann = ctx.user().await;
    let held = reserve(&ctx, &ann, &event_id, &paid_type).await;
    let id = held["id"].as_str().unwrap().to_string();

    let open = checkout(&ctx, &ann, &id).await;
    assert_eq!(open.status, 200, "{}", open.body);
    assert_eq!(open.body["provider"], "stripe");
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
    let session = fake.session_of(&id);
    assert_eq!(open.body["paymentUrl"], session["url"]);
    assert_eq!(session["amount_total"], 150000);
    assert_eq!(session["currency"], "eur");
    assert_eq!(session["customer_email"], ann.email.as_str());

    let completed = serde_json::to_vec(&fake.complete(session["id"].as_str().unwrap())).unwrap();
    let now = Utc::now().timestamp();
    // Signed with another secret, too old, or not at all: refused, nothing changes.
    let forged = notify(
        &ctx,
        "stripe",
        &[("stripe-signature", sign("whsec_guess", now, &completed))],
        &completed,
    )
    .await;
    assert_eq!(forged.status, 401, "{}", forged.body);
    let stale = notify(
        &ctx,
        "stripe",
        &[(
            "stripe-signature",
            sign(WEBHOOK_SECRET, now - 600, &completed),
        )],
        &completed,
    )
    .await;
    assert_eq!(stale.status, 401, "{}", stale.body);
    assert_eq!(notify(&ctx, "stripe", &[], &completed).await.status, 401);
    let mut tampered = completed.clone();
    let at = tampered.windows(6).position(|w| w == b"150000").unwrap();
    tampered[at] = b'9';
    let changed = notify(
        &ctx,
        "stripe",
        &[("stripe-signature", sign(WEBHOOK_SECRET, now, &completed))],
        &tampered,
    )
    .await;
    assert_eq!(
        changed.status, 401,
        "a body changed after signing: {}",
        changed.body
    );
    assert_eq!(status(&ctx, &ann, &id).await, "RESERVED");

    let paid_event = notify(
        &ctx,
        "stripe",
        &[("stripe-signature", sign(WEBHOOK_SECRET, now, &completed))],
        &completed,
    )
    .await;
    assert_eq!(paid_event.status, 200, "{}", paid_event.body);
    assert_eq!(paid_event.body["effect"], "paid");
    assert_eq!(status(&ctx, &ann, &id).await, "CONFIRMED");
    let replayed = notify(
        &ctx,
        "stripe",
        &[("stripe-signature", sign(WEBHOOK_SECRET, now, &completed))],
        &completed,
    )
    .await;
    assert_eq!(replayed.body["effect"], "unchanged", "{}", replayed.body);
    // Events bilet does not act on, and sessions it did not open, are acknowledged.
    let other = serde_json::to_vec(&event("customer.created", json!({"id": "cus_1"}))).unwrap();
    let ignored = notify(
        &ctx,
        "stripe",
        &[("stripe-signature", sign(WEBHOOK_SECRET, now, &other))],
        &other,
    )
    .await;
    assert_eq!(ignored.body["effect"], "ignored", "{}", ignored.body);
    let foreign = serde_json::to_vec(&event(
        "checkout.session.completed",
        json!({"id": "cs_other",
        "payment_status": "paid", "amount_total": 100, "currency": "eur"}),
    ))
    .unwrap();
    let unknown = notify(
        &ctx,
        "stripe",
        &[("stripe-signature", sign(WEBHOOK_SECRET, now, &foreign))],
        &foreign,
    )
    .await;
    assert_eq!(unknown.body["effect"], "ignored", "{}", unknown.body);

    // Refunded through the session's payment intent.
    let refund = ctx
        .post_empty(
            &format!("/api/v1/registrations/{id}/refund"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(refund.status, 201, "{}", refund.body);
    let settled = refund_settles(&ctx, &ann, &id, "SUCCEEDED").await;
    let made = fake.refunds();
    assert_eq!(made.len(), 1);
    assert_eq!(made[0]["amount"], 150000);
    assert_eq!(settled["providerRefundId"], made[0]["id"]);
    assert!(fake.refusals().is_empty(), "{:?}", fake.refusals());
}

#[tokio::test]
async fn the_session_of_a_lapsed_reservation_is_expired_at_stripe() {
    let fake = FakeStripe::start().await;
    let ctx = with_stripe(&fake).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event_id, short) = on_sale(
        &ctx,
        &owner,
        json!({"name": "Quick", "quantity": 3, "priceCents": 2500, "currency": "USD", "reservationMinutes": 5}),
    )
    .await;
    let bob = ctx.user().await;
    let held = reserve(&ctx, &bob, &event_id, &short).await;
    let id = held["id"].as_str().unwrap().to_string();
    let open = checkout(&ctx, &bob, &id).await;
    assert_eq!(open.status, 200, "{}", open.body);
    let session = fake.session_of(&id);
    // Stripe keeps a session at least 30 minutes; bilet closes it when the seat is let go.
    assert!(session["expires_at"].as_i64().unwrap() >= Utc::now().timestamp() + 30 * 60);
    lapse(&ctx, &bob, &id).await;
    assert!(
        eventually(10, || async {
            fake.expired() == vec![session["id"].as_str().unwrap().to_string()]
        })
        .await,
        "expired at Stripe: {:?} refused {:?}",
        fake.expired(),
        fake.refusals()
    );
    // Stripe then tells the session expired: the checkout stays closed, nothing else moves.
    let expired = serde_json::to_vec(&event(
        "checkout.session.expired",
        json!({"id": session["id"]}),
    ))
    .unwrap();
    let told = notify(
        &ctx,
        "stripe",
        &[(
            "stripe-signature",
            sign(WEBHOOK_SECRET, Utc::now().timestamp(), &expired),
        )],
        &expired,
    )
    .await;
    assert_eq!(told.status, 200, "{}", told.body);
    assert_eq!(status(&ctx, &bob, &id).await, "EXPIRED");
}
