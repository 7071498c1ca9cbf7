//! A waiting-list offer holds a seat for 24 hours, so it always reaches the person: the
//! waitingList switch does not silence it, and without a linked chat it goes by mail (the
//! address given for the list, else the account's), never both and never twice.

use super::{event_in, linked, prefer, register, with_bot};
use crate::identity::{Ctx, Session, mails_to};
use crate::support::eventually;
use chrono::{DateTime, Duration, Utc};
use domain::clock::Clock;
use serde_json::json;

/// A published one-type event of `seats` seats in Vladivostok, all taken by fresh users:
/// (event id, ticket type id, their registration ids and sessions).
async fn full_event(ctx: &Ctx, seats: usize) -> (String, String, Vec<(String, Session)>) {
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, one) = event_in(
        ctx,
        &owner,
        "Expo",
        "Asia/Vladivostok",
        ctx.clock.now() + Duration::days(5),
        json!({"name": "One", "quantity": seats}),
    )
    .await;
    let mut holders = Vec::new();
    for _ in 0..seats {
        let user = ctx.user().await;
        let reg = register(ctx, &user, &event, &one).await;
        holders.push((reg["id"].as_str().unwrap().to_string(), user));
    }
    (event, one, holders)
}

async fn join(ctx: &Ctx, user: &Session, event: &str, ticket_type: &str, email: Option<&str>) {
    let mut body = json!({"ticketTypeId": ticket_type});
    if let Some(email) = email {
        body["email"] = json!(email);
    }
    let r = ctx
        .post(
            &format!("/api/v1/events/{event}/waitlist"),
            Some(&user.access),
            body,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
}

async fn cancel(ctx: &Ctx, registration: &str, user: &Session) {
    let r = ctx
        .delete(
            &format!("/api/v1/registrations/{registration}"),
            Some(&user.access),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
}

/// The deadline of the offer made to `user`, on Vladivostok's clock as the English messages
/// write it.
fn offer_deadline(ctx: &Ctx, user: &Session) -> String {
    let offer = ctx
        .events
        .of("waitlist.available")
        .into_iter()
        .find(|e| e.data.value()["userId"] == user.user_id.as_str())
        .expect("an offer was published");
    let until: DateTime<Utc> = offer.data.value()["expiresAt"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    format!(
        "{} UTC+10",
        (until + Duration::hours(10)).format("%-d %b %Y, %H:%M")
    )
}

#[tokio::test]
async fn an_offer_reaches_a_person_who_muted_waiting_list_notices() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let (event, one, holders) = full_event(&ctx, 1).await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 9501).await;
    prefer(&ctx, &ann, "en", false).await;
    join(&ctx, &ann, &event, &one, None).await;
    cancel(&ctx, &holders[0].0, &holders[0].1).await;

    let got = tg.wait_for(9501, 2, 10).await;
    assert_eq!(got.len(), 2, "the offer came despite the switch");
    let deadline = offer_deadline(&ctx, &ann).replace('+', "\\+");
    assert!(
        got[1].text.contains("a seat for *Expo* is free")
            && got[1]
                .text
                .contains(&format!("held for you until {deadline}")),
        "{}",
        got[1].text
    );
}

/// The offer mails sent to `address`, oldest first.
fn offers_to(data_dir: &std::path::Path, address: &str) -> Vec<String> {
    mails_to(data_dir, address)
        .into_iter()
        .filter(|m| m.contains("A seat is free: Expo"))
        .collect()
}

#[tokio::test]
async fn an_offer_to_a_person_without_a_chat_arrives_by_mail_once() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let (event, one, holders) = full_event(&ctx, 2).await;
    // Ann gives an address for the list; Dan gives none, so his account's is used.
    let (ann, dan) = (ctx.user().await, ctx.user().await);
    let ann_list = format!("list{}@example.com", uuid::Uuid::now_v7().simple());
    for user in [&ann, &dan] {
        prefer(&ctx, user, "en", true).await;
    }
    join(&ctx, &ann, &event, &one, Some(&ann_list)).await;
    join(&ctx, &dan, &event, &one, None).await;
    for (registration, user) in &holders {
        cancel(&ctx, registration, user).await;
    }

    let data_dir = ctx.t.config.data_dir.clone();
    for (user, address) in [(&ann, ann_list.as_str()), (&dan, dan.email.as_str())] {
        // Sign-up mailed the account a verification first: look for the offer.
        let offer_mails = || offers_to(&data_dir, address);
        assert!(
            eventually(15, || async { !offer_mails().is_empty() }).await,
            "an offer mail to {address}"
        );
        let mail = offer_mails().remove(0);
        assert!(
            mail.contains(&format!(
                "held for you until {}",
                offer_deadline(&ctx, user)
            )) && mail.contains(&format!("/api/v1/events/{event}")),
            "{mail}"
        );
        // The mail goes out while the consumer's transaction is open; its record commits
        // right after.
        let db = ctx.t.owner().await;
        let rows = || async {
            db.query(
                "SELECT status, channel FROM notification_service.messages
                 WHERE user_id = $1::text::uuid AND kind = 'waitlist.available'",
                &[&user.user_id],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
            .collect::<Vec<_>>()
        };
        assert!(eventually(10, || async { !rows().await.is_empty() }).await);
        assert_eq!(
            rows().await,
            vec![("SENT".to_string(), "email".to_string())]
        );
    }
    // A redelivered offer sends no second mail.
    let offer = ctx
        .events
        .of("waitlist.available")
        .into_iter()
        .find(|e| e.data.value()["userId"] == ann.user_id.as_str())
        .unwrap();
    ctx.broker()
        .publish(std::slice::from_ref(&offer))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(offers_to(&data_dir, &ann_list).len(), 1, "one mail");
    assert!(tg.sends().is_empty(), "nothing went to a chat");
}
