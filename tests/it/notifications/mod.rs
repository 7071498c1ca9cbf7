//! The notification service: templates and settings, the bot against a fake Bot API,
//! delivery (tickets, fan-out, limits, retries, skips), times on the event's clock, tickets
//! that wait for payment, and waiting-list offers that always reach the person.

mod bot;
mod delivery;
mod local_times;
mod offers;
mod on_sale;
mod paid_tickets;
mod queue;
mod settings;

use crate::fake_telegram::FakeTelegram;
use crate::identity::{Ctx, Session};
use crate::support::send;
use chrono::{DateTime, Duration, Utc};
use domain::config::Service;
use serde_json::{Value, json};

/// A node whose bot talks to a fresh fake Bot API.
pub async fn with_bot(tweak: impl FnOnce(&mut domain::config::Config)) -> (Ctx, FakeTelegram) {
    let telegram = FakeTelegram::start().await;
    let url = telegram.url.clone();
    let ctx = Ctx::with_config(move |c| {
        c.messenger.api_url = url;
        c.messenger.poll_timeout_secs = 1;
        c.messenger.retry_base_ms = 200;
        tweak(c);
    })
    .await;
    (ctx, telegram)
}

/// A one-time link token for `user`.
pub async fn link_token(ctx: &Ctx, user: &Session) -> String {
    let r = ctx
        .post_empty("/api/v1/notifications/link", Some(&user.access))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["url"]
        .as_str()
        .unwrap()
        .rsplit('=')
        .next()
        .unwrap()
        .to_string()
}

/// Waits until the notification service has learnt `user` from user.registered: until then
/// it knows no name to put in a message (the bot's /start answer uses the messenger's).
pub async fn known(ctx: &Ctx, user: &Session) {
    let owner = ctx.t.owner().await;
    let db = &owner;
    let learnt = crate::support::eventually(10, || async {
        db.query_one(
            "SELECT count(*) FROM notification_service.users WHERE user_id = $1::text::uuid",
            &[&user.user_id],
        )
        .await
        .unwrap()
        .get::<_, i64>(0)
            == 1
    })
    .await;
    assert!(
        learnt,
        "the notification service learnt user {}",
        user.user_id
    );
}

/// Links `user` to `chat` through the bot and waits for the welcome.
pub async fn linked(ctx: &Ctx, telegram: &FakeTelegram, user: &Session, chat: i64) {
    let before = telegram.delivered_to(chat).len();
    let token = link_token(ctx, user).await;
    telegram.says(chat, &format!("/start {token}"));
    let got = telegram.wait_for(chat, before + 1, 10).await;
    assert_eq!(got.len(), before + 1, "the bot welcomed chat {chat}");
}

/// `POST /api/v1/notifications/send` on the notification service's own port, signed as the
/// event service's call.
pub async fn send_direct(ctx: &Ctx, body: Value, key: Option<&str>) -> crate::support::Reply {
    let url = format!(
        "{}/api/v1/notifications/send",
        ctx.service_url(Service::Notifications)
    );
    let mut request =
        crate::support::signed(&ctx.http, reqwest::Method::POST, &url, Service::Events, &[])
            .header("Accept-Language", "en")
            .json(&body);
    if let Some(key) = key {
        request = request.header("X-Idempotency-Key", key);
    }
    send(request).await
}

/// The send log of one message once it holds `rows` entries (or after 10 s): the bot's answer
/// reaches the fake API before the sender writes what came of it.
pub async fn log_of_at_least(
    ctx: &Ctx,
    message: &str,
    rows: usize,
) -> Vec<(String, Option<String>)> {
    crate::support::eventually(10, || async { log_of(ctx, message).await.len() >= rows }).await;
    log_of(ctx, message).await
}

/// The send log of one message: (outcome, reason) in order.
pub async fn log_of(ctx: &Ctx, message: &str) -> Vec<(String, Option<String>)> {
    let owner = ctx.t.owner().await;
    owner
        .query(
            "SELECT outcome, reason FROM notification_service.send_log WHERE message_id = $1::text::uuid ORDER BY id",
            &[&message],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// A published event with one free ticket type: (event id, ticket type id).
pub async fn free_event(ctx: &Ctx, owner: &Session, title: &str) -> (String, String) {
    let e = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": title, "startsAt": (Utc::now() + Duration::days(10)).to_rfc3339(),
                   "locationType": "OFFLINE", "locationAddress": "Main st. 1"}),
        )
        .await;
    assert_eq!(e.status, 201, "{}", e.body);
    let event = e.body["id"].as_str().unwrap().to_string();
    let t = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Standard", "quantity": 50}),
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.body);
    let p = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/publish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.body);
    (event, t.body["id"].as_str().unwrap().to_string())
}

/// Registers `user` for the event's type; returns the registration body.
pub async fn register(ctx: &Ctx, user: &Session, event: &str, ticket_type: &str) -> Value {
    let r = send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&user.access)
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type, "firstName": "Ann", "lastName": "Lee"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

/// A published event in `timezone` starting at `starts_at`, with one ticket type made from
/// `ticket`: (event id, ticket type id).
pub async fn event_in(
    ctx: &Ctx,
    owner: &Session,
    title: &str,
    timezone: &str,
    starts_at: DateTime<Utc>,
    ticket: Value,
) -> (String, String) {
    let e = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": title, "startsAt": starts_at.to_rfc3339(), "timezone": timezone,
                   "locationType": "OFFLINE", "locationAddress": "Main st. 1"}),
        )
        .await;
    assert_eq!(e.status, 201, "{}", e.body);
    let event = e.body["id"].as_str().unwrap().to_string();
    let t = ctx
        .post(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
            ticket,
        )
        .await;
    assert_eq!(t.status, 201, "{}", t.body);
    let p = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/publish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(p.status, 200, "{}", p.body);
    (event, t.body["id"].as_str().unwrap().to_string())
}

/// Sets `user`'s notification settings: everything on except `waiting_list` as given, in
/// `language`.
pub async fn prefer(ctx: &Ctx, user: &Session, language: &str, waiting_list: bool) {
    let r = ctx
        .put(
            "/api/v1/notifications/preferences",
            Some(&user.access),
            json!({"reminders": true, "changes": true, "waitingList": waiting_list,
                   "receipts": true, "language": language}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}
