//! Delivery: every template for a hostile name, the ticket photo, fan-out on cancellation,
//! 429 and 500 answers, opt-outs and skips, the internal send endpoint.

use super::{free_event, known, linked, log_of, log_of_at_least, register, send_direct, with_bot};
use crate::fake_telegram::Trouble;
use crate::identity::{Ctx, PASSWORD, session};
use crate::support::{eventually, send};
use domain::clock::Clock;
use domain::config::Service;
use domain::notifications::Kind;
use serde_json::json;
use std::time::Duration;

const HOSTILE: &str = "*Bo_b* [x](http://evil) `rm` ~~ > #1 + - = | {a} . ! \\";

#[tokio::test]
async fn every_template_reaches_a_user_with_a_markdown_hostile_name() {
    let (ctx, tg) = with_bot(|c| c.messenger.chat_interval_ms = 100).await;
    let email = format!("h{}@example.com", uuid::Uuid::now_v7().simple());
    let r = ctx
        .post(
            "/api/v1/auth/register",
            None,
            json!({"email": email, "password": PASSWORD, "firstName": HOSTILE, "lastName": "X"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let user = session(&ctx.login(&email, PASSWORD).await.body, &email);
    linked(&ctx, &tg, &user, 6001).await;
    // A direct send names the user from what user.registered told the service.
    known(&ctx, &user).await;
    for kind in Kind::ALL {
        let variables: serde_json::Map<String, serde_json::Value> =
            domain::notifications::templates::variables(kind)
                .into_iter()
                .filter(|v| v != "firstName")
                .map(|v| (v, json!(HOSTILE)))
                .collect();
        let r = send_direct(
            &ctx,
            json!({"userId": user.user_id, "template": kind.as_str(), "variables": variables}),
            None,
        )
        .await;
        assert_eq!(
            (r.status, r.body["status"].as_str()),
            (202, Some("QUEUED")),
            "{}",
            r.body
        );
    }
    let expected = 1 + Kind::ALL.len();
    let got = tg.wait_for(6001, expected, 20).await;
    assert_eq!(got.len(), expected, "the welcome and every template");
    // The fake refuses MarkdownV2 Telegram would refuse: nothing was refused.
    assert!(tg.sends().iter().all(|c| c.status == 200));
    // The bot's answer to /start greets the chat by the messenger's own name ("Chat") when
    // the link came before user.registered was applied (the sign-up's welcome is then not
    // sent again). Every other message names the user.
    for call in got
        .iter()
        .filter(|c| !c.text.starts_with("Здравствуйте, Chat") && !c.text.starts_with("Hello, Chat"))
    {
        assert!(
            call.text.contains("\\*Bo\\_b\\* \\[x\\]\\(http://evil\\)"),
            "the name is shown literally: {}",
            call.text
        );
    }
}

#[tokio::test]
async fn a_registration_sends_the_ticket_and_a_cancellation_reaches_every_participant() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = free_event(&ctx, &owner, "Concert").await;
    let mut people = Vec::new();
    for chat in [7001, 7002, 7003] {
        let user = ctx.user().await;
        linked(&ctx, &tg, &user, chat).await;
        people.push((user, chat));
    }
    let unlinked = ctx.user().await;

    let mut codes = Vec::new();
    for (user, chat) in &people {
        let reg = register(&ctx, user, &event, &ticket_type).await;
        let code = reg["confirmationCode"].as_str().unwrap().to_string();
        let got = tg.wait_for(*chat, 2, 10).await;
        let ticket = &got[1];
        assert_eq!(ticket.method, "sendPhoto");
        assert!(
            ticket.text.contains(&format!("`{code}`")),
            "{}",
            ticket.text
        );
        assert!(ticket.text.contains("*Concert*") && ticket.text.contains("Main st\\. 1"));
        assert_eq!(
            ticket.photo.as_deref(),
            Some(messenger::ticket::qr_png(&code).unwrap().as_slice()),
            "the photo is the QR code of the check-in code"
        );
        codes.push((reg["id"].as_str().unwrap().to_string(), code));
    }
    let unlinked_reg = register(&ctx, &unlinked, &event, &ticket_type).await;

    // A redelivered registration.created sends nothing twice.
    let created = ctx.events.of("registration.created");
    let first = created
        .iter()
        .find(|e| e.data.value()["registrationId"] == codes[0].0.as_str())
        .unwrap()
        .clone();
    ctx.broker()
        .publish(std::slice::from_ref(&first))
        .await
        .unwrap();

    // The third participant cancels: only they are told, and they are no longer a participant.
    let (third, third_chat) = &people[2];
    let r = ctx
        .delete(
            &format!("/api/v1/registrations/{}", codes[2].0),
            Some(&third.access),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    let got = tg.wait_for(*third_chat, 3, 10).await;
    assert!(got[2].text.contains("отменена"), "{}", got[2].text);

    let r = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/cancel"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    for (_, chat) in &people[..2] {
        let got = tg.wait_for(*chat, 3, 10).await;
        assert_eq!(got.len(), 3);
        assert!(got[2].text.contains("*Concert*") && got[2].text.contains("отменено"));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let first_chat: Vec<String> = tg.delivered_to(7001).into_iter().map(|c| c.text).collect();
    assert_eq!(
        first_chat.len(),
        3,
        "no duplicate ticket, one cancellation: {first_chat:#?}"
    );
    assert_eq!(
        tg.delivered_to(*third_chat).len(),
        3,
        "a cancelled registration is not told again"
    );

    // The participant without a chat: skipped, with the reason in the send log.
    let owner_db = ctx.t.owner().await;
    let skipped = owner_db
        .query(
            "SELECT kind, status, reason FROM notification_service.messages WHERE user_id = $1::text::uuid ORDER BY created_at",
            &[&unlinked_reg["userId"].as_str().unwrap()],
        )
        .await
        .unwrap();
    let rows: Vec<(String, String, Option<String>)> = skipped
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert!(
        rows.contains(&(
            "event.cancelled".into(),
            "SKIPPED".into(),
            Some("no_linked_chat".into())
        )),
        "{rows:?}"
    );
    assert!(rows.iter().all(|r| r.1 == "SKIPPED"));

    // /tickets no longer lists the cancelled event.
    tg.says(7001, "/tickets");
    assert!(
        tg.wait_for(7001, 4, 10).await[3]
            .text
            .contains("Предстоящих билетов нет")
    );
}

#[tokio::test]
async fn a_429_stops_all_sends_for_its_wait_and_the_message_then_goes_out() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let (ann, bob) = (ctx.user().await, ctx.user().await);
    linked(&ctx, &tg, &ann, 8001).await;
    linked(&ctx, &tg, &bob, 8002).await;
    tg.trouble(&[Trouble::TooMany(2)]);
    let r = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "registration.cancelled", "variables": {"eventTitle": "Gig"}}),
        None,
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    // Wait for the refused attempt, then queue one for Bob: it must wait out the 429 too.
    assert!(eventually(10, || async { tg.sends().iter().any(|c| c.status == 429) }).await);
    let refused_at = tg.sends().iter().find(|c| c.status == 429).unwrap().at;
    send_direct(
        &ctx,
        json!({"userId": bob.user_id, "template": "registration.cancelled", "variables": {"eventTitle": "Gig"}}),
        None,
    )
    .await;
    let ann_got = tg.wait_for(8001, 2, 15).await;
    let bob_got = tg.wait_for(8002, 2, 15).await;
    assert_eq!((ann_got.len(), bob_got.len()), (2, 2));
    assert!(
        ann_got[1].at >= refused_at + Duration::from_secs(2),
        "Ann's retry waited"
    );
    assert!(
        bob_got[1].at >= refused_at + Duration::from_secs(2),
        "everyone waited"
    );
    assert_eq!(
        log_of_at_least(&ctx, &id, 2).await,
        vec![
            (
                "RETRY".to_string(),
                Some("rate_limited: retry after 2 s".to_string())
            ),
            ("SENT".to_string(), None)
        ]
    );
    let (status, attempts, _) =
        storage::notifications::queue::status(&ctx.t.db, id.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
    assert_eq!(
        (status.as_str(), attempts),
        ("SENT", 1),
        "a 429 uses up no try"
    );
    // The attempts are counted for Prometheus: two welcomes and two messages sent, one retry.
    // Bob's answer can reach the fake API a moment before his send is counted.
    let url = format!("{}/metrics", ctx.service_url(Service::Notifications));
    let last = std::sync::Mutex::new(String::new());
    let counted = eventually(10, || async {
        let metrics = ctx
            .http
            .get(&url)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let done = metrics.contains("bilet_notification_attempts_total{outcome=\"retry\"} 1")
            && metrics.contains("bilet_notification_attempts_total{outcome=\"sent\"} 4");
        *last.lock().unwrap() = metrics;
        done
    })
    .await;
    assert!(counted, "{}", last.lock().unwrap());
}

#[tokio::test]
async fn a_server_error_is_retried_with_backoff_and_persistent_ones_give_up() {
    let (ctx, tg) = with_bot(|c| c.messenger.max_attempts = 2).await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 8101).await;
    tg.trouble(&[Trouble::ServerError]);
    let r = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "event.changed", "variables": {"eventTitle": "Gig"}}),
        None,
    )
    .await;
    let id = r.body["id"].as_str().unwrap().to_string();
    // teloxide waits 10 s after a 5xx before it reports it.
    assert_eq!(tg.wait_for(8101, 2, 30).await.len(), 2);
    assert_eq!(
        log_of_at_least(&ctx, &id, 2).await,
        vec![
            (
                "RETRY".to_string(),
                Some("transient: Internal Server Error".to_string())
            ),
            ("SENT".to_string(), None)
        ]
    );
    // Two failures with max_attempts 2: FAILED, and the log says why.
    tg.trouble(&[Trouble::ServerError, Trouble::ServerError]);
    let r = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "event.changed", "variables": {"eventTitle": "Gig"}}),
        None,
    )
    .await;
    let id = r.body["id"].as_str().unwrap().to_string();
    let db = ctx.t.db.clone();
    let message: uuid::Uuid = id.parse().unwrap();
    assert!(
        eventually(40, || {
            let db = db.clone();
            async move {
                storage::notifications::queue::status(&db, message)
                    .await
                    .unwrap()
                    .is_some_and(|s| s.0.as_str() == "FAILED")
            }
        })
        .await
    );
    let log = log_of(&ctx, &id).await;
    assert_eq!(log.len(), 2);
    assert_eq!(log[1].0, "FAILED");
}

