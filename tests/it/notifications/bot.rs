//! The bot against the fake Bot API: /start with a link token or an invite code, /help,
//! /tickets.

use super::{free_event, known, link_token, linked, register, with_bot};
use chrono::Duration;
use serde_json::json;

#[tokio::test]
async fn start_links_a_chat_once_and_other_commands_answer() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let ann = ctx.user().await;

    // The welcome comes in Ann's language (Russian by default) with her name, once the
    // notification service has learnt it from user.registered (before that, the bot greets
    // the chat by the messenger's own name: see delivery.rs).
    known(&ctx, &ann).await;
    let token = link_token(&ctx, &ann).await;
    tg.says(5001, &format!("/start {token}"));
    let welcome = tg.wait_for(5001, 1, 10).await;
    assert_eq!(welcome.len(), 1);
    assert_eq!(welcome[0].parse_mode, "MarkdownV2");
    assert!(
        welcome[0].text.contains("Test") && welcome[0].text.contains("привязан"),
        "{}",
        welcome[0].text
    );

    // The same token cannot link another chat.
    tg.says(5002, &format!("/start {token}"));
    let used = tg.wait_for(5002, 1, 10).await;
    assert!(used[0].text.contains("already used"), "{}", used[0].text);

    // An unlinked chat is told to link before it can use an invite, and gets help and no tickets.
    tg.says(5003, "/start SOMECODE123");
    assert!(
        tg.wait_for(5003, 1, 10).await[0]
            .text
            .contains("Link this chat to your account first")
    );
    tg.says(5003, "/help@bilet_test_bot");
    assert!(tg.wait_for(5003, 2, 10).await[1].text.contains("/tickets"));
    tg.says(5003, "/tickets");
    assert!(
        tg.wait_for(5003, 3, 10).await[2]
            .text
            .contains("not linked")
    );
    tg.says(5003, "what?");
    assert!(
        tg.wait_for(5003, 4, 10).await[3]
            .text
            .contains("did not get that")
    );

    // A linked chat with nothing booked.
    tg.says(5001, "/tickets");
    assert!(
        tg.wait_for(5001, 2, 10).await[1]
            .text
            .contains("Предстоящих билетов нет")
    );

    // A link token past its 15 minutes.
    let bob = ctx.user().await;
    let late = link_token(&ctx, &bob).await;
    ctx.clock.advance(Duration::minutes(16));
    tg.says(5004, &format!("/start {late}"));
    assert!(tg.wait_for(5004, 1, 10).await[0].text.contains("expired"));
    let bob_id = domain::ids::UserId(bob.user_id.parse().unwrap());
    assert_eq!(
        storage::notifications::links::chat_of(&ctx.t.db, bob_id)
            .await
            .unwrap(),
        None
    );
    // Every answer was accepted by the (MarkdownV2-checking) fake.
    assert!(tg.sends().iter().all(|c| c.status == 200));
}

#[tokio::test]
async fn invites_are_accepted_from_the_bot_for_the_linked_account() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 5101).await;
    ctx.put(
        "/api/v1/notifications/preferences",
        Some(&ann.access),
        json!({"reminders": true, "changes": true, "waitingList": true, "receipts": true, "language": "en"}),
    )
    .await;

    let invite = ctx
        .post_empty(
            &format!("/api/v1/organizations/{org}/invite"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(invite.status, 201, "{}", invite.body);
    let code = invite.body["inviteCode"].as_str().unwrap().to_string();
    tg.says(5101, &format!("/start {code}"));
    let joined = tg.wait_for(5101, 2, 10).await;
    assert!(
        joined[1].text.contains("Invite accepted: *Org*"),
        "{}",
        joined[1].text
    );
    let orgs = ctx.get("/api/v1/organizations", Some(&ann.access)).await;
    assert!(
        orgs.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["id"] == org.as_str()),
        "Ann is a member now: {}",
        orgs.body
    );
    // Used once.
    tg.says(5101, &format!("/start {code}"));
    assert!(
        tg.wait_for(5101, 3, 10).await[2]
            .text
            .contains("cannot be accepted")
    );

    // A group's invite code works the same way.
    let group = ctx
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&owner.access),
            json!({"name": "Crew_1"}),
        )
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let gid = group.body["id"].as_str().unwrap();
    let gi = ctx
        .post_empty(&format!("/api/v1/groups/{gid}/invite"), Some(&owner.access))
        .await;
    let gcode = gi.body["inviteCode"].as_str().unwrap();
    tg.says(5101, &format!("/start {gcode}"));
    let got = tg.wait_for(5101, 4, 10).await;
    assert!(got[3].text.contains("*Crew\\_1*"), "{}", got[3].text);
    // A code nobody issued.
    tg.says(5101, "/start NOSUCHCODE42");
    assert!(tg.wait_for(5101, 5, 10).await[4].text.contains("not found"));
}

