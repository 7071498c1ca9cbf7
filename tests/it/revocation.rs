//! Access that ends at once: a removed member, a changed role, a deleted account or
//! organization, a changed password and an ended session stop working on the very next
//! request, without waiting for the 15-minute token to expire; and public routes stay public
//! whatever bearer a client sends along.

use crate::identity::{Ctx, PASSWORD, Session, claims, session};
use crate::support::{TestDb, send};
use chrono::{Duration, Utc};
use serde_json::{Value, json};
use std::time::Instant;

const REVOKED: &str = "The access token was revoked (membership, role, account or session changed): refresh it or sign in again";
const SECRET: &str = "test-secret-test-secret-test-secret";

fn at(days: i64) -> String {
    (Utc::now() + Duration::days(days)).to_rfc3339()
}

fn assert_revoked(reply: &crate::support::Reply, what: &str) {
    assert_eq!(reply.status, 401, "{what}: {}", reply.body);
    assert_eq!(reply.body["code"], "unauthorized", "{what}");
    assert_eq!(reply.body["message"], REVOKED, "{what}");
}

async fn new_event(ctx: &Ctx, token: &str) -> crate::support::Reply {
    ctx.post(
        "/api/v1/events",
        Some(token),
        json!({"title": "Вечер", "startsAt": at(20)}),
    )
    .await
}

async fn refreshed(ctx: &Ctx, s: &Session) -> Session {
    let reply = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": s.refresh}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    session(&reply.body, &s.email)
}

#[tokio::test]
async fn a_removed_member_is_refused_on_the_very_next_request() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    let made = new_event(&ctx, &moderator.access).await;
    assert_eq!(made.status, 201, "{}", made.body);
    let event = made.body["id"].as_str().unwrap().to_string();

    let removed = ctx
        .delete(
            &format!("/api/v1/organizations/{org}/members/{}", moderator.user_id),
            Some(&owner.access),
        )
        .await;
    assert_eq!(removed.status, 204, "{}", removed.body);

    // Writes, tenant reads and the participants' emails: all gone with the membership.
    assert_revoked(&new_event(&ctx, &moderator.access).await, "create an event");
    assert_revoked(
        &ctx.put(
            &format!("/api/v1/events/{event}"),
            Some(&moderator.access),
            json!({"title": "Перехвачено"}),
        )
        .await,
        "edit the event",
    );
    assert_revoked(
        &ctx.get(
            &format!("/api/v1/events/{event}/registrations"),
            Some(&moderator.access),
        )
        .await,
        "list registrations",
    );
    assert_revoked(
        &ctx.get(
            &format!("/api/v1/events/{event}/registrations/export"),
            Some(&moderator.access),
        )
        .await,
        "export participants",
    );
    // A public read answers as to anyone: the draft is not shown.
    let public = ctx
        .get(&format!("/api/v1/events/{event}"), Some(&moderator.access))
        .await;
    assert_eq!(public.status, 404, "{}", public.body);

    // Refreshing works, and what it gives no longer speaks for the organization.
    let again = refreshed(&ctx, &moderator).await;
    let c = claims(&again.access);
    assert!(c["tenantId"].is_null(), "{c}");
    assert_eq!(c["roles"], json!([]));
    let me = ctx.get("/api/v1/users/me", Some(&again.access)).await;
    assert_eq!(me.status, 200, "{}", me.body);
    let refused = new_event(&ctx, &again.access).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    let switch = ctx
        .post_empty(
            &format!("/api/v1/organizations/{org}/switch"),
            Some(&again.access),
        )
        .await;
    assert!(
        [403, 404].contains(&switch.status),
        "no way back in: {}",
        switch.body
    );
    // The owner's own token was never touched.
    assert_eq!(new_event(&ctx, &owner.access).await.status, 201);
    ctx.stop().await;
}