#[tokio::test]
async fn opt_outs_are_respected_and_skips_are_logged() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 9001).await;
    let r = ctx
        .put(
            "/api/v1/notifications/preferences",
            Some(&ann.access),
            json!({"reminders": false, "changes": true, "waitingList": true, "receipts": false, "language": "en"}),
        )
        .await;
    assert_eq!(r.status, 200);
    let reminder = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "event.reminder"}),
        None,
    )
    .await;
    assert_eq!(
        (
            reminder.status,
            reminder.body["status"].as_str(),
            reminder.body["reason"].as_str()
        ),
        (202, Some("SKIPPED"), Some("opted_out"))
    );
    let receipt = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "payment.receipt"}),
        None,
    )
    .await;
    assert_eq!(receipt.body["reason"], "opted_out");
    // A service notice cannot be switched off; it comes in the chosen language.
    let notice = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "registration.cancelled", "variables": {"eventTitle": "Gig"}}),
        None,
    )
    .await;
    assert_eq!(notice.body["status"], "QUEUED");
    let got = tg.wait_for(9001, 2, 10).await;
    assert!(
        got[1]
            .text
            .contains("your registration for *Gig* was cancelled"),
        "{}",
        got[1].text
    );
    assert_eq!(
        log_of(&ctx, reminder.body["id"].as_str().unwrap()).await,
        vec![("SKIPPED".to_string(), Some("opted_out".to_string()))]
    );

    // Nobody linked: skipped and logged.
    let bob = ctx.user().await;
    let r = send_direct(
        &ctx,
        json!({"userId": bob.user_id, "template": "event.cancelled"}),
        None,
    )
    .await;
    assert_eq!(
        (r.body["status"].as_str(), r.body["reason"].as_str()),
        (Some("SKIPPED"), Some("no_linked_chat"))
    );
    assert_eq!(
        log_of(&ctx, r.body["id"].as_str().unwrap()).await,
        vec![("SKIPPED".to_string(), Some("no_linked_chat".to_string()))]
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        tg.sends().len(),
        2,
        "only the welcome and the notice went out"
    );
}

