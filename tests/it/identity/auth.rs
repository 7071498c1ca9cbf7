//! Registration, login, lockout, sessions, mails and messenger sign-in.

use super::{BOT_TOKEN, Ctx, PASSWORD, claims, link_in, mail_to, session, token_in};
use chrono::Duration;
use serde_json::json;
use std::collections::BTreeMap;

#[tokio::test]
async fn register_validates_and_refuses_taken_emails() {
    let ctx = Ctx::new().await;
    let reply = ctx
        .post(
            "/api/v1/auth/register",
            None,
            json!({"email": "  Anna@Example.COM ", "password": PASSWORD, "firstName": "Анна"}),
        )
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.body["email"], "anna@example.com");
    assert_eq!(reply.body["emailVerified"], false);
    assert_eq!(reply.body["firstName"], "Анна");
    let stored: String = ctx
        .t
        .owner()
        .await
        .query_one(
            "SELECT password_hash FROM user_service.users WHERE email = 'anna@example.com'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(
        stored.starts_with("$2") && !stored.contains(PASSWORD),
        "bcrypt hash stored"
    );

    let again = ctx.register("ANNA@example.com").await;
    assert_eq!(again.status, 409);
    assert_eq!(again.body["code"], "conflict");

    let bad = ctx
        .post(
            "/api/v1/auth/register",
            None,
            json!({"email": "not-an-email", "password": "short"}),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.body["details"]["email"], "Invalid format");
    assert_eq!(bad.body["details"]["password"], "Minimum length is 8");
    let letters_only = ctx
        .post(
            "/api/v1/auth/register",
            None,
            json!({"email": "b@example.com", "password": "onlyletters"}),
        )
        .await;
    assert_eq!(
        letters_only.body["details"]["password"],
        "The password must contain letters and digits"
    );
    let missing = ctx
        .post(
            "/api/v1/auth/register",
            None,
            json!({"email": "b@example.com"}),
        )
        .await;
    assert_eq!(
        missing.body["details"]["password"],
        "This field is required"
    );
    let wrong_type = ctx
        .post(
            "/api/v1/auth/register",
            None,
            json!({"email": 5, "password": PASSWORD}),
        )
        .await;
    assert_eq!(wrong_type.status, 400);
    assert!(
        wrong_type.body["details"]["email"]
            .as_str()
            .unwrap()
            .starts_with("Wrong value type")
    );
}