#[tokio::test]
async fn a_role_change_a_deleted_organization_and_a_deleted_account_end_tokens() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    let other = ctx.moderator(&owner, &org).await;

    let changed = ctx
        .put(
            &format!("/api/v1/organizations/{org}/members/{}", moderator.user_id),
            Some(&owner.access),
            json!({"role": "MODERATOR"}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    assert_revoked(
        &new_event(&ctx, &moderator.access).await,
        "after a role change",
    );
    // The refreshed token carries the role as it is now, and works.
    let again = refreshed(&ctx, &moderator).await;
    assert_eq!(claims(&again.access)["roles"], json!(["MODERATOR"]));
    assert_eq!(claims(&again.access)["tenantId"], org.as_str());
    assert_eq!(new_event(&ctx, &again.access).await.status, 201);
    // Only the member whose role changed.
    assert_eq!(new_event(&ctx, &other.access).await.status, 201);

    let deleted = ctx
        .delete(&format!("/api/v1/organizations/{org}"), Some(&owner.access))
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    for (who, token) in [
        ("owner", &owner.access),
        ("moderator", &again.access),
        ("other", &other.access),
    ] {
        assert_revoked(&new_event(&ctx, token).await, who);
    }

    let user = ctx.user().await;
    let gone = ctx.delete("/api/v1/users/me", Some(&user.access)).await;
    assert_eq!(gone.status, 204, "{}", gone.body);
    assert_revoked(
        &ctx.get("/api/v1/users/me", Some(&user.access)).await,
        "deleted account",
    );
    ctx.stop().await;
}

#[tokio::test]
async fn a_person_sees_their_sessions_and_ends_one_from_another() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    // A second sign-in from a phone, told apart by what signed in.
    let phone = send(
        ctx.http
            .post(format!("{}/api/v1/auth/login", ctx.base))
            .header(
                "User-Agent",
                "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0) Safari/604.1",
            )
            .json(&json!({"email": user.email, "password": PASSWORD})),
    )
    .await;
    assert_eq!(phone.status, 200, "{}", phone.body);
    let phone = session(&phone.body, &user.email);
    let listed = ctx
        .get("/api/v1/users/me/sessions", Some(&user.access))
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let list = listed.body.as_array().unwrap();
    assert_eq!(list.len(), 2, "{}", listed.body);
    // The most recently used first: the phone's, with its client, then the first one.
    assert_eq!(
        list[0]["client"],
        "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0) Safari/604.1"
    );
    let phone_sid = claims(&phone.access)["sid"].clone();
    assert_eq!(list[0]["id"], phone_sid, "{}", listed.body);
    assert_eq!(
        list[1]["id"],
        claims(&user.access)["sid"],
        "{}",
        listed.body
    );
    for s in list {
        assert!(
            s["startedAt"].is_string() && s["lastUsedAt"].is_string() && s["expiresAt"].is_string()
        );
    }

    // A refresh keeps the session, its start and its client.
    let refreshed = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": phone.refresh}),
        )
        .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.body);
    let after = ctx
        .get("/api/v1/users/me/sessions", Some(&user.access))
        .await;
    let again = after.body.as_array().unwrap();
    assert_eq!(again.len(), 2, "{}", after.body);
    assert_eq!(again[0]["id"], phone_sid);
    assert_eq!(again[0]["client"], list[0]["client"]);
    assert_eq!(again[0]["startedAt"], list[0]["startedAt"]);

    // Ended from the computer: the phone's tokens stop at once, the computer goes on.
    let id = phone_sid.as_str().unwrap();
    let ended = ctx
        .delete(
            &format!("/api/v1/users/me/sessions/{id}"),
            Some(&user.access),
        )
        .await;
    assert_eq!(ended.status, 204, "{}", ended.body);
    let phone_access = refreshed.body["accessToken"].as_str().unwrap();
    assert_revoked(
        &ctx.get("/api/v1/users/me", Some(phone_access)).await,
        "the ended session's access token",
    );
    let refresh = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": refreshed.body["refreshToken"]}),
        )
        .await;
    assert_eq!(refresh.status, 401, "{}", refresh.body);
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&user.access)).await.status,
        200
    );
    let left = ctx
        .get("/api/v1/users/me/sessions", Some(&user.access))
        .await;
    assert_eq!(left.body.as_array().unwrap().len(), 1, "{}", left.body);

    // Ended already, someone else's, or no id: 404 / 400, nothing else ended.
    let twice = ctx
        .delete(
            &format!("/api/v1/users/me/sessions/{id}"),
            Some(&user.access),
        )
        .await;
    assert_eq!(twice.status, 404, "{}", twice.body);
    let stranger = ctx.user().await;
    let theirs = claims(&user.access)["sid"].as_str().unwrap().to_string();
    let foreign = ctx
        .delete(
            &format!("/api/v1/users/me/sessions/{theirs}"),
            Some(&stranger.access),
        )
        .await;
    assert_eq!(foreign.status, 404, "{}", foreign.body);
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&user.access)).await.status,
        200,
        "a stranger cannot end it"
    );
    let bad = ctx
        .delete("/api/v1/users/me/sessions/not-a-uuid", Some(&user.access))
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert_eq!(ctx.get("/api/v1/users/me/sessions", None).await.status, 401);
    ctx.stop().await;
}