#[tokio::test]
async fn without_a_token_the_bot_is_off_and_every_send_is_skipped() {
    let ctx = Ctx::with_config(|c| c.messenger.bot_token = None).await;
    let ann = ctx.user().await;
    let r = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "event.cancelled"}),
        None,
    )
    .await;
    assert_eq!(
        (r.status, r.body["reason"].as_str()),
        (202, Some("bot_disabled"))
    );
    // The welcome on sign-up was skipped the same way.
    let owner = ctx.t.owner().await;
    let db = &owner;
    assert!(
        eventually(5, || async {
            db.query_one(
                "SELECT count(*) FROM notification_service.send_log WHERE user_id = $1::text::uuid AND kind = 'user.welcome' AND reason = 'bot_disabled'",
                &[&ann.user_id],
            )
            .await
            .unwrap()
            .get::<_, i64>(0)
                == 1
        })
        .await
    );
    // And no link can be handed out.
    assert_eq!(
        ctx.post_empty("/api/v1/notifications/link", Some(&ann.access))
            .await
            .status,
        422
    );
}

#[tokio::test]
async fn the_send_endpoint_is_internal_refuses_bad_input_and_replays_keys() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 9101).await;

    // The gateway does not expose it.
    let r = ctx
        .post(
            "/api/v1/notifications/send",
            Some(&ann.access),
            json!({"userId": ann.user_id, "template": "event.cancelled"}),
        )
        .await;
    assert_eq!(r.status, 404);

    let bad = [
        (json!({"template": "event.cancelled"}), "userId"),
        (
            json!({"userId": 5, "template": "event.cancelled"}),
            "userId",
        ),
        (
            json!({"userId": "not-a-uuid", "template": "event.cancelled"}),
            "userId",
        ),
        (json!({"userId": ann.user_id}), "template"),
        (
            json!({"userId": ann.user_id, "template": "sms.spam"}),
            "template",
        ),
        (
            json!({"userId": ann.user_id, "template": "event.cancelled", "variables": {"evil": "x"}}),
            "variables.evil",
        ),
        (
            json!({"userId": ann.user_id, "template": "event.cancelled", "variables": {"eventTitle": "x".repeat(1001)}}),
            "variables.eventTitle",
        ),
        (
            json!({"userId": ann.user_id, "template": "event.cancelled", "variables": {"eventTitle": 5}}),
            "variables.eventTitle",
        ),
        (
            json!({"userId": ann.user_id, "template": "event.cancelled", "channel": "sms"}),
            "channel",
        ),
    ];
    for (body, field) in bad {
        let r = send_direct(&ctx, body.clone(), None).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body["details"][field].is_string(), "{body}: {}", r.body);
    }
    let url = format!(
        "{}/api/v1/notifications/send",
        ctx.service_url(Service::Notifications)
    );
    let as_service =
        || crate::support::signed(&ctx.http, reqwest::Method::POST, &url, Service::Events, &[]);
    let r = send(as_service().header("content-type", "text/plain").body("hi")).await;
    assert_eq!(r.status, 415);
    let r = send(
        as_service()
            .header("content-type", "application/json")
            .body("{\"userId\":"),
    )
    .await;
    assert_eq!(r.status, 400);
    let huge = json!({"userId": ann.user_id, "template": "event.cancelled", "variables": {"eventTitle": "x".repeat(2 << 20)}});
    assert_eq!(send_direct(&ctx, huge, None).await.status, 413);
    let r = send_direct(
        &ctx,
        json!({"userId": ann.user_id, "template": "event.cancelled"}),
        Some("nope"),
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(tg.sends().len(), 1, "refused requests sent nothing");

    // The same key twice: one message, the second answer names it.
    let key = uuid::Uuid::new_v4().to_string();
    let body = json!({"userId": ann.user_id, "template": "event.cancelled", "variables": {"eventTitle": "Gig"}});
    let first = send_direct(&ctx, body.clone(), Some(&key)).await;
    let again = send_direct(&ctx, body, Some(&key)).await;
    assert_eq!((first.status, again.status), (202, 200));
    assert_eq!(first.body["id"], again.body["id"]);
    tg.wait_for(9101, 2, 10).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        tg.delivered_to(9101).len(),
        2,
        "the welcome and one message"
    );
}

