//! Templates, notification settings and the deep link that binds a chat.

use crate::identity::Ctx;
use crate::support::send;
use serde_json::json;

#[tokio::test]
async fn templates_are_listed_with_their_variables_and_switches() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    let r = ctx
        .get("/api/v1/notifications/templates", Some(&user.access))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let total = domain::notifications::Kind::ALL.len();
    assert_eq!(r.body["totalElements"], total, "{}", r.body);
    assert_eq!(r.body["page"], 0);
    assert_eq!(r.body["size"], 20);
    assert_eq!(r.body["hasNext"], false);
    assert_eq!(r.body["hasPrevious"], false);
    let list = r.body["data"].as_array().unwrap();
    assert_eq!(list.len(), total);
    let names: Vec<&str> = list.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted by name");
    let reminder = list.iter().find(|t| t["name"] == "event.reminder").unwrap();
    assert_eq!(reminder["optOut"], "reminders");
    assert!(
        reminder["variables"]
            .as_array()
            .unwrap()
            .contains(&json!("confirmationCode"))
    );
    assert!(
        reminder["texts"]["ru"]
            .as_str()
            .unwrap()
            .contains("{{eventTitle}}")
    );
    let cancelled = list
        .iter()
        .find(|t| t["name"] == "registration.cancelled")
        .unwrap();
    assert!(
        cancelled["optOut"].is_null(),
        "a service notice cannot be switched off"
    );
    assert_eq!(
        ctx.get("/api/v1/notifications/templates", None)
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn templates_are_paged_like_every_list() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    let page = |query: &'static str| {
        let (ctx, token) = (&ctx, user.access.clone());
        async move {
            ctx.get(
                &format!("/api/v1/notifications/templates{query}"),
                Some(&token),
            )
            .await
        }
    };
    let total = domain::notifications::Kind::ALL.len() as u64;
    let first = page("?size=2").await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(first.body["size"], 2);
    assert_eq!(first.body["totalElements"], total);
    assert_eq!(first.body["totalPages"], total.div_ceil(2));
    assert_eq!(first.body["hasNext"], true);
    assert_eq!(first.body["hasPrevious"], false);
    let second = page("?size=2&page=1").await;
    assert_eq!(second.body["page"], 1);
    assert_eq!(second.body["hasPrevious"], true);
    assert_ne!(second.body["data"][0], first.body["data"][0]);
    assert_ne!(second.body["data"][0], first.body["data"][1]);
    let last = page("?size=2&page=100").await;
    assert_eq!(last.status, 200);
    assert_eq!(last.body["data"], json!([]));
    assert_eq!(last.body["hasNext"], false);
    let backwards = page("?sort=name,desc").await;
    let names: Vec<String> = backwards.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(names, sorted);

    for (query, field) in [
        ("?page=abc", "page"),
        ("?size=two", "size"),
        ("?size=0", "size"),
        ("?size=101", "size"),
        ("?page=-1", "page"),
        ("?sort=optOut", "sort"),
    ] {
        let r = page(query).await;
        assert_eq!(r.status, 400, "{query}: {}", r.body);
        assert_eq!(r.body["code"], "validation_error", "{query}: {}", r.body);
        assert!(r.body["details"][field].is_string(), "{query}: {}", r.body);
    }
}

#[tokio::test]
async fn preferences_default_on_and_change_per_user() {
    let ctx = Ctx::new().await;
    let (ann, bob) = (ctx.user().await, ctx.user().await);
    let path = "/api/v1/notifications/preferences";
    let defaults = json!({"reminders": true, "changes": true, "waitingList": true, "receipts": true, "language": "ru"});
    assert_eq!(ctx.get(path, Some(&ann.access)).await.body, defaults);
    let quiet = json!({"reminders": false, "changes": true, "waitingList": false, "receipts": true, "language": "en"});
    let put = |token: String, body: serde_json::Value| {
        let ctx = &ctx;
        async move {
            send(
                ctx.http
                    .put(format!("{}{path}", ctx.base))
                    .bearer_auth(token)
                    .header("Accept-Language", "en")
                    .json(&body),
            )
            .await
        }
    };
    let r = put(ann.access.clone(), quiet.clone()).await;
    assert_eq!((r.status, r.body.clone()), (200, quiet.clone()));
    assert_eq!(ctx.get(path, Some(&ann.access)).await.body, quiet);
    assert_eq!(
        ctx.get(path, Some(&bob.access)).await.body,
        defaults,
        "settings are per user"
    );

    let mut missing = quiet.clone();
    missing.as_object_mut().unwrap().remove("receipts");
    let r = put(ann.access.clone(), missing).await;
    assert_eq!(r.status, 400);
    assert!(r.body["details"]["receipts"].is_string(), "{}", r.body);
    let mut wrong = quiet.clone();
    wrong["reminders"] = json!("no");
    assert_eq!(put(ann.access.clone(), wrong).await.status, 400);
    let mut french = quiet.clone();
    french["language"] = json!("fr");
    assert_eq!(put(ann.access.clone(), french).await.status, 400);
    let mut extra = quiet.clone();
    extra["sms"] = json!(true);
    assert_eq!(put(ann.access.clone(), extra).await.status, 400);
    assert_eq!(
        ctx.get(path, Some(&ann.access)).await.body,
        quiet,
        "refused changes change nothing"
    );
    assert_eq!(ctx.get(path, None).await.status, 401);
}