#[tokio::test]
async fn logout_ends_its_session_and_a_password_change_ends_them_all() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    let second = session(&ctx.login(&user.email, PASSWORD).await.body, &user.email);
    let logout = ctx
        .post(
            "/api/v1/auth/logout",
            None,
            json!({"refreshToken": user.refresh}),
        )
        .await;
    assert_eq!(logout.status, 204, "{}", logout.body);
    assert_revoked(
        &ctx.get("/api/v1/users/me", Some(&user.access)).await,
        "logged-out session",
    );
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&second.access))
            .await
            .status,
        200,
        "the other session goes on"
    );

    let third = session(&ctx.login(&user.email, PASSWORD).await.body, &user.email);
    let changed = ctx
        .put(
            "/api/v1/users/me/password",
            Some(&second.access),
            json!({"currentPassword": PASSWORD, "newPassword": "another-horse-2"}),
        )
        .await;
    assert_eq!(changed.status, 204, "{}", changed.body);
    for (what, token) in [("second", &second.access), ("third", &third.access)] {
        assert_revoked(&ctx.get("/api/v1/users/me", Some(token)).await, what);
    }
    let fresh = session(
        &ctx.login(&user.email, "another-horse-2").await.body,
        &user.email,
    );
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&fresh.access))
            .await
            .status,
        200
    );
    ctx.stop().await;
}

#[tokio::test]
async fn a_blocked_account_loses_its_tokens_and_cannot_sign_in_until_unblocked() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    let bystander = ctx.user().await;
    let change = storage::identity::admins::block(&ctx.t.db, &user.email, Utc::now())
        .await
        .unwrap();
    assert!(matches!(
        change,
        storage::identity::admins::AdminChange::Changed(_)
    ));
    // Blocked from the command line, not through the gateway: seen within its bound.
    let started = Instant::now();
    let mut me = ctx.get("/api/v1/users/me", Some(&user.access)).await;
    while me.status == 200 && started.elapsed() < std::time::Duration::from_secs(3) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        me = ctx.get("/api/v1/users/me", Some(&user.access)).await;
    }
    assert_revoked(&me, "blocked");
    assert!(started.elapsed() < http::revocations::STALE_AFTER);
    let login = ctx.login(&user.email, PASSWORD).await;
    assert_eq!(login.status, 403, "{}", login.body);
    assert_eq!(
        login.body["message"],
        "This account was blocked by a platform administrator"
    );
    // A guesser is not told: a wrong password answers as for anyone.
    let guess = ctx.login(&user.email, "wrong-horse-9").await;
    assert_eq!(guess.status, 401, "{}", guess.body);
    let refresh = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": user.refresh}),
        )
        .await;
    assert_eq!(refresh.status, 401, "{}", refresh.body);
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&bystander.access))
            .await
            .status,
        200
    );

    storage::identity::admins::unblock(&ctx.t.db, &user.email)
        .await
        .unwrap();
    let back = ctx.login(&user.email, PASSWORD).await;
    assert_eq!(back.status, 200, "{}", back.body);
    ctx.stop().await;
}