#[tokio::test]
async fn login_and_the_current_user() {
    let ctx = Ctx::new().await;
    ctx.register("login@example.com").await;
    let wrong = ctx.login("login@example.com", "wrong-password-1").await;
    assert_eq!(wrong.status, 401);
    assert_eq!(wrong.body["code"], "invalid_credentials");
    let unknown = ctx.login("nobody@example.com", "wrong-password-1").await;
    assert_eq!(
        (unknown.status, &unknown.body),
        (wrong.status, &wrong.body),
        "unknown email answers exactly like a wrong password"
    );

    let ok = ctx.login("LOGIN@example.com", PASSWORD).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["tokenType"], "Bearer");
    assert_eq!(ok.body["expiresIn"], 900);
    let s = session(&ok.body, "login@example.com");
    let c = claims(&s.access);
    assert_eq!(c["sub"], s.user_id.as_str());
    assert_eq!(c["email"], "login@example.com");
    assert_eq!(c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(), 900);

    let me = ctx.get("/api/v1/users/me", Some(&s.access)).await;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["id"], s.user_id.as_str());
    assert!(me.body["lastLoginAt"].is_string());
    assert_eq!(ctx.get("/api/v1/users/me", None).await.status, 401);
    assert_eq!(
        ctx.get("/api/v1/users/me", Some("garbage.token.here"))
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn five_failures_lock_the_account_for_fifteen_minutes() {
    let ctx = Ctx::new().await;
    ctx.register("lock@example.com").await;
    for attempt in 1..=4 {
        let r = ctx.login("lock@example.com", "wrong-password-1").await;
        assert_eq!(r.body["code"], "invalid_credentials", "attempt {attempt}");
    }
    let fifth = ctx.login("lock@example.com", "wrong-password-1").await;
    assert_eq!(fifth.status, 401);
    assert_eq!(fifth.body["code"], "account_locked");
    assert!(fifth.body["details"]["lockedUntil"].is_string());
    // The right password gets the same refusal: no hint that it was right.
    let right = ctx.login("lock@example.com", PASSWORD).await;
    assert_eq!(right.body["code"], "account_locked");
    ctx.clock.advance(Duration::minutes(14));
    assert_eq!(
        ctx.login("lock@example.com", PASSWORD).await.body["code"],
        "account_locked"
    );
    ctx.clock
        .advance(Duration::minutes(1) + Duration::seconds(1));
    assert_eq!(ctx.login("lock@example.com", PASSWORD).await.status, 200);

    // A success starts the count over: four more failures do not lock.
    for _ in 0..4 {
        ctx.login("lock@example.com", "wrong-password-1").await;
    }
    assert_eq!(ctx.login("lock@example.com", PASSWORD).await.status, 200);
    for _ in 0..4 {
        ctx.login("lock@example.com", "wrong-password-1").await;
    }
    assert_eq!(ctx.login("lock@example.com", PASSWORD).await.status, 200);
}

#[tokio::test]
async fn refresh_rotates_and_reuse_revokes_the_whole_chain() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    let first = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh}),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let r2 = first.body["refreshToken"].as_str().unwrap().to_string();
    assert_ne!(r2, s.refresh);
    let second = ctx
        .post("/api/v1/auth/refresh", None, json!({"refreshToken": r2}))
        .await;
    assert_eq!(second.status, 200);
    let r3 = second.body["refreshToken"].as_str().unwrap().to_string();

    // The first token comes back: someone copied it. The whole session ends.
    let reuse = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh}),
        )
        .await;
    assert_eq!(reuse.status, 401);
    let after = ctx
        .post("/api/v1/auth/refresh", None, json!({"refreshToken": r3}))
        .await;
    assert_eq!(
        after.status, 401,
        "the newest token of the chain is revoked too"
    );

    assert_eq!(
        ctx.post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": "made-up"})
        )
        .await
        .status,
        401
    );
    assert_eq!(
        ctx.post("/api/v1/auth/refresh", None, json!({}))
            .await
            .status,
        400
    );
    // Tokens are stored hashed.
    let plain: i64 = ctx
        .t
        .owner()
        .await
        .query_one(
            "SELECT count(*) FROM user_service.refresh_tokens WHERE token_hash = $1",
            &[&r3],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(plain, 0);
}

#[tokio::test]
async fn refresh_token_expires_after_seven_days() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    ctx.clock.advance(Duration::days(7) + Duration::seconds(1));
    assert_eq!(
        ctx.post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh})
        )
        .await
        .status,
        401
    );
    let deleted = storage::identity::sessions::purge_expired(&ctx.t.db, ctx.clock_now())
        .await
        .unwrap();
    assert_eq!(deleted, 1, "the hourly cleanup removes the expired token");
}

impl Ctx {
    pub(crate) fn clock_now(&self) -> chrono::DateTime<chrono::Utc> {
        use domain::clock::Clock;
        self.clock.now()
    }
}

#[tokio::test]
async fn the_eleventh_session_revokes_the_first() {
    let ctx = Ctx::new().await;
    ctx.register("many@example.com").await;
    let mut refreshes = Vec::new();
    for _ in 0..11 {
        ctx.clock.advance(Duration::seconds(1));
        let r = ctx.login("many@example.com", PASSWORD).await;
        refreshes.push(r.body["refreshToken"].as_str().unwrap().to_string());
    }
    let first = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": refreshes[0]}),
        )
        .await;
    assert_eq!(first.status, 401, "oldest session revoked");
    let second = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": refreshes[1]}),
        )
        .await;
    assert_eq!(second.status, 200, "the other ten stay");
    let last = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": refreshes[10]}),
        )
        .await;
    assert_eq!(last.status, 200);
}

