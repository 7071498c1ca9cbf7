//! Accounts and mail (issue 15): mail tokens are stored as their hash, a reset or a password
//! change spends every outstanding reset token, wrong current passwords count toward the
//! lock, and a mail requested while the mail server is down is sent once, when it is back.

use super::{Ctx, PASSWORD, mails_to, session, token_in};
use crate::support::{amqp_url, eventually};
use chrono::Duration;
use serde_json::json;
use sha2::{Digest, Sha256};

fn sha256_hex(text: &str) -> String {
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

fn new_email(prefix: &str) -> String {
    format!("{prefix}-{}@example.com", uuid::Uuid::now_v7().simple())
}

/// The tokens of the mails with `subject` sent to `to`, oldest first, once there are `n`.
async fn tokens_mailed(ctx: &Ctx, to: &str, subject: &str, n: usize) -> Vec<String> {
    let data_dir = ctx.t.config.data_dir.clone();
    let tokens = || {
        mails_to(&data_dir, to)
            .iter()
            .filter(|m| m.contains(subject))
            .map(|m| token_in(m))
            .collect::<Vec<_>>()
    };
    assert!(
        eventually(15, || async { tokens().len() >= n }).await,
        "{n} mails \"{subject}\" to {to}, got {}",
        tokens().len()
    );
    tokens()
}

async fn forgot(ctx: &Ctx, email: &str) {
    let r = ctx
        .post(
            "/api/v1/auth/forgot-password",
            None,
            json!({"email": email}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.body);
}

async fn reset(ctx: &Ctx, token: &str, password: &str) -> crate::support::Reply {
    ctx.post(
        "/api/v1/auth/reset-password",
        None,
        json!({"token": token, "newPassword": password}),
    )
    .await
}

/// The stored token texts of `email`'s tokens of `kind`.
async fn stored_tokens(ctx: &Ctx, email: &str, kind: &str) -> Vec<String> {
    ctx.t
        .owner()
        .await
        .query(
            "SELECT t.token FROM user_service.verification_tokens t
             JOIN user_service.users u ON u.id = t.user_id
             WHERE u.email = $1 AND t.type = $2",
            &[&email, &kind],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

#[tokio::test]
async fn mail_tokens_are_stored_as_their_hash_and_leave_the_outbox_once_sent() {
    let ctx = Ctx::new().await;
    let email = new_email("hashed");
    assert_eq!(ctx.register(&email).await.status, 201);
    let verification = tokens_mailed(&ctx, &email, "Confirm your email address", 1).await;
    assert_eq!(
        stored_tokens(&ctx, &email, "EMAIL_VERIFICATION").await,
        vec![sha256_hex(&verification[0])],
        "only the hash of the mailed verification token is stored"
    );
    forgot(&ctx, &email).await;
    let mailed = tokens_mailed(&ctx, &email, "Password reset", 1).await;
    let stored = stored_tokens(&ctx, &email, "PASSWORD_RESET").await;
    assert_eq!(stored.len(), 1);
    assert_ne!(stored[0], mailed[0], "the row is not the mailed token");
    assert_eq!(stored[0], sha256_hex(&mailed[0]), "the row is its SHA-256");
    let owner = ctx.t.owner().await;
    let raw: i64 = owner
        .query_one(
            "SELECT count(*) FROM user_service.verification_tokens WHERE token = ANY($1)",
            &[&vec![mailed[0].clone(), verification[0].clone()]],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(raw, 0, "no raw token anywhere in the table");
    // Once sent, the outbox rows of the two mails no longer hold their tokens.
    let holding = || async {
        owner
            .query_one(
                "SELECT count(*) FILTER (WHERE data ? 'token'), count(*)
                 FROM user_service.outbox WHERE event_type = 'mail.requested'",
                &[],
            )
            .await
            .map(|r| (r.get::<_, i64>(0), r.get::<_, i64>(1)))
            .unwrap()
    };
    assert!(
        eventually(10, || async { holding().await == (0, 2) }).await,
        "(with token, all) = {:?}",
        holding().await
    );
    // The mailed token still works: lookups hash what they are given.
    let done = reset(&ctx, &mailed[0], "new-secret-2").await;
    assert_eq!(done.status, 204, "{}", done.body);
    assert_eq!(ctx.login(&email, "new-secret-2").await.status, 200);
}

#[tokio::test]
async fn a_reset_or_a_password_change_spends_every_outstanding_reset_token() {
    let ctx = Ctx::new().await;
    let email = new_email("spent");
    assert_eq!(ctx.register(&email).await.status, 201);
    forgot(&ctx, &email).await;
    tokens_mailed(&ctx, &email, "Password reset", 1).await;
    forgot(&ctx, &email).await;
    let tokens = tokens_mailed(&ctx, &email, "Password reset", 2).await;
    assert_ne!(tokens[0], tokens[1]);
    let done = reset(&ctx, &tokens[1], "second-secret-2").await;
    assert_eq!(done.status, 204, "{}", done.body);
    let first = reset(&ctx, &tokens[0], "first-secret-1").await;
    assert_eq!(
        (first.status, first.body["code"].as_str()),
        (422, Some("business_rule_violation")),
        "the older link died with the reset: {}",
        first.body
    );
    assert_eq!(ctx.login(&email, "first-secret-1").await.status, 401);

    // A password change does the same to a link asked for before it (an hour on: the sign-up
    // mail and two resets used the address's three mails of the hour).
    ctx.clock.advance(Duration::hours(1));
    forgot(&ctx, &email).await;
    let outstanding = tokens_mailed(&ctx, &email, "Password reset", 3).await[2].clone();
    let s = session(&ctx.login(&email, "second-secret-2").await.body, &email);
    let changed = ctx
        .put(
            "/api/v1/users/me/password",
            Some(&s.access),
            json!({"currentPassword": "second-secret-2", "newPassword": "third-secret-3"}),
        )
        .await;
    assert_eq!(changed.status, 204, "{}", changed.body);
    let late = reset(&ctx, &outstanding, "fourth-secret-4").await;
    assert_eq!(
        (late.status, late.body["code"].as_str()),
        (422, Some("business_rule_violation")),
        "{}",
        late.body
    );
    assert_eq!(ctx.login(&email, "third-secret-3").await.status, 200);
}

#[tokio::test]
async fn wrong_current_passwords_count_toward_the_login_lock() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    let change = |current: &'static str| {
        let access = s.access.clone();
        let ctx = &ctx;
        async move {
            ctx.put(
                "/api/v1/users/me/password",
                Some(&access),
                json!({"currentPassword": current, "newPassword": "brand-new-1"}),
            )
            .await
        }
    };
    for attempt in 1..5 {
        let r = change("wrong-password-0").await;
        assert_eq!(
            (r.status, r.body["code"].as_str()),
            (401, Some("invalid_credentials")),
            "attempt {attempt}: {}",
            r.body
        );
    }
    // The fifth wrong guess locks, as the fifth failed login does.
    let fifth = change("wrong-password-0").await;
    assert_eq!(
        (fifth.status, fifth.body["code"].as_str()),
        (401, Some("account_locked")),
        "{}",
        fifth.body
    );
    assert!(fifth.body["details"]["lockedUntil"].is_string());
    // Locked: the right current password is refused too, and so is login.
    let right = change(PASSWORD).await;
    assert_eq!(
        (right.status, right.body["code"].as_str()),
        (401, Some("account_locked")),
        "{}",
        right.body
    );
    let login = ctx.login(&s.email, PASSWORD).await;
    assert_eq!(
        (login.status, login.body["code"].as_str()),
        (401, Some("account_locked")),
        "{}",
        login.body
    );

    // After the lock a successful change starts the count over, as a successful login does.
    ctx.clock
        .advance(Duration::minutes(15) + Duration::seconds(1));
    for _ in 0..4 {
        assert_eq!(change("wrong-password-0").await.status, 401);
    }
    let ok = change(PASSWORD).await;
    assert_eq!(ok.status, 204, "{}", ok.body);
    for attempt in 1..5 {
        let r = ctx.login(&s.email, "wrong-password-0").await;
        assert_eq!(
            r.body["code"], "invalid_credentials",
            "failure {attempt} after the change: {}",
            r.body
        );
    }
    assert_eq!(ctx.login(&s.email, "brand-new-1").await.status, 200);
}

#[tokio::test]
async fn a_mail_requested_while_smtp_is_down_is_sent_once_after_a_restart() {
    // RabbitMQ keeps the event across the restart; SMTP at a closed port refuses to connect.
    let exchange = format!("bilet.test-{}", uuid::Uuid::now_v7().simple());
    let ctx = Ctx::with_config(|c| {
        c.broker.url = amqp_url();
        c.broker.exchange = exchange;
        c.smtp.url = Some("smtp://127.0.0.1:1".into());
    })
    .await;
    let email = new_email("down");
    assert_eq!(ctx.register(&email).await.status, 201);
    let owner = ctx.t.owner().await;
    let count = |sql: &'static str| {
        let owner = &owner;
        async move { owner.query_one(sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    assert!(
        eventually(15, || async {
            count(
                "SELECT count(*) FROM user_service.outbox
                 WHERE event_type = 'mail.requested' AND published_at IS NOT NULL",
            )
            .await
                == 1
        })
        .await,
        "the mail request reached the broker"
    );
    // Several deliveries fail meanwhile (retried every second while SMTP is down).
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let data_dir = ctx.t.config.data_dir.clone();
    assert!(mails_to(&data_dir, &email).is_empty(), "no mail went out");
    let claimed =
        "SELECT count(*) FROM user_service.processed_events WHERE consumer = 'identity-mail'";
    assert_eq!(count(claimed).await, 0, "a failed send leaves no claim");

    // The same installation restarts with a working mailer (files under the same data_dir).
    let mut config = ctx.config();
    let _db = ctx.stop().await;
    config.smtp.url = None;
    let node = bilet::node::start(config).await.unwrap();
    assert!(
        eventually(30, || async { !mails_to(&data_dir, &email).is_empty() }).await,
        "the verification mail arrives after the restart"
    );
    // Give a duplicate every chance to show up.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let mails = mails_to(&data_dir, &email);
    assert_eq!(mails.len(), 1, "exactly once: {mails:#?}");
    assert!(
        mails[0].contains("Confirm your email address"),
        "{}",
        mails[0]
    );
    assert_eq!(count(claimed).await, 1);
    let gateway = format!("http://{}", node.addrs[&domain::config::Service::Gateway]);
    let verified = reqwest::Client::new()
        .post(format!("{gateway}/api/v1/auth/verify-email"))
        .json(&json!({"token": token_in(&mails[0])}))
        .send()
        .await
        .unwrap();
    assert_eq!(verified.status().as_u16(), 200, "the mailed link works");
    node.stop().await;
}

#[tokio::test]
async fn bad_reset_tokens_are_refused_as_before() {
    let ctx = Ctx::new().await;
    let refused =
        |r: &crate::support::Reply| (r.status, r.body["code"].as_str().map(str::to_string));
    let invalid = (422, Some("business_rule_violation".to_string()));
    for token in [
        "nope".to_string(),
        String::new(),
        uuid::Uuid::new_v4().to_string(),
        "x".repeat(500),
    ] {
        let r = reset(&ctx, &token, "new-secret-2").await;
        assert_eq!(refused(&r), invalid, "{token:?}: {}", r.body);
        assert_eq!(
            r.body["message"], "The link is invalid, already used or expired",
            "{}",
            r.body
        );
    }
    let missing = ctx
        .post(
            "/api/v1/auth/reset-password",
            None,
            json!({"newPassword": "new-secret-2"}),
        )
        .await;
    assert_eq!(missing.status, 400, "{}", missing.body);
    assert_eq!(missing.body["code"], "validation_error");

    // A stored hash presented as the token is not a token.
    let email = new_email("expired");
    assert_eq!(ctx.register(&email).await.status, 201);
    forgot(&ctx, &email).await;
    let token = tokens_mailed(&ctx, &email, "Password reset", 1).await[0].clone();
    let r = reset(&ctx, &sha256_hex(&token), "new-secret-2").await;
    assert_eq!(refused(&r), invalid, "{}", r.body);
    // A weak password is refused before the token is spent.
    let weak = reset(&ctx, &token, "weak").await;
    assert_eq!(weak.status, 400);
    assert_eq!(weak.body["code"], "validation_error");
    // An hour later the link has expired.
    ctx.clock.advance(Duration::hours(1) + Duration::seconds(1));
    let late = reset(&ctx, &token, "new-secret-2").await;
    assert_eq!(refused(&late), invalid, "{}", late.body);
    assert_eq!(ctx.login(&email, PASSWORD).await.status, 200);
}

#[tokio::test]
async fn tokens_mailed_before_the_upgrade_keep_working_once_hashed() {
    let ctx = Ctx::new().await;
    let email = new_email("legacy");
    assert_eq!(ctx.register(&email).await.status, 201);
    let owner = ctx.t.owner().await;
    // A reset token stored raw, as before V4; then V4 runs again over it (without the
    // verification token, which was stored hashed already and would be hashed twice).
    let legacy = uuid::Uuid::new_v4().to_string();
    owner
        .execute(
            "INSERT INTO user_service.verification_tokens (id, user_id, token, type, expires_at)
             SELECT gen_random_uuid(), id, $2, 'PASSWORD_RESET', now() + interval '1 hour'
             FROM user_service.users WHERE email = $1",
            &[&email, &legacy],
        )
        .await
        .unwrap();
    owner
        .batch_execute(
            "DROP INDEX user_service.verification_tokens_outstanding;
             DELETE FROM user_service.verification_tokens WHERE type = 'EMAIL_VERIFICATION';",
        )
        .await
        .unwrap();
    // V4's own text, run directly: refinery refuses to apply a version older than the newest
    // applied one, and later migrations are not meant to run twice.
    owner
        .batch_execute(include_str!(
            "../../../migrations/user_service/V4__mail_tokens_hashed.sql"
        ))
        .await
        .unwrap();
    assert_eq!(
        stored_tokens(&ctx, &email, "PASSWORD_RESET").await,
        vec![sha256_hex(&legacy)]
    );
    let done = reset(&ctx, &legacy, "new-secret-2").await;
    assert_eq!(done.status, 204, "{}", done.body);
    assert_eq!(ctx.login(&email, "new-secret-2").await.status, 200);
}