#[tokio::test]
async fn a_reused_refresh_token_and_an_eleventh_session_end_access_tokens_too() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    // The thief refreshes with a copy; the victim's later use of the same token ends the
    // session, and with it the access token the thief got.
    let thief = refreshed(&ctx, &user).await;
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&thief.access))
            .await
            .status,
        200
    );
    let reused = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": user.refresh}),
        )
        .await;
    assert_eq!(reused.status, 401, "{}", reused.body);
    assert_revoked(
        &ctx.get("/api/v1/users/me", Some(&thief.access)).await,
        "the session of a reused refresh token",
    );

    // Ten more sessions push the first one out, access token included.
    let first = session(&ctx.login(&user.email, PASSWORD).await.body, &user.email);
    for _ in 0..10 {
        assert_eq!(ctx.login(&user.email, PASSWORD).await.status, 200);
    }
    assert_revoked(
        &ctx.get("/api/v1/users/me", Some(&first.access)).await,
        "a session pushed out by ten newer ones",
    );
    ctx.stop().await;
}

#[tokio::test]
async fn a_revoked_administrator_can_no_longer_review() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let requester = ctx.user().await;
    let request = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&requester.access),
            json!({"name": "Клуб", "slug": format!("club-{}", &uuid::Uuid::now_v7().simple().to_string()[24..])}),
        )
        .await;
    assert_eq!(request.status, 201, "{}", request.body);
    let id = request.body["id"].as_str().unwrap();
    storage::identity::admins::revoke(&ctx.t.db, &admin.email)
        .await
        .unwrap();
    let approve = ctx
        .post_empty(
            &format!("/api/v1/organization-requests/{id}/approve"),
            Some(&admin.access),
        )
        .await;
    assert_eq!(approve.status, 403, "{}", approve.body);
    let still = ctx
        .get(
            &format!("/api/v1/organization-requests/{id}"),
            Some(&requester.access),
        )
        .await;
    assert_eq!(still.body["status"], "PENDING", "{}", still.body);
    ctx.stop().await;
}

#[tokio::test]
async fn a_blocked_messenger_account_cannot_sign_in_with_the_widget() {
    let ctx = Ctx::new().await;
    let now = ctx.clock_now().timestamp();
    let payload = |id: &str| {
        serde_json::to_value(crate::identity::auth::widget(
            id,
            "Анна",
            now,
            crate::identity::BOT_TOKEN,
        ))
        .unwrap()
    };
    let first = ctx
        .post("/api/v1/auth/messenger", None, payload("4242"))
        .await;
    assert_eq!(first.status, 201, "{}", first.body);
    // A messenger-only account has no email: the administrator names its Telegram id.
    let change = storage::identity::admins::block(&ctx.t.db, "4242", Utc::now())
        .await
        .unwrap();
    assert!(matches!(
        change,
        storage::identity::admins::AdminChange::Changed(_)
    ));
    let again = ctx
        .post("/api/v1/auth/messenger", None, payload("4242"))
        .await;
    assert_eq!(again.status, 403, "{}", again.body);
    assert_eq!(
        again.body["message"],
        "This account was blocked by a platform administrator"
    );
    // Another Telegram account signs in as before.
    assert_eq!(
        ctx.post("/api/v1/auth/messenger", None, payload("4343"))
            .await
            .status,
        201
    );
    ctx.stop().await;
}

