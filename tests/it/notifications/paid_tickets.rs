//! A registration awaiting payment is told its seat is held (until when, on the event's
//! clock), without the door code or the QR ticket; the payment sends the receipt and the
//! ticket, once; a refund is told when the money is back.

use super::{event_in, linked, prefer, register, with_bot};
use chrono::{DateTime, Duration, Utc};
use domain::clock::Clock;
use domain::envelope::Envelope;
use serde_json::json;

#[tokio::test]
async fn a_reserved_seat_waits_for_payment_and_the_payment_sends_the_ticket_once() {
    let (ctx, tg) = with_bot(|c| {
        c.messenger.chat_interval_ms = 100;
        c.http.public_url = "https://tickets.example".into();
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let start = ctx.clock.now() + Duration::days(10);
    let (event, paid) = event_in(
        &ctx,
        &owner,
        "Opera",
        "Asia/Vladivostok",
        start,
        json!({"name": "Stalls", "quantity": 5, "priceCents": 150000, "currency": "RUB",
               "reservationMinutes": 30}),
    )
    .await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 9401).await;
    prefer(&ctx, &ann, "en", true).await;

    let held = register(&ctx, &ann, &event, &paid).await;
    assert_eq!(held["status"], "RESERVED");
    let code = held["confirmationCode"].as_str().unwrap().to_string();
    let until: DateTime<Utc> = held["expiresAt"].as_str().unwrap().parse().unwrap();
    let got = tg.wait_for(9401, 2, 10).await;
    let notice = &got[1];
    assert_eq!(notice.method, "sendMessage", "no QR photo before payment");
    assert!(notice.photo.is_none());
    let local_until = (until + Duration::hours(10)).format("%-d %b %Y, %H:%M");
    assert!(
        notice
            .text
            .contains(&format!("your seat is held until {local_until} UTC\\+10"))
            && notice.text.contains("Pay to confirm"),
        "{}",
        notice.text
    );
    assert!(
        !notice.text.contains(&code),
        "no door code: {}",
        notice.text
    );
    // Under it, the way to pay: the ticket's page, whose Pay button opens the provider.
    assert_eq!(
        notice.buttons,
        vec![(
            "Pay".to_string(),
            format!(
                "https://tickets.example/me/tickets/{}",
                held["id"].as_str().unwrap()
            )
        )]
    );
    // Nor does /tickets show the code of an unpaid seat.
    tg.says(9401, "/tickets");
    let got = tg.wait_for(9401, 3, 10).await;
    assert!(!got[2].text.contains(&code), "{}", got[2].text);

    // The payment provider confirms: the receipt, then the ticket with its QR code.
    let payment = Envelope::new(
        "payment.completed",
        None,
        None,
        json!({"registrationId": held["id"], "amountCents": 150000, "currency": "RUB"}),
    );
    ctx.broker()
        .publish(std::slice::from_ref(&payment))
        .await
        .unwrap();
    let got = tg.wait_for(9401, 5, 10).await;
    assert_eq!(got.len(), 5, "receipt and ticket");
    assert!(
        got[3].text.contains("Payment received: *Opera*") && got[3].text.contains("1500\\.00 RUB"),
        "{}",
        got[3].text
    );
    let ticket = &got[4];
    assert_eq!(ticket.method, "sendPhoto");
    assert!(
        ticket.text.contains(&format!("`{code}`")) && ticket.text.contains("UTC\\+10"),
        "{}",
        ticket.text
    );
    assert_eq!(
        ticket.photo.as_deref(),
        Some(messenger::ticket::qr_png(&code).unwrap().as_slice())
    );

    // The same payment event again (a redelivery): nothing more.
    ctx.broker()
        .publish(std::slice::from_ref(&payment))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(
        tg.delivered_to(9401).len(),
        5,
        "no second ticket or receipt"
    );
    let db = ctx.t.owner().await;
    let tickets: i64 = db
        .query_one(
            "SELECT count(*) FROM notification_service.messages
             WHERE user_id = $1::text::uuid AND kind = 'registration.confirmed'",
            &[&ann.user_id],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(tickets, 1, "one ticket per registration");
}

#[tokio::test]
async fn a_pending_seat_is_held_without_a_deadline() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid) = event_in(
        &ctx,
        &owner,
        "Ballet",
        "Europe/Moscow",
        ctx.clock.now() + Duration::days(10),
        json!({"name": "Box", "quantity": 5, "priceCents": 90000, "currency": "RUB"}),
    )
    .await;
    let bob = ctx.user().await;
    linked(&ctx, &tg, &bob, 9402).await;
    let pending = register(&ctx, &bob, &event, &paid).await;
    assert_eq!(pending["status"], "PENDING");
    let got = tg.wait_for(9402, 2, 10).await;
    assert_eq!(got[1].method, "sendMessage");
    assert!(
        got[1].buttons.is_empty(),
        "no button to a local address Telegram would refuse"
    );
    assert!(
        got[1].text.contains("место за вами до оплаты")
            && got[1].text.contains("MSK")
            && !got[1]
                .text
                .contains(pending["confirmationCode"].as_str().unwrap()),
        "{}",
        got[1].text
    );
}