#[tokio::test]
async fn a_deep_link_binds_one_chat_once_before_it_expires() {
    use chrono::Duration;
    use domain::clock::Clock;
    use storage::notifications::links::{self, Redeemed};
    let ctx = Ctx::new().await;
    let (ann, bob) = (ctx.user().await, ctx.user().await);
    let link = |token: String| {
        let ctx = &ctx;
        async move {
            send(
                ctx.http
                    .post(format!("{}/api/v1/notifications/link", ctx.base))
                    .bearer_auth(token),
            )
            .await
        }
    };
    let r = link(ann.access.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let url = r.body["url"].as_str().unwrap().to_string();
    let token = url
        .strip_prefix("https://t.me/bilet_test_bot?start=")
        .unwrap_or_else(|| panic!("{url}"))
        .to_string();
    assert!(
        token.len() >= 32
            && token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    );

    // What the bot does on `/start <token>` in chat 42.
    let now = ctx.clock.now();
    let ann_id = domain::ids::UserId(ann.user_id.parse().unwrap());
    assert_eq!(
        links::redeem(&ctx.t.db, &token, 42, now).await.unwrap(),
        Redeemed::Linked(ann_id)
    );
    assert_eq!(links::chat_of(&ctx.t.db, ann_id).await.unwrap(), Some(42));
    assert_eq!(
        links::redeem(&ctx.t.db, &token, 43, now).await.unwrap(),
        Redeemed::Used,
        "once"
    );
    assert_eq!(
        links::redeem(&ctx.t.db, "no-such-token", 43, now)
            .await
            .unwrap(),
        Redeemed::Unknown
    );

    let late = link(bob.access.clone()).await.body["url"]
        .as_str()
        .unwrap()
        .rsplit('=')
        .next()
        .unwrap()
        .to_string();
    ctx.clock.advance(Duration::minutes(16));
    assert_eq!(
        links::redeem(&ctx.t.db, &late, 42, ctx.clock.now())
            .await
            .unwrap(),
        Redeemed::Expired
    );
    // A fresh link from Bob opened in Ann's chat moves the chat to Bob.
    let fresh = link(bob.access.clone()).await.body["url"]
        .as_str()
        .unwrap()
        .rsplit('=')
        .next()
        .unwrap()
        .to_string();
    let bob_id = domain::ids::UserId(bob.user_id.parse().unwrap());
    assert_eq!(
        links::redeem(&ctx.t.db, &fresh, 42, ctx.clock.now())
            .await
            .unwrap(),
        Redeemed::Linked(bob_id)
    );
    assert_eq!(links::chat_of(&ctx.t.db, bob_id).await.unwrap(), Some(42));
    assert_eq!(links::chat_of(&ctx.t.db, ann_id).await.unwrap(), None);

    assert_eq!(
        send(
            ctx.http
                .post(format!("{}/api/v1/notifications/link", ctx.base))
        )
        .await
        .status,
        401
    );
}

#[tokio::test]
async fn the_link_state_tells_whether_a_chat_is_bound_and_since_when() {
    use domain::clock::Clock;
    use storage::notifications::links::{self, Redeemed};
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (ann, bob) = (ctx.user().await, ctx.user().await);
    // A token for an organization reads its user's own state like any other.
    let (organizer, _) = ctx.owner(&admin).await;
    let path = "/api/v1/notifications/link";
    let unlinked = json!({"linked": false, "linkedAt": null});
    for who in [&ann, &bob, &organizer] {
        let r = ctx.get(path, Some(&who.access)).await;
        assert_eq!((r.status, r.body.clone()), (200, unlinked.clone()));
    }

    // Ann opens her link in chat 42.
    let now = ctx.clock.now();
    let token = super::link_token(&ctx, &ann).await;
    let ann_id = domain::ids::UserId(ann.user_id.parse().unwrap());
    assert_eq!(
        links::redeem(&ctx.t.db, &token, 42, now).await.unwrap(),
        Redeemed::Linked(ann_id)
    );
    let r = ctx.get(path, Some(&ann.access)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["linked"], true, "{}", r.body);
    let at: chrono::DateTime<chrono::Utc> = r.body["linkedAt"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r.body))
        .parse()
        .unwrap();
    assert_eq!((at - now).num_milliseconds(), 0, "{at} vs {now}");
    assert_eq!(
        ctx.get(path, Some(&bob.access)).await.body,
        unlinked,
        "per user"
    );
    assert_eq!(ctx.get(path, Some(&organizer.access)).await.body, unlinked);

    // Bob's link opened in the same chat moves it to him: Ann is not linked any more.
    ctx.clock.advance(chrono::Duration::minutes(1));
    let token = super::link_token(&ctx, &bob).await;
    let bob_id = domain::ids::UserId(bob.user_id.parse().unwrap());
    assert_eq!(
        links::redeem(&ctx.t.db, &token, 42, ctx.clock.now())
            .await
            .unwrap(),
        Redeemed::Linked(bob_id)
    );
    assert_eq!(ctx.get(path, Some(&ann.access)).await.body, unlinked);
    let r = ctx.get(path, Some(&bob.access)).await;
    assert_eq!(r.body["linked"], true, "{}", r.body);
    assert!(r.body["linkedAt"].is_string(), "{}", r.body);

    // Refusals: no token, a token that is not one.
    let anonymous = ctx.get(path, None).await;
    assert_eq!(
        (anonymous.status, anonymous.body["code"].as_str()),
        (401, Some("unauthorized")),
        "{}",
        anonymous.body
    );
    assert_eq!(ctx.get(path, Some("not-a-token")).await.status, 401);
}