#[tokio::test]
async fn a_gateway_that_cannot_read_revocations_vouches_for_no_token_until_it_can() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&user.access)).await.status,
        200
    );
    // The application role loses the log: every reading fails from now on.
    let owner = ctx.t.owner().await;
    let grantees: Vec<String> = owner
        .query(
            "SELECT DISTINCT grantee::text FROM information_schema.role_table_grants
             WHERE table_schema = 'user_service' AND table_name = 'access_revocations'
               AND privilege_type = 'SELECT' AND grantee <> current_user",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(!grantees.is_empty());
    for role in &grantees {
        owner
            .execute(
                &format!("REVOKE SELECT ON user_service.access_revocations FROM \"{role}\""),
                &[],
            )
            .await
            .unwrap();
    }
    let mut me = ctx.get("/api/v1/users/me", Some(&user.access)).await;
    let started = Instant::now();
    while me.status == 200 && started.elapsed() < std::time::Duration::from_secs(5) {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        me = ctx.get("/api/v1/users/me", Some(&user.access)).await;
    }
    assert_eq!(me.status, 503, "{}", me.body);
    assert_eq!(me.body["code"], "service_unavailable", "{}", me.body);
    assert_eq!(
        me.body["message"],
        "The access token cannot be checked right now, try again later"
    );
    assert_eq!(me.body["retryAfter"], 1, "{}", me.body);
    assert!(
        started.elapsed()
            <= http::revocations::STALE_AFTER + std::time::Duration::from_millis(1500),
        "fails closed once the last reading is 2 s old: {:?}",
        started.elapsed()
    );
    // The fault is the platform's: the refusals are counted against the token's user, not
    // against the address everyone of this test shares (its public budget is 100 a minute),
    // so they stay 503 with a retry, never 429.
    for _ in 0..110 {
        let again = ctx.get("/api/v1/users/me", Some(&user.access)).await;
        assert_eq!(again.status, 503, "{}", again.body);
        assert_eq!(again.body["retryAfter"], 1, "{}", again.body);
    }
    // Public reads go on, as to anyone.
    let catalogue = ctx.get("/api/v1/events", Some(&user.access)).await;
    assert_eq!(catalogue.status, 200, "{}", catalogue.body);

    for role in &grantees {
        owner
            .execute(
                &format!("GRANT SELECT ON user_service.access_revocations TO \"{role}\""),
                &[],
            )
            .await
            .unwrap();
    }
    let mut back = ctx.get("/api/v1/users/me", Some(&user.access)).await;
    let started = Instant::now();
    while back.status != 200 && started.elapsed() < std::time::Duration::from_secs(5) {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        back = ctx.get("/api/v1/users/me", Some(&user.access)).await;
    }
    assert_eq!(
        back.status, 200,
        "vouches again after a reading: {}",
        back.body
    );
    ctx.stop().await;
}

/// A token of `SECRET` for `user`, issued `minutes_ago`.
fn token_issued(user: &str, minutes_ago: i64, secret: &str) -> String {
    http::tokens::Tokens::new(secret)
        .issue(
            domain::ids::UserId(user.parse().unwrap()),
            None,
            None,
            vec![],
            None,
            0,
            Utc::now() - Duration::minutes(minutes_ago),
        )
        .unwrap()
        .token
}

#[tokio::test]
async fn public_routes_ignore_an_expired_a_forged_a_revoked_and_a_garbage_bearer() {
    let ctx = Ctx::new().await;
    let user = ctx.user().await;
    let revoked = session(&ctx.login(&user.email, PASSWORD).await.body, &user.email);
    assert_eq!(
        ctx.post(
            "/api/v1/auth/logout",
            None,
            json!({"refreshToken": revoked.refresh})
        )
        .await
        .status,
        204
    );
    let bearers = [
        ("expired", token_issued(&user.user_id, 16, SECRET)),
        (
            "forged",
            token_issued(&user.user_id, 0, "another-secret-another-secret-another"),
        ),
        ("revoked", revoked.access.clone()),
        ("garbage", "not-a-token".to_string()),
    ];
    let mut current = user.clone();
    for (what, bearer) in &bearers {
        let refresh = ctx
            .post(
                "/api/v1/auth/refresh",
                Some(bearer),
                json!({"refreshToken": current.refresh}),
            )
            .await;
        assert_eq!(refresh.status, 200, "refresh with {what}: {}", refresh.body);
        current = session(&refresh.body, &user.email);
        let login = ctx
            .post(
                "/api/v1/auth/login",
                Some(bearer),
                json!({"email": user.email, "password": PASSWORD}),
            )
            .await;
        assert_eq!(login.status, 200, "login with {what}: {}", login.body);
        assert_eq!(login.body["user"]["id"], user.user_id.as_str());
        let catalogue = ctx.get("/api/v1/events", Some(bearer)).await;
        assert_eq!(catalogue.status, 200, "catalogue with {what}");
        // A route that needs a token still says why it refuses this one.
        let me = ctx.get("/api/v1/users/me", Some(bearer)).await;
        assert_eq!(me.status, 401, "{what}");
        let expected = if *what == "revoked" {
            REVOKED
        } else {
            "The access token is invalid or expired"
        };
        assert_eq!(me.body["message"], expected, "{what}");
    }
    ctx.stop().await;
}