#[tokio::test]
async fn logout_ends_the_session() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    let out = ctx
        .post(
            "/api/v1/auth/logout",
            None,
            json!({"refreshToken": s.refresh}),
        )
        .await;
    assert_eq!(out.status, 204);
    assert_eq!(
        ctx.post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh})
        )
        .await
        .status,
        401
    );
    // Logging out twice, or with an unknown token, changes nothing and says nothing.
    assert_eq!(
        ctx.post(
            "/api/v1/auth/logout",
            None,
            json!({"refreshToken": s.refresh})
        )
        .await
        .status,
        204
    );
    assert_eq!(
        ctx.post("/api/v1/auth/logout", None, json!({"refreshToken": 42}))
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn verification_mail_arrives_with_a_working_link() {
    let ctx = Ctx::new().await;
    let email = format!("verify-{}@example.com", uuid::Uuid::now_v7().simple());
    ctx.register(&email).await;
    let mail = mail_to(&ctx, &email)
        .await
        .expect("verification mail delivered");
    assert!(mail.contains("Confirm your email address"), "{mail}");
    let link = link_in(&mail);
    assert!(
        link.starts_with("http://localhost:8080/verify-email?token="),
        "{link}"
    );
    // The link opens the web front's page, which confirms the address through the API.
    let path = link.trim_start_matches("http://localhost:8080");
    let page = reqwest::get(format!("{}{path}", ctx.base)).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(page.text().await.unwrap().contains("id=\"app\""));
    let opened = ctx
        .post(
            "/api/v1/auth/verify-email",
            None,
            json!({"token": token_in(&mail)}),
        )
        .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert_eq!(opened.body["emailVerified"], true);
    let s = super::session(&ctx.login(&email, PASSWORD).await.body, &email);
    let me = ctx.get("/api/v1/users/me", Some(&s.access)).await;
    assert_eq!(me.body["emailVerified"], true);
    assert!(me.body["emailVerifiedAt"].is_string());
    // Single use.
    let again = ctx
        .post(
            "/api/v1/auth/verify-email",
            None,
            json!({"token": token_in(&mail)}),
        )
        .await;
    assert_eq!(again.status, 422);
    assert_eq!(
        ctx.post("/api/v1/auth/verify-email", None, json!({"token": "nope"}))
            .await
            .status,
        422
    );
}

#[tokio::test]
async fn verification_token_expires_after_a_day() {
    let ctx = Ctx::new().await;
    let email = format!("late-{}@example.com", uuid::Uuid::now_v7().simple());
    ctx.register(&email).await;
    let mail = mail_to(&ctx, &email).await.unwrap();
    ctx.clock
        .advance(Duration::hours(24) + Duration::seconds(1));
    let late = ctx
        .post(
            "/api/v1/auth/verify-email",
            None,
            json!({"token": token_in(&mail)}),
        )
        .await;
    assert_eq!(late.status, 422);
    // A new mail can be asked for.
    assert_eq!(
        ctx.post(
            "/api/v1/auth/resend-verification",
            None,
            json!({"email": email})
        )
        .await
        .status,
        202
    );
}

/// Mail tokens issued to `email`'s account, of either kind: one per mail requested.
async fn tokens_issued(ctx: &Ctx, email: &str) -> i64 {
    ctx.t
        .owner()
        .await
        .query_one(
            "SELECT count(*) FROM user_service.verification_tokens t
             JOIN user_service.users u ON u.id = t.user_id WHERE u.email = $1",
            &[&email],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn the_sign_up_mail_and_both_kinds_share_three_an_hour() {
    let ctx = Ctx::new().await;
    let email = format!("limit-{}@example.com", uuid::Uuid::now_v7().simple());
    assert_eq!(ctx.register(&email).await.status, 201);
    assert_eq!(tokens_issued(&ctx, &email).await, 1, "the sign-up mail");
    let resend = ctx
        .post(
            "/api/v1/auth/resend-verification",
            None,
            json!({"email": email}),
        )
        .await;
    assert_eq!(resend.status, 202, "{}", resend.body);
    let forgot = ctx
        .post(
            "/api/v1/auth/forgot-password",
            None,
            json!({"email": email}),
        )
        .await;
    assert_eq!(forgot.status, 202, "{}", forgot.body);
    assert_eq!(tokens_issued(&ctx, &email).await, 3);

    // The fourth mail of the hour, of either kind, is refused and issues nothing.
    for endpoint in [
        "/api/v1/auth/resend-verification",
        "/api/v1/auth/forgot-password",
    ] {
        let fourth = ctx.post(endpoint, None, json!({"email": email})).await;
        assert_eq!(fourth.status, 429, "{endpoint}: {}", fourth.body);
        assert_eq!(fourth.body["code"], "rate_limit_exceeded");
        assert_eq!(fourth.body["retryAfter"], 3600, "{}", fourth.body);
        assert_eq!(fourth.headers["retry-after"], "3600");
    }
    assert_eq!(tokens_issued(&ctx, &email).await, 3, "no fourth token");

    // The window slides: an hour after the sign-up mail, one more goes.
    ctx.clock.advance(Duration::hours(1));
    let later = ctx
        .post(
            "/api/v1/auth/forgot-password",
            None,
            json!({"email": email}),
        )
        .await;
    assert_eq!(later.status, 202, "{}", later.body);
    assert_eq!(tokens_issued(&ctx, &email).await, 4);
    assert_eq!(
        ctx.post(
            "/api/v1/auth/forgot-password",
            None,
            json!({"email": "bad"})
        )
        .await
        .status,
        400
    );
}

#[tokio::test]
async fn known_and_unknown_addresses_get_the_same_answers() {
    let ctx = Ctx::new().await;
    let known = format!("known-{}@example.com", uuid::Uuid::now_v7().simple());
    ctx.register(&known).await;
    // The sign-up mail leaves the window, so both addresses start the hour alike.
    ctx.clock.advance(Duration::hours(1));
    let unknown = format!("unknown-{}@example.com", uuid::Uuid::now_v7().simple());
    for (n, endpoint) in [
        "/api/v1/auth/forgot-password",
        "/api/v1/auth/resend-verification",
        "/api/v1/auth/forgot-password",
        "/api/v1/auth/resend-verification",
        "/api/v1/auth/forgot-password",
    ]
    .into_iter()
    .enumerate()
    {
        let a = ctx.post(endpoint, None, json!({"email": known})).await;
        let b = ctx.post(endpoint, None, json!({"email": unknown})).await;
        assert_eq!((a.status, &a.body), (b.status, &b.body), "{n}: {endpoint}");
        assert_eq!(
            a.headers.get("retry-after"),
            b.headers.get("retry-after"),
            "{n}: {endpoint}"
        );
        let expected = if n < 3 { 202 } else { 429 };
        assert_eq!(a.status, expected, "{n}: {endpoint}: {}", a.body);
    }
    assert_eq!(tokens_issued(&ctx, &known).await, 1 + 3);
}

#[tokio::test]
async fn asks_before_sign_up_count_and_the_account_is_created_all_the_same() {
    let ctx = Ctx::new().await;
    let email = format!("early-{}@example.com", uuid::Uuid::now_v7().simple());
    for endpoint in [
        "/api/v1/auth/forgot-password",
        "/api/v1/auth/resend-verification",
        "/api/v1/auth/forgot-password",
    ] {
        let r = ctx.post(endpoint, None, json!({"email": email})).await;
        assert_eq!(r.status, 202, "{endpoint}: {}", r.body);
    }
    // The hour's three mails are spoken for: the account is made without a fourth mail.
    let signed_up = ctx.register(&email).await;
    assert_eq!(signed_up.status, 201, "{}", signed_up.body);
    assert_eq!(tokens_issued(&ctx, &email).await, 0);
    ctx.clock.advance(Duration::hours(1));
    let resend = ctx
        .post(
            "/api/v1/auth/resend-verification",
            None,
            json!({"email": email}),
        )
        .await;
    assert_eq!(resend.status, 202, "{}", resend.body);
    assert_eq!(
        tokens_issued(&ctx, &email).await,
        1,
        "the link comes after the hour"
    );
}

#[tokio::test]
async fn password_reset_sets_the_password_once_and_ends_sessions() {
    let ctx = Ctx::new().await;
    let email = format!("reset-{}@example.com", uuid::Uuid::now_v7().simple());
    ctx.register(&email).await;
    let s = super::session(&ctx.login(&email, PASSWORD).await.body, &email);
    // Skip the verification mail: wait for the reset one.
    mail_to(&ctx, &email).await.unwrap();
    ctx.clock.advance(Duration::seconds(2));
    assert_eq!(
        ctx.post(
            "/api/v1/auth/forgot-password",
            None,
            json!({"email": email})
        )
        .await
        .status,
        202
    );
    let mail = crate::support::eventually(10, || async {
        mail_to(&ctx, &email)
            .await
            .is_some_and(|m| m.contains("Password reset"))
    })
    .await;
    assert!(mail, "reset mail delivered");
    let mail = mail_to(&ctx, &email).await.unwrap();
    let token = token_in(&mail);

    let weak = ctx
        .post(
            "/api/v1/auth/reset-password",
            None,
            json!({"token": token, "newPassword": "weak"}),
        )
        .await;
    assert_eq!(weak.status, 400);
    let done = ctx
        .post(
            "/api/v1/auth/reset-password",
            None,
            json!({"token": token, "newPassword": "new-secret-2"}),
        )
        .await;
    assert_eq!(done.status, 204, "{}", done.body);
    assert_eq!(
        ctx.post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh})
        )
        .await
        .status,
        401,
        "sessions ended"
    );
    assert_eq!(ctx.login(&email, PASSWORD).await.status, 401);
    assert_eq!(ctx.login(&email, "new-secret-2").await.status, 200);
    let twice = ctx
        .post(
            "/api/v1/auth/reset-password",
            None,
            json!({"token": token, "newPassword": "other-secret-3"}),
        )
        .await;
    assert_eq!(twice.status, 422, "single use");
}

