//! Times on the event's own clock: an event in Vladivostok (UTC+10 all year) shows its local
//! times with the offset, a made-up zone is refused, and the reminder says how far off the
//! start is from when it goes out.

use super::{event_in, linked, prefer, register, with_bot};
use crate::identity::Ctx;
use chrono::{DateTime, Duration, Utc};
use domain::clock::Clock;
use serde_json::json;

const VLADIVOSTOK: &str = "Asia/Vladivostok";

/// 09:00 UTC (19:00 in Vladivostok) `days` days after the node's today.
fn nine_utc(ctx: &Ctx, days: i64) -> DateTime<Utc> {
    (ctx.clock.now() + Duration::days(days))
        .date_naive()
        .and_hms_opt(9, 0, 0)
        .unwrap()
        .and_utc()
}

#[tokio::test]
async fn an_event_in_vladivostok_tells_its_local_times() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let start = nine_utc(&ctx, 10);
    let (event, free) = event_in(
        &ctx,
        &owner,
        "Pacific Jazz",
        VLADIVOSTOK,
        start,
        json!({"name": "Standard", "quantity": 10}),
    )
    .await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 9301).await;
    let reg = register(&ctx, &ann, &event, &free).await;
    let code = reg["confirmationCode"].as_str().unwrap();

    // The local day may differ from the UTC one; here 19:00 is the same day as 09:00 UTC.
    let local = format!("{} 19:00 UTC\\+10", start.format("%d\\.%m\\.%Y"));
    let got = tg.wait_for(9301, 2, 10).await;
    let ticket = &got[1];
    assert_eq!(ticket.method, "sendPhoto");
    assert!(
        ticket.text.contains(&format!("Когда: {local}")) && ticket.text.contains(code),
        "{}",
        ticket.text
    );
    assert!(!ticket.text.contains("09:00"), "{}", ticket.text);

    // /tickets lists it on the same clock.
    tg.says(9301, "/tickets");
    let got = tg.wait_for(9301, 3, 10).await;
    assert!(got[2].text.contains(&local), "{}", got[2].text);
}

#[tokio::test]
async fn a_made_up_time_zone_is_refused_on_create_and_update() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let starts = (ctx.clock.now() + Duration::days(5)).to_rfc3339();
    let r = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Red Planet", "startsAt": starts, "timezone": "Mars/Olympus"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["code"].as_str()),
        (400, Some("validation_error")),
        "{}",
        r.body
    );
    assert!(r.body["details"]["timezone"].is_string(), "{}", r.body);

    let r = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Red Planet", "startsAt": starts, "timezone": VLADIVOSTOK}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["timezone"], VLADIVOSTOK);
    let path = format!("/api/v1/events/{}", r.body["id"].as_str().unwrap());
    let r = ctx
        .put(
            &path,
            Some(&owner.access),
            json!({"title": "Red Planet", "startsAt": starts, "timezone": "Mars/Olympus"}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["code"].as_str()),
        (400, Some("validation_error")),
        "{}",
        r.body
    );
    assert!(r.body["details"]["timezone"].is_string(), "{}", r.body);
    assert_eq!(
        ctx.get(&path, Some(&owner.access)).await.body["timezone"],
        VLADIVOSTOK,
        "the refused update changed nothing"
    );
}

/// An event in Vladivostok starting at `start`, with Ann (en) and Bob (ru) registered; the
/// clock is moved to `send_at` before the start and the reminder sent. Returns (Ann's, Bob's).
async fn reminders(start: impl Fn(&Ctx) -> DateTime<Utc>, send_at: Duration) -> (String, String) {
    let (ctx, tg) = with_bot(|c| c.messenger.chat_interval_ms = 100).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let starts_at = start(&ctx);
    let (event, free) = event_in(
        &ctx,
        &owner,
        "Gala",
        VLADIVOSTOK,
        starts_at,
        json!({"name": "Standard", "quantity": 10}),
    )
    .await;
    let (ann, bob) = (ctx.user().await, ctx.user().await);
    linked(&ctx, &tg, &ann, 9311).await;
    linked(&ctx, &tg, &bob, 9312).await;
    prefer(&ctx, &ann, "en", true).await;
    for user in [&ann, &bob] {
        register(&ctx, user, &event, &free).await;
    }
    tg.wait_for(9311, 2, 10).await;
    tg.wait_for(9312, 2, 10).await;
    ctx.clock.advance(starts_at - send_at - ctx.clock.now());
    ctx.remind_due().await;
    let ann_got = tg.wait_for(9311, 3, 10).await;
    let bob_got = tg.wait_for(9312, 3, 10).await;
    assert_eq!((ann_got.len(), bob_got.len()), (3, 3), "one reminder each");
    (ann_got[2].text.clone(), bob_got[2].text.clone())
}

#[tokio::test]
async fn a_reminder_two_hours_before_says_in_two_hours() {
    // 09:30 UTC is 19:30 in Vladivostok; sent at 07:30 UTC, 17:30 there.
    let (en, ru) = reminders(
        |ctx| nine_utc(ctx, 2) + Duration::minutes(30),
        Duration::hours(2),
    )
    .await;
    assert!(en.starts_with("*Gala* starts in 2 hours\\."), "{en}");
    assert!(
        en.contains("When: ") && en.contains("19:30 UTC\\+10"),
        "{en}"
    );
    assert!(ru.starts_with("*Gala* начнётся через 2 часа\\."), "{ru}");
    for text in [&en, &ru] {
        assert!(
            !text.to_lowercase().contains("tomorrow") && !text.to_lowercase().contains("завтра"),
            "{text}"
        );
    }
}

#[tokio::test]
async fn a_reminder_in_the_local_morning_says_today_at() {
    // Sent at 01:00 UTC, 11:00 in Vladivostok, for 19:00 there: the same local day.
    let (en, ru) = reminders(|ctx| nine_utc(ctx, 2), Duration::hours(8)).await;
    assert!(
        en.starts_with("*Gala* starts today at 19:00 UTC\\+10\\."),
        "{en}"
    );
    assert!(
        ru.starts_with("*Gala* начнётся сегодня в 19:00 UTC\\+10\\."),
        "{ru}"
    );
}