/// A published event with the given ticket type: (event id, ticket type id).
async fn event_with(
    ctx: &Ctx,
    owner: &crate::identity::Session,
    ticket: serde_json::Value,
) -> (String, String) {
    let e = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Expo", "startsAt": (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339()}),
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
    ctx.post_empty(
        &format!("/api/v1/events/{event}/publish"),
        Some(&owner.access),
    )
    .await;
    (event, t.body["id"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn each_consumed_event_reaches_the_person_it_concerns() {
    let (ctx, tg) = with_bot(|c| c.messenger.chat_interval_ms = 100).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (ann, bob) = (ctx.user().await, ctx.user().await);
    linked(&ctx, &tg, &ann, 9201).await;
    linked(&ctx, &tg, &bob, 9202).await;
    for user in [&ann, &bob] {
        ctx.put(
            "/api/v1/notifications/preferences",
            Some(&user.access),
            json!({"reminders": true, "changes": true, "waitingList": true, "receipts": true, "language": "en"}),
        )
        .await;
    }

    // A paid seat held 15 minutes: Ann's runs out (reservation.expired).
    let (paid_event, paid) =
        event_with(&ctx, &owner, json!({"name": "Paid", "quantity": 5, "priceCents": 150000, "currency": "RUB", "reservationMinutes": 15})).await;
    let held = register(&ctx, &ann, &paid_event, &paid).await;
    assert_eq!(held["status"], "RESERVED");
    let got = tg.wait_for(9201, 2, 10).await;
    assert!(
        got[1].text.contains("your seat is held until"),
        "{}",
        got[1].text
    );
    ctx.clock.advance(chrono::Duration::minutes(16));
    storage::events::registrations::expire_due(
        &ctx.t.db,
        &ctx.ticketing().ownership().fence(),
        None,
        ctx.clock.now(),
    )
    .await
    .unwrap();
    let got = tg.wait_for(9201, 3, 10).await;
    assert!(
        got[2].text.contains("expired before payment"),
        "{}",
        got[2].text
    );

    // Bob pays (payment.completed from the payment provider): a receipt with the sum, then
    // the ticket.
    let bobs = register(&ctx, &bob, &paid_event, &paid).await;
    tg.wait_for(9202, 2, 10).await;
    ctx.broker()
        .publish(&[domain::envelope::Envelope::new(
            "payment.completed",
            None,
            None,
            json!({"registrationId": bobs["id"], "amountCents": 150000, "currency": "RUB"}),
        )])
        .await
        .unwrap();
    let got = tg.wait_for(9202, 4, 10).await;
    assert!(
        got[2].text.contains("Payment received: *Expo*") && got[2].text.contains("1500\\.00 RUB"),
        "{}",
        got[2].text
    );
    assert_eq!(got[3].method, "sendPhoto", "{}", got[3].text);

    // The organizer moves the event (event.changed), and its reminder falls due (event.reminder).
    let r = ctx
        .put(
            &format!("/api/v1/events/{paid_event}"),
            Some(&owner.access),
            json!({"title": "Expo", "startsAt": (chrono::Utc::now() + chrono::Duration::days(2)).to_rfc3339()}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let got = tg.wait_for(9202, 5, 10).await;
    assert!(
        got[4].text.contains("*Expo* has changed"),
        "{}",
        got[4].text
    );
    ctx.clock.advance(chrono::Duration::hours(47));
    ctx.remind_due().await;
    let got = tg.wait_for(9202, 6, 10).await;
    let code = bobs["confirmationCode"].as_str().unwrap();
    assert!(
        got[5].text.starts_with("*Expo* starts ") && got[5].text.contains(code),
        "{}",
        got[5].text
    );
    assert_eq!(
        tg.delivered_to(9201).len(),
        3,
        "Ann's seat expired: no change or reminder"
    );

    // A freed seat goes to the first on the waiting list (waitlist.available).
    let (full_event, one) = event_with(&ctx, &owner, json!({"name": "One", "quantity": 1})).await;
    let bobs_seat = register(&ctx, &bob, &full_event, &one).await;
    let joined = ctx
        .post(
            &format!("/api/v1/events/{full_event}/waitlist"),
            Some(&ann.access),
            json!({"ticketTypeId": one}),
        )
        .await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    ctx.delete(
        &format!(
            "/api/v1/registrations/{}",
            bobs_seat["id"].as_str().unwrap()
        ),
        Some(&bob.access),
    )
    .await;
    let got = tg.wait_for(9201, 4, 10).await;
    assert!(
        got[3].text.contains("a seat for *Expo* is free")
            && got[3].text.contains("held for you until ")
            && got[3].text.contains(&full_event.replace('-', "\\-")),
        "{}",
        got[3].text
    );
    assert!(tg.sends().iter().all(|c| c.status == 200));
}