#[tokio::test]
async fn a_reminder_to_an_unpaid_seat_carries_no_door_code() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid) = event_in(
        &ctx,
        &owner,
        "Opera",
        "Europe/Moscow",
        ctx.clock.now() + Duration::days(10),
        json!({"name": "Stalls", "quantity": 5, "priceCents": 90000, "currency": "RUB"}),
    )
    .await;
    let cid = ctx.user().await;
    linked(&ctx, &tg, &cid, 9403).await;
    let pending = register(&ctx, &cid, &event, &paid).await;
    let code = pending["confirmationCode"].as_str().unwrap().to_string();
    assert_eq!(
        tg.wait_for(9403, 2, 10).await.len(),
        2,
        "welcome and held seat"
    );
    ctx.clock.advance(Duration::days(9) + Duration::hours(12));
    ctx.remind_due().await;
    let got = tg.wait_for(9403, 3, 10).await;
    assert_eq!(got.len(), 3, "the reminder");
    assert!(
        got[2].text.contains("Opera") && !got[2].text.contains(&code),
        "a seat awaiting payment is not a way in: {}",
        got[2].text
    );
}

#[tokio::test]
async fn a_refund_is_told_when_the_money_is_back() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid) = event_in(
        &ctx,
        &owner,
        "Recital",
        "Europe/Moscow",
        ctx.clock.now() + Duration::days(10),
        json!({"name": "Hall", "quantity": 5, "priceCents": 250000, "currency": "RUB",
               "reservationMinutes": 30}),
    )
    .await;
    let cid = ctx.user().await;
    linked(&ctx, &tg, &cid, 9403).await;
    prefer(&ctx, &cid, "en", true).await;
    let held = register(&ctx, &cid, &event, &paid).await;
    let id = held["id"].as_str().unwrap().to_string();
    let open = crate::payments::checkout(&ctx, &cid, &id).await;
    let url = open.body["paymentUrl"].as_str().unwrap();
    assert_eq!(crate::payments::press(&ctx, url, "pay").await.status(), 303);
    // Held, receipt, ticket.
    let got = tg.wait_for(9403, 4, 10).await;
    assert_eq!(got.len(), 4, "{got:?}");
    let refund = ctx
        .post_empty(
            &format!("/api/v1/registrations/{id}/refund"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(refund.status, 201, "{}", refund.body);
    let got = tg.wait_for(9403, 6, 10).await;
    let texts: Vec<&str> = got[4..].iter().map(|c| c.text.as_str()).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("2500\\.00 RUB for *Recital* has been returned to you")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("cancelled")),
        "and the registration's cancellation: {texts:?}"
    );
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    assert_eq!(tg.delivered_to(9403).len(), 6, "told once");
}
