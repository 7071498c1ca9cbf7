//! Paying through providers and refunds that happen: the `test` provider end to end over HTTP,
//! and YooKassa and Stripe against fakes served by the test that check every request the way
//! the providers document them.

mod fake_stripe;
pub(crate) mod fake_yookassa;
mod stripe;
mod test_provider;
mod yookassa;

use crate::identity::{Ctx, Session};
use crate::support::{Reply, eventually, send};
use serde_json::{Value, json};

/// A published event of `owner` starting in ten days, with one ticket type made of `ticket`.
pub async fn on_sale(ctx: &Ctx, owner: &Session, ticket: Value) -> (String, String) {
    let start = domain::clock::Clock::now(&*ctx.clock) + chrono::Duration::days(10);
    crate::notifications::event_in(ctx, owner, "Opera night", "Europe/Moscow", start, ticket).await
}

/// Another ticket type of `event`.
pub async fn another_type(ctx: &Ctx, owner: &Session, event: &str, ticket: Value) -> String {
    let t = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            ticket,
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.body);
    t.body["id"].as_str().unwrap().to_string()
}

/// `user` takes a ticket of `ticket_type`: the registration.
pub async fn reserve(ctx: &Ctx, user: &Session, event: &str, ticket_type: &str) -> Value {
    crate::notifications::register(ctx, user, event, ticket_type).await
}

/// `POST /registrations/{id}/checkout` as `user`.
pub async fn checkout(ctx: &Ctx, user: &Session, registration: &str) -> Reply {
    ctx.post_empty(
        &format!("/api/v1/registrations/{registration}/checkout"),
        Some(&user.access),
    )
    .await
}

/// The registration's status as its owner reads it.
pub async fn status(ctx: &Ctx, user: &Session, registration: &str) -> String {
    let r = ctx
        .get(
            &format!("/api/v1/registrations/{registration}"),
            Some(&user.access),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["status"].as_str().unwrap().to_string()
}

/// Lets `registration`'s reservation (of at most five minutes) run out: the clock moves six
/// minutes and its owner sees it EXPIRED.
pub async fn lapse(ctx: &Ctx, user: &Session, registration: &str) {
    ctx.clock.advance(chrono::Duration::minutes(6));
    assert!(
        eventually(10, || async {
            status(ctx, user, registration).await == "EXPIRED"
        })
        .await,
        "{registration} ran out"
    );
}

/// The refunds of a registration as `user` sees them.
pub async fn refunds(ctx: &Ctx, user: &Session, registration: &str) -> Vec<Value> {
    let r = ctx
        .get(
            &format!("/api/v1/registrations/{registration}/refunds"),
            Some(&user.access),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body.as_array().unwrap().clone()
}

/// Waits until the registration has one refund in `status`, and returns it.
pub async fn refund_settles(ctx: &Ctx, user: &Session, registration: &str, status: &str) -> Value {
    let settled = eventually(15, || async {
        let found = refunds(ctx, user, registration).await;
        found.len() == 1 && found[0]["status"] == status
    })
    .await;
    let last = refunds(ctx, user, registration).await;
    assert!(settled, "refund of {registration} never {status}: {last:?}");
    last[0].clone()
}

/// Posts a provider notification as the provider would (no token), with `headers`.
pub async fn notify(ctx: &Ctx, provider: &str, headers: &[(&str, String)], body: &[u8]) -> Reply {
    let mut request = ctx
        .http
        .post(format!(
            "{}/api/v1/payments/providers/{provider}/notifications",
            ctx.base
        ))
        .header("content-type", "application/json")
        .body(body.to_vec());
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    send(request).await
}

/// The paid-ticket shape most tests use: 1,500.00 in `currency`, 30 minutes to pay.
pub fn paid(currency: &str, quantity: i64) -> Value {
    json!({"name": "Stalls", "quantity": quantity, "priceCents": 150000, "currency": currency,
           "reservationMinutes": 30})
}

/// The path of the provider's page in a payment URL.
pub fn page_path(url: &str) -> String {
    let at = url
        .find("/api/v1/payments/test/")
        .expect("a test payment page");
    url[at..].to_string()
}

/// Presses a button of the test page: the answer (a redirect, not followed).
pub async fn press(ctx: &Ctx, payment_url: &str, action: &str) -> reqwest::Response {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}{}", ctx.base, page_path(payment_url)))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("action={action}"))
        .send()
        .await
        .unwrap()
}