pub(crate) fn widget(
    id: &str,
    first: &str,
    auth_date: i64,
    token: &str,
) -> BTreeMap<String, String> {
    let mut fields = BTreeMap::new();
    fields.insert("id".to_string(), id.to_string());
    fields.insert("first_name".to_string(), first.to_string());
    fields.insert("username".to_string(), "anna".to_string());
    fields.insert("auth_date".to_string(), auth_date.to_string());
    let hash = domain::identity::messenger::sign_widget(&fields, token);
    fields.insert("hash".to_string(), hash);
    fields
}

#[tokio::test]
async fn messenger_sign_in_creates_once_and_refuses_forgeries() {
    let ctx = Ctx::new().await;
    let now = ctx.clock_now().timestamp();
    let users = || async {
        ctx.t
            .owner()
            .await
            .query_one("SELECT count(*) FROM user_service.users", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    let forged = widget("777", "Анна", now, "another-bot-token");
    let r = ctx
        .post(
            "/api/v1/auth/messenger",
            None,
            serde_json::to_value(&forged).unwrap(),
        )
        .await;
    assert_eq!(r.status, 401);
    assert_eq!(users().await, 0, "nothing created");
    let stale = widget("777", "Анна", now - 11 * 60, BOT_TOKEN);
    assert_eq!(
        ctx.post(
            "/api/v1/auth/messenger",
            None,
            serde_json::to_value(&stale).unwrap()
        )
        .await
        .status,
        401
    );
    // Signed, but at the ends of time: refused as a bad payload, never a 500 from arithmetic.
    for at in [i64::MIN, i64::MAX] {
        let extreme = widget("777", "Анна", at, BOT_TOKEN);
        let r = ctx
            .post(
                "/api/v1/auth/messenger",
                None,
                serde_json::to_value(&extreme).unwrap(),
            )
            .await;
        assert_eq!(r.status, 401, "auth_date {at}: {}", r.body);
        assert_eq!(r.body["code"], "unauthorized", "auth_date {at}");
    }
    let mut tampered = widget("777", "Анна", now, BOT_TOKEN);
    tampered.insert("id".into(), "778".into());
    assert_eq!(
        ctx.post(
            "/api/v1/auth/messenger",
            None,
            serde_json::to_value(&tampered).unwrap()
        )
        .await
        .status,
        401
    );
    assert_eq!(users().await, 0);
    let no_hash = ctx
        .post(
            "/api/v1/auth/messenger",
            None,
            json!({"id": 777, "auth_date": now}),
        )
        .await;
    assert_eq!(no_hash.status, 400);
    assert_eq!(no_hash.body["details"]["hash"], "This field is required");

    // The widget sends the id as a number.
    let mut genuine = serde_json::to_value(widget("777", "Анна", now, BOT_TOKEN)).unwrap();
    genuine["id"] = json!(777);
    let first = ctx
        .post("/api/v1/auth/messenger", None, genuine.clone())
        .await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.body["user"]["firstName"], "Анна");
    assert_eq!(first.body["user"]["messengerLinked"], true);
    let again = ctx.post("/api/v1/auth/messenger", None, genuine).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body["user"]["id"], first.body["user"]["id"]);
    assert_eq!(users().await, 1);
}