const WEBHOOK_SECRET: &str = "whsec-test-test-test-test-test-test";

#[tokio::test]
async fn the_webhook_ignores_authorization_and_has_a_budget_of_its_own() {
    let ctx = Ctx::with_config(|c| {
        c.payments.webhook_secret = Some(domain::config::Secret::new(WEBHOOK_SECRET));
        c.gateway.public_per_minute = 10;
        c.gateway.webhook_per_minute = 1000;
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, paid) = crate::ticketing::setup(
        &ctx,
        &owner,
        json!({"name": "Paid", "quantity": 5, "priceCents": 1500, "currency": "RUB", "reservationMinutes": 30}),
    )
    .await;
    let (_, token) = crate::ticketing::participant();
    let key = uuid::Uuid::new_v4().to_string();
    let r = crate::ticketing::register(&ctx, &token, &event, &paid, &key).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let registration = r.body["id"].as_str().unwrap().to_string();

    let webhook = |body: Value, secret: &'static str, authorization: &'static str| {
        let raw = body.to_string();
        let signature = domain::events::payments::signature_header(
            secret.as_bytes(),
            Utc::now().timestamp(),
            raw.as_bytes(),
        );
        ctx.http
            .post(format!("{}/api/v1/payments/webhook", ctx.base))
            .header("content-type", "application/json")
            .header("Accept-Language", "en")
            .header("Authorization", authorization)
            .header("X-Bilet-Signature", signature)
            .body(raw)
    };
    let body = json!({"id": "pay-1", "type": "payment.completed", "registrationId": registration, "amountCents": 1500, "currency": "RUB"});
    // Wrong signature: the webhook's own answer, whatever Authorization says.
    let forged = send(webhook(
        body.clone(),
        "not-the-secret",
        "Bearer not-a-token",
    ))
    .await;
    assert_eq!(forged.status, 401, "{}", forged.body);
    assert_eq!(
        forged.body["details"]["reason"],
        "the signature does not match the body"
    );
    // More than the public budget of 10 a minute from this address, each signed properly.
    for n in 0..15 {
        let authorization = if n % 2 == 0 {
            "Basic dXNlcjpwYXNz"
        } else {
            "Bearer expired.or.forged"
        };
        let reply = send(webhook(body.clone(), WEBHOOK_SECRET, authorization)).await;
        assert_eq!(reply.status, 200, "notification {n}: {}", reply.body);
    }
    let registration = ctx
        .get(
            &format!("/api/v1/registrations/{registration}"),
            Some(&token),
        )
        .await;
    assert_eq!(
        registration.body["status"], "CONFIRMED",
        "{}",
        registration.body
    );
    ctx.stop().await;
}

/// Counts the series `/metrics` exposes (every sample line).
async fn series(ctx: &Ctx) -> usize {
    let text = reqwest::get(format!("{}/metrics", ctx.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count()
}

fn random_word(min: usize, max: usize) -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    let len = rng.random_range(min..=max);
    (0..len)
        .map(|_| (b'A' + rng.random_range(0..26u8)) as char)
        .collect()
}

#[tokio::test]
async fn metrics_do_not_grow_with_what_clients_send() {
    let ctx = Ctx::with_config(|c| c.gateway.public_per_minute = 5).await;
    let request = |method: String, path: String| {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        send(ctx.http.request(method, format!("{}{path}", ctx.base)))
    };
    // Paths under no route of ours (each route template is a label of its own, which is
    // bounded, but would be new to this count), methods of any length.
    let random = || {
        (
            format!("X{}", random_word(1, 40)),
            format!(
                "/{}/{}",
                random_word(8, 20).to_lowercase(),
                random_word(1, 60)
            ),
        )
    };
    for _ in 0..50 {
        let (method, path) = random();
        request(method, path).await;
    }
    // The first scrape adds its own series (GET /metrics), seen from the second on.
    series(&ctx).await;
    let before = series(&ctx).await;
    let mut statuses = std::collections::BTreeMap::new();
    let requests = futures_util::stream::iter((0..10_000).map(|_| {
        let (method, path) = random();
        request(method, path)
    }));
    use futures_util::StreamExt;
    let mut replies = requests.buffer_unordered(32);
    while let Some(reply) = replies.next().await {
        *statuses.entry(reply.status).or_insert(0) += 1;
    }
    drop(replies);
    assert_eq!(
        statuses.values().sum::<i32>(),
        10_000,
        "every request answered: {statuses:?}"
    );
    assert_eq!(series(&ctx).await, before, "statuses seen: {statuses:?}");
    let text = reqwest::get(format!("{}/metrics", ctx.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        text.contains("method=\"other\""),
        "custom methods count as other"
    );
    assert!(text.contains("route=\"unmatched\""));
    ctx.stop().await;
}

#[tokio::test]
async fn without_a_fresh_reading_of_revocations_the_gateway_vouches_for_no_token() {
    // A feed whose database cannot be reached has never read anything.
    let mut config = crate::support::test_config();
    config.database.url = "postgres://postgres@127.0.0.1:1/nowhere".into();
    let db = storage::Database::connect(&config.database).unwrap();
    let feed = http::revocations::RevocationFeed::new(db);
    assert!(feed.refresh().await.is_err());
    let claims = http::tokens::Tokens::new(SECRET)
        .verify(&token_issued(&uuid::Uuid::now_v7().to_string(), 0, SECRET))
        .unwrap();
    assert_eq!(feed.verdict(&claims), http::revocations::Verdict::Unknown);
    // One reading makes it sure again, for 2 seconds.
    let t = TestDb::new().await;
    let feed = http::revocations::RevocationFeed::new(t.db.clone());
    feed.refresh().await.unwrap();
    assert_eq!(feed.verdict(&claims), http::revocations::Verdict::Allowed);
    tokio::time::sleep(http::revocations::STALE_AFTER + std::time::Duration::from_millis(100))
        .await;
    assert_eq!(feed.verdict(&claims), http::revocations::Verdict::Unknown);
}

#[tokio::test]
async fn a_pool_held_by_slow_requests_does_not_keep_the_gateway_from_reading_revocations() {
    // A flood of slow requests (exports, searches) holds every connection of the pool; a
    // reading that waited for one would go stale and the door would refuse every token.
    let t = TestDb::new().await;
    let mut config = t.config.database.clone();
    config.pool_size = 2;
    let db = storage::Database::connect(&config).unwrap();
    let held = (db.client().await.unwrap(), db.client().await.unwrap());
    let feed = http::revocations::RevocationFeed::new(db);
    tokio::time::timeout(std::time::Duration::from_secs(1), feed.refresh())
        .await
        .expect("the reading did not wait for the pool")
        .unwrap();
    let claims = http::tokens::Tokens::new(SECRET)
        .verify(&token_issued(&uuid::Uuid::now_v7().to_string(), 0, SECRET))
        .unwrap();
    assert_eq!(feed.verdict(&claims), http::revocations::Verdict::Allowed);
    drop(held);
}

#[tokio::test]
async fn the_feed_keeps_its_session_when_the_server_has_no_room_for_another() {
    // Processes whose pools together exceed the role's limit hold every connection it
    // allows: a feed that gave its connection back after the pool's lifetime would not get
    // another, go stale, and the gateway would refuse every token.
    let t = TestDb::new().await;
    let mut config = t.config.database.clone();
    config.connection_lifetime_ms = 200;
    config.idle_connection_ms = 200;
    let feed = http::revocations::RevocationFeed::new(storage::Database::connect(&config).unwrap());
    feed.refresh().await.unwrap();
    let role = config.app_role_name();
    let owner = t.owner().await;
    let open: i64 = owner
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = $1",
            &[&role],
        )
        .await
        .unwrap()
        .get(0);
    owner
        .batch_execute(&format!("ALTER ROLE \"{role}\" CONNECTION LIMIT {open}"))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    tokio::time::timeout(std::time::Duration::from_secs(2), feed.refresh())
        .await
        .expect("read at once")
        .expect("read on the session it kept");
    let claims = http::tokens::Tokens::new(SECRET)
        .verify(&token_issued(&uuid::Uuid::now_v7().to_string(), 0, SECRET))
        .unwrap();
    assert_eq!(feed.verdict(&claims), http::revocations::Verdict::Allowed);
    // The limit is real: a connection of the role more is refused.
    let refused = storage::Database::connect(&config).unwrap().client().await;
    assert!(refused.is_err_and(|e| e.is_unavailable()));
}

#[tokio::test]
async fn as_separate_processes_a_removed_moderator_is_refused_by_the_events_node_at_once() {
    let t = TestDb::new().await;
    let telegram = crate::fake_telegram::FakeTelegram::start().await;
    let cluster = crate::scenario::cluster::Cluster::start(&t, &telegram).await;
    let p = cluster.platform(&t, telegram).await;
    let admin = p.user("Admin").await;
    storage::identity::admins::grant(&p.db, &admin.email)
        .await
        .unwrap();
    let mut owner = p.user("Owner").await;
    let org = crate::scenario::organization(&p, &admin, &owner).await;
    owner.access = p.switch(&owner, &org).await;
    let mut moderators = Vec::new();
    for name in ["First", "Second"] {
        let invite = p
            .post_empty(
                &format!("/api/v1/organizations/{org}/invite"),
                &owner.access,
            )
            .await;
        assert_eq!(invite.status, 201, "{}", invite.body);
        let mut m = p.user(name).await;
        let code = invite.body["inviteCode"].as_str().unwrap();
        let joined = p
            .post_empty(&format!("/api/v1/organizations/join/{code}"), &m.access)
            .await;
        assert_eq!(joined.status, 200, "{}", joined.body);
        m.access = p.switch(&m, &org).await;
        moderators.push(m);
    }
    let event_body = json!({"title": "Сейл", "startsAt": at(5)});
    let made = p
        .post(
            "/api/v1/events",
            Some(&moderators[0].access),
            event_body.clone(),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.body);
    let event = made.body["id"].as_str().unwrap().to_string();
    let registrations = format!("/api/v1/events/{event}/registrations");
    for m in &moderators {
        assert_eq!(p.get(&registrations, &m.access).await.status, 200);
    }

    // Through the gateway: the owner removes the first, whose very next request is refused.
    let removed = send(
        p.http
            .delete(format!(
                "{}/api/v1/organizations/{org}/members/{}",
                p.base, moderators[0].user_id
            ))
            .bearer_auth(&owner.access),
    )
    .await;
    assert_eq!(removed.status, 204, "{}", removed.body);
    let next = p
        .post("/api/v1/events", Some(&moderators[0].access), event_body)
        .await;
    assert_revoked(&next, "the very next request");
    assert_revoked(
        &send(
            p.http
                .get(format!("{}{registrations}", p.base))
                .header("Accept-Language", "en")
                .bearer_auth(&moderators[0].access),
        )
        .await,
        "a tenant read on the events node",
    );

    // Revoked behind the gateway's back (another gateway, the command line): the gateway
    // learns of it from the database within its bound.
    let owner_id = domain::ids::UserId(owner.user_id.parse().unwrap());
    let second = domain::ids::UserId(moderators[1].user_id.parse().unwrap());
    storage::identity::members::remove(
        &p.db,
        domain::ids::TenantId(org.parse().unwrap()),
        owner_id,
        second,
        Utc::now(),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let mut refused = false;
    while !refused && started.elapsed() < std::time::Duration::from_secs(5) {
        refused = p.get(&registrations, &moderators[1].access).await.status == 401;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let took = started.elapsed();
    assert!(refused, "the second moderator is refused");
    println!("revocation seen by a separate gateway after {took:?}");
    assert!(
        took < http::revocations::STALE_AFTER,
        "within the bound: {took:?}"
    );
}