#[tokio::test]
async fn tickets_lists_upcoming_registrations_with_their_codes() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let ann = ctx.user().await;
    linked(&ctx, &tg, &ann, 5201).await;
    let (event, ticket_type) = free_event(&ctx, &owner, "Jazz. Night!").await;
    let reg = register(&ctx, &ann, &event, &ticket_type).await;
    let code = reg["confirmationCode"].as_str().unwrap();
    // The ticket arrives first; then the list.
    tg.wait_for(5201, 2, 10).await;
    tg.says(5201, "/tickets");
    let list = tg.wait_for(5201, 3, 10).await;
    let text = &list[2].text;
    assert!(
        text.contains("*Jazz\\. Night\\!*") && text.contains(&format!("`{code}`")),
        "{text}"
    );
}

#[tokio::test]
async fn a_messenger_sign_in_links_its_own_chat_and_is_welcomed_there() {
    let (ctx, tg) = with_bot(|_| {}).await;
    let mut fields = std::collections::BTreeMap::new();
    fields.insert("id".to_string(), "5301".to_string());
    fields.insert("first_name".to_string(), "Lena_*".to_string());
    fields.insert(
        "auth_date".to_string(),
        domain::clock::Clock::now(ctx.clock.as_ref())
            .timestamp()
            .to_string(),
    );
    let hash = domain::identity::messenger::sign_widget(&fields, crate::identity::BOT_TOKEN);
    fields.insert("hash".to_string(), hash);
    let r = ctx
        .post(
            "/api/v1/auth/messenger",
            None,
            serde_json::to_value(&fields).unwrap(),
        )
        .await;
    assert!(r.status == 200 || r.status == 201, "{}", r.body);
    // Telegram's private chat with a user has the user's id: the welcome goes there at once.
    let got = tg.wait_for(5301, 1, 10).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].text.contains("Lena\\_\\*"), "{}", got[0].text);
    tg.says(5301, "/tickets");
    assert!(
        tg.wait_for(5301, 2, 10).await[1]
            .text
            .contains("Предстоящих билетов нет")
    );
}

#[tokio::test]
async fn a_send_only_node_does_not_poll_but_still_sends() {
    let (ctx, tg) = with_bot(|c| c.messenger.poll_updates = false).await;
    let ann = ctx.user().await;
    tg.says(5401, "/help");
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(tg.count("getUpdates"), 0, "another node answers the chats");
    assert!(tg.sends().is_empty());
    // Messages still go out to linked chats (linked here as the polling node would).
    let token = link_token(&ctx, &ann).await;
    let user = domain::ids::UserId(ann.user_id.parse().unwrap());
    storage::notifications::links::redeem(&ctx.t.db, &token, 5401, chrono::Utc::now())
        .await
        .unwrap();
    let r = super::send_direct(
        &ctx,
        json!({"userId": user.to_string(), "template": "event.cancelled", "variables": {"eventTitle": "Gig"}}),
        None,
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(tg.wait_for(5401, 1, 10).await.len(), 1);
}