#[tokio::test]
async fn the_front_learns_which_bot_signs_in_and_nothing_secret() {
    let ctx = Ctx::new().await;
    let offer = ctx.get("/api/v1/auth/messenger", None).await;
    assert_eq!(offer.status, 200, "{}", offer.body);
    assert_eq!(
        offer.body,
        json!({
            "botId": 123456,
            "botUsername": "bilet_test_bot",
            "authUrl": "https://oauth.telegram.org/auth"
        }),
        "the id and name only, never the token's secret part"
    );

    let off = Ctx::with_config(|c| c.messenger.bot_token = None).await;
    let none = off.get("/api/v1/auth/messenger", None).await;
    assert_eq!(none.status, 404, "{}", none.body);
    assert_eq!(none.body["code"], "not_found");
}

/// An empty `MESSENGER_BOT_TOKEN=` was once a configured token: the widget's key is SHA-256 of
/// the token, so SHA-256 of "" signed a login as any messenger account. Loaded from the
/// environment such a token is dropped; set in code the handler refuses it all the same.
#[tokio::test]
async fn an_empty_bot_token_refuses_a_login_signed_with_the_empty_key() {
    let loaded = domain::config::Config::load(None, [("MESSENGER_BOT_TOKEN", "")]).unwrap();
    assert!(loaded.messenger.bot_token.is_none());
    let from_env = Ctx::with_config(|c| c.messenger = loaded.messenger.clone()).await;
    let in_code = Ctx::with_config(|c| {
        c.messenger.bot_token = Some(domain::config::Secret::new(""));
    })
    .await;
    for ctx in [&from_env, &in_code] {
        let now = ctx.clock_now().timestamp();
        let forged = widget("777", "Анна", now, "");
        let r = ctx
            .post(
                "/api/v1/auth/messenger",
                None,
                serde_json::to_value(&forged).unwrap(),
            )
            .await;
        assert_eq!(r.status, 503, "{}", r.body);
        assert_eq!(r.body["code"], "service_unavailable", "{}", r.body);
        assert_eq!(r.body["message"], "Messenger sign-in is not configured");
        let users: i64 = ctx
            .t
            .owner()
            .await
            .query_one("SELECT count(*) FROM user_service.users", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(users, 0, "no account was signed in or created");
        let offer = ctx.get("/api/v1/auth/messenger", None).await;
        assert_eq!(
            offer.status, 404,
            "no sign-in button either: {}",
            offer.body
        );
    }
}

#[tokio::test]
async fn password_change_checks_the_current_one_and_ends_sessions() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    let wrong = ctx
        .put(
            "/api/v1/users/me/password",
            Some(&s.access),
            json!({"currentPassword": "nope-123", "newPassword": "brand-new-9"}),
        )
        .await;
    assert_eq!(wrong.status, 401);
    let weak = ctx
        .put(
            "/api/v1/users/me/password",
            Some(&s.access),
            json!({"currentPassword": PASSWORD, "newPassword": "abc"}),
        )
        .await;
    assert_eq!(weak.status, 400);
    let ok = ctx
        .put(
            "/api/v1/users/me/password",
            Some(&s.access),
            json!({"currentPassword": PASSWORD, "newPassword": "brand-new-9"}),
        )
        .await;
    assert_eq!(ok.status, 204);
    assert_eq!(
        ctx.post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh})
        )
        .await
        .status,
        401
    );
    assert_eq!(ctx.login(&s.email, "brand-new-9").await.status, 200);
    assert_eq!(
        ctx.put("/api/v1/users/me/password", None, json!({}))
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn profile_update_and_soft_delete() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    // An avatar must be an image the user uploaded personally (tests/it/attachments.rs).
    let avatar = crate::attachments::upload(&ctx, &s.access, &crate::attachments::png()).await;
    let updated = ctx
        .put(
            "/api/v1/users/me",
            Some(&s.access),
            json!({"firstName": " Пётр ", "avatarId": avatar}),
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["firstName"], "Пётр");
    assert_eq!(updated.body["lastName"], "User", "absent fields stay");
    assert_eq!(updated.body["avatarId"], avatar.to_string());
    let cleared = ctx
        .put(
            "/api/v1/users/me",
            Some(&s.access),
            json!({"avatarId": null}),
        )
        .await;
    assert!(cleared.body["avatarId"].is_null());
    let bad = ctx
        .put("/api/v1/users/me", Some(&s.access), json!({"firstName": 7}))
        .await;
    assert_eq!(bad.status, 400);
    let long = ctx
        .put(
            "/api/v1/users/me",
            Some(&s.access),
            json!({"lastName": "x".repeat(101)}),
        )
        .await;
    assert_eq!(long.body["details"]["lastName"], "Maximum length is 100");

    assert_eq!(
        ctx.delete("/api/v1/users/me", Some(&s.access)).await.status,
        204
    );
    assert_eq!(ctx.login(&s.email, PASSWORD).await.status, 401);
    assert_eq!(
        ctx.post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh})
        )
        .await
        .status,
        401
    );
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&s.access)).await.status,
        401,
        "a deleted user is nobody"
    );
    assert_eq!(
        ctx.register(&s.email).await.status,
        409,
        "the email stays reserved"
    );
}

#[tokio::test]
async fn identity_headers_from_clients_never_reach_the_service() {
    let ctx = Ctx::new().await;
    let alice = ctx.user().await;
    let bob = ctx.user().await;
    // Without a token, a forged X-User-Id is stripped and the route stays closed.
    let forged = crate::support::send(
        ctx.http
            .get(format!("{}/api/v1/users/me", ctx.base))
            .header("X-User-Id", &bob.user_id),
    )
    .await;
    assert_eq!(forged.status, 401);
    // With Alice's token, claiming to be Bob still shows Alice.
    let spoofed = crate::support::send(
        ctx.http
            .get(format!("{}/api/v1/users/me", ctx.base))
            .bearer_auth(&alice.access)
            .header("X-User-Id", &bob.user_id)
            .header("X-Tenant-Id", uuid::Uuid::now_v7().to_string())
            .header("X-User-Roles", "OWNER"),
    )
    .await;
    assert_eq!(spoofed.status, 200);
    assert_eq!(spoofed.body["id"], alice.user_id.as_str());
    // A token signed with another secret, or not signed at all, is refused.
    let header = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";
    use base64::Engine;
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        serde_json::to_vec(
            &json!({"sub": bob.user_id, "roles": [], "exp": 4_000_000_000i64, "iat": 0}),
        )
        .unwrap(),
    );
    let unsigned = format!("{header}.{payload}.");
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&unsigned)).await.status,
        401
    );
    let other = http::tokens::Tokens::new("another-secret")
        .issue(
            domain::ids::UserId(bob.user_id.parse().unwrap()),
            None,
            None,
            vec![],
            None,
            0,
            chrono::Utc::now(),
        )
        .unwrap();
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&other.token)).await.status,
        401
    );
}
