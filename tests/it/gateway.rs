//! The gateway: token checks, rate limits with their headers, internal routes, trusted
//! proxies, forwarding to services in other processes and one budget shared through Redis.

use crate::identity::{Ctx, PASSWORD};
use crate::support::{TestDb, eventually, get, send};
use base64::Engine;
use chrono::Duration;
use serde_json::json;
use std::process::{Child, Command, Stdio};

fn b64(value: &serde_json::Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap())
}

#[tokio::test]
async fn forged_expired_wrong_algorithm_and_tampered_tokens_are_refused() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&s.access)).await.status,
        200
    );

    let secret = "test-secret-test-secret-test-secret";
    let tokens = http::tokens::Tokens::new(secret);
    let user = domain::ids::UserId(s.user_id.parse().unwrap());
    let expired = tokens
        .issue(
            user,
            None,
            None,
            vec![],
            None,
            0,
            chrono::Utc::now() - Duration::minutes(16),
        )
        .unwrap();
    let reply = ctx.get("/api/v1/users/me", Some(&expired.token)).await;
    assert_eq!(reply.status, 401);
    assert_eq!(
        reply.body["message"],
        "The access token is invalid or expired"
    );

    let payload =
        b64(&json!({"sub": s.user_id, "roles": ["OWNER"], "exp": 4_000_000_000i64, "iat": 0}));
    let none = format!("{}.{payload}.", b64(&json!({"alg": "none", "typ": "JWT"})));
    assert_eq!(ctx.get("/api/v1/users/me", Some(&none)).await.status, 401);
    let rs256 = format!(
        "{}.{payload}.{}",
        b64(&json!({"alg": "RS256", "typ": "JWT"})),
        b64(&json!("sig"))
    );
    assert_eq!(ctx.get("/api/v1/users/me", Some(&rs256)).await.status, 401);

    let mut parts: Vec<String> = s.access.split('.').map(str::to_string).collect();
    let mut claims = crate::identity::claims(&s.access);
    claims["roles"] = json!(["OWNER"]);
    parts[1] = b64(&claims);
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&parts.join(".")))
            .await
            .status,
        401,
        "tampered payload"
    );

    let no_sub = jsonwebtoken_like(secret, &json!({"roles": [], "exp": 4_000_000_000i64}));
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&no_sub)).await.status,
        401,
        "required claim missing"
    );
    let reply = send(
        ctx.http
            .get(format!("{}/api/v1/users/me", ctx.base))
            .header("Authorization", format!("Token {}", s.access)),
    )
    .await;
    assert_eq!(reply.status, 401, "only the Bearer scheme");
}

/// An HS256 token with arbitrary claims, signed like the real ones.
fn jsonwebtoken_like(secret: &str, claims: &serde_json::Value) -> String {
    use hmac::{Hmac, Mac};
    let signing_input = format!(
        "{}.{}",
        b64(&json!({"alg": "HS256", "typ": "JWT"})),
        b64(claims)
    );
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(signing_input.as_bytes());
    let sig = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    format!("{signing_input}.{sig}")
}

#[tokio::test]
async fn public_limit_is_100_per_minute_per_ip_with_headers() {
    let ctx = Ctx::new().await;
    for i in 1..=100u32 {
        let r = ctx
            .post(
                "/api/v1/auth/refresh",
                None,
                json!({"refreshToken": "junk"}),
            )
            .await;
        assert_eq!(r.status, 401, "request {i} passes to the service");
        assert_eq!(r.headers["x-ratelimit-limit"], "100");
        assert_eq!(
            r.headers["x-ratelimit-remaining"],
            (100 - i).to_string().as_str()
        );
    }
    let refused = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": "junk"}),
        )
        .await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body["code"], "rate_limit_exceeded");
    assert!(refused.body["message"].is_string());
    let retry = refused.body["retryAfter"].as_u64().unwrap();
    assert!((1..=60).contains(&retry));
    assert_eq!(refused.headers["retry-after"], retry.to_string().as_str());
    assert_eq!(refused.headers["x-ratelimit-remaining"], "0");
    // Health checks are not counted.
    assert_eq!(ctx.get("/health/live", None).await.status, 200);
    ctx.clock.advance(Duration::seconds(60));
    let again = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": "junk"}),
        )
        .await;
    assert_eq!(again.status, 401, "a new window");
    assert_eq!(again.headers["x-ratelimit-remaining"], "99");
}

#[tokio::test]
async fn authenticated_limit_is_1000_per_minute_per_user() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    let other = ctx.user().await;
    for i in 1..=1000u32 {
        let r = ctx.get("/api/v1/users/me", Some(&s.access)).await;
        assert_eq!(r.status, 200, "request {i}");
        if i == 1000 {
            assert_eq!(r.headers["x-ratelimit-limit"], "1000");
            assert_eq!(r.headers["x-ratelimit-remaining"], "0");
        }
    }
    let refused = ctx.get("/api/v1/users/me", Some(&s.access)).await;
    assert_eq!(refused.status, 429);
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&other.access))
            .await
            .status,
        200,
        "per user"
    );
    ctx.clock.advance(Duration::seconds(60));
    // The clock moved past the token's life too; sign in again.
    let fresh = ctx.login(&s.email, PASSWORD).await;
    let token = fresh.body["accessToken"].as_str().unwrap();
    assert_eq!(ctx.get("/api/v1/users/me", Some(token)).await.status, 200);
}

#[tokio::test]
async fn uploads_are_limited_to_10_per_minute_per_user() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    for _ in 0..10 {
        let r = ctx
            .post_empty("/api/v1/media/upload", Some(&s.access))
            .await;
        assert_ne!(r.status, 429);
        assert_eq!(r.headers["x-ratelimit-limit"], "10");
    }
    let refused = ctx
        .post_empty("/api/v1/media/upload", Some(&s.access))
        .await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        ctx.get("/api/v1/users/me", Some(&s.access)).await.status,
        200,
        "other routes keep their budget"
    );
    assert_eq!(
        ctx.post_empty("/api/v1/media/upload", None).await.status,
        401
    );
}

#[tokio::test]
async fn internal_routes_are_not_reachable() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    for token in [None, Some(s.access.as_str())] {
        let r = ctx
            .post("/api/v1/notifications/send", token, json!({}))
            .await;
        assert_eq!(r.status, 404);
        assert_eq!(r.body["code"], "not_found");
    }
}

#[tokio::test]
async fn forwarded_for_counts_only_behind_trusted_proxies() {
    for (trusted, separate) in [(vec!["127.0.0.1".to_string()], true), (vec![], false)] {
        let t = TestDb::new().await;
        let mut config = t.config.clone();
        config.gateway.public_per_minute = 2;
        config.gateway.trusted_proxies = trusted;
        let node = bilet::node::start(config).await.unwrap();
        let base = format!("http://{}", node.addrs[&domain::config::Service::Gateway]);
        let from = |ip: &str| {
            send(
                reqwest::Client::new()
                    .post(format!("{base}/api/v1/auth/logout"))
                    .header("X-Forwarded-For", ip)
                    .json(&json!({"refreshToken": "x"})),
            )
        };
        assert_eq!(from("198.51.100.1").await.status, 204);
        assert_eq!(from("198.51.100.1").await.status, 204);
        assert_eq!(from("198.51.100.1").await.status, 429);
        let other = from("198.51.100.2").await.status;
        assert_eq!(
            other == 204,
            separate,
            "trusted={separate}: another client IP has its own budget only behind a trusted proxy"
        );
        node.stop().await;
    }
}

/// A `bilet serve` process, killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn gateway_process(t: &TestDb, identity_url: &str, prefix: &str) -> (Process, String) {
    let port = crate::support::free_port();
    let dir = std::env::temp_dir().join(format!("bilet-gw-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        format!(
            r#"
node = "gw"
data_dir = "{dir}"
[database]
url = "{db}"
[auth]
jwt_secret = "test-secret-test-secret-test-secret"
service_secret = "test-service-secret-test-service-secret"
[redis]
url = "{redis}"
[gateway]
rate_limit_prefix = "{prefix}"
forward_timeout_ms = 3000
[services.gateway]
listen = "127.0.0.1:{port}"
url = "http://127.0.0.1:{port}"
[services.identity]
listen = "127.0.0.1:0"
url = "{identity_url}"
[[nodes]]
name = "gw"
services = ["gateway"]
"#,
            dir = dir.display(),
            db = t.url,
            redis = crate::support::redis_url(),
        ),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_bilet"))
        .args(["--config", file.to_str().unwrap(), "serve"])
        .env_remove("DATABASE_URL")
        .env_remove("REDIS_URL")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (Process(child), format!("http://127.0.0.1:{port}"))
}

#[tokio::test]
async fn two_gateway_processes_forward_and_share_one_budget_in_redis() {
    let t = TestDb::new().await;
    let mut config = t.config.clone();
    config.nodes.push(domain::config::NodeConfig {
        name: "identity".into(),
        services: vec![domain::config::Service::Identity],
        addresses: Default::default(),
    });
    config.node = "identity".into();
    let identity = bilet::node::start(config).await.unwrap();
    let identity_url = format!(
        "http://{}",
        identity.addrs[&domain::config::Service::Identity]
    );
    let prefix = format!("bilet:test:{}", uuid::Uuid::now_v7().simple());
    let (_a, a) = gateway_process(&t, &identity_url, &prefix);
    let (_b, b) = gateway_process(&t, &identity_url, &prefix);
    for base in [&a, &b] {
        assert!(
            eventually(60, || async {
                reqwest::get(format!("{base}/health/live")).await.is_ok()
            })
            .await,
            "{base} starts"
        );
    }

    // The budget is per fixed minute: start the 100 requests early in a minute so they all
    // fall into one window.
    let into_minute = chrono::Utc::now().timestamp() % 60;
    if into_minute > 45 {
        tokio::time::sleep(std::time::Duration::from_secs((61 - into_minute) as u64)).await;
    }
    // Forwarded to identity in another process, with the correlation id kept.
    let reply = send(
        reqwest::Client::new()
            .post(format!("{a}/api/v1/auth/refresh"))
            .header("X-Correlation-ID", "corr-42")
            .json(&json!({"refreshToken": "junk"})),
    )
    .await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.body["code"], "unauthorized");
    assert_eq!(reply.headers["x-correlation-id"], "corr-42");

    // 99 more requests split over both gateways use up the shared budget of 100.
    for i in 0..99 {
        let base = if i % 2 == 0 { &b } else { &a };
        let r = send(
            reqwest::Client::new()
                .post(format!("{base}/api/v1/auth/refresh"))
                .json(&json!({"refreshToken": "junk"})),
        )
        .await;
        assert_eq!(r.status, 401, "request {i}");
    }
    for base in [&a, &b] {
        let r = send(
            reqwest::Client::new()
                .post(format!("{base}/api/v1/auth/refresh"))
                .json(&json!({"refreshToken": "junk"})),
        )
        .await;
        assert_eq!(
            r.status, 429,
            "{base}: the 101st request, whichever gateway gets it"
        );
    }

    // A service that is down yields a clean 503 (authenticated requests still have budget).
    identity.stop().await;
    let user = domain::ids::UserId::new();
    let token = http::tokens::Tokens::new("test-secret-test-secret-test-secret")
        .issue(user, None, None, vec![], None, 0, chrono::Utc::now())
        .unwrap()
        .token;
    let down = send(
        reqwest::Client::new()
            .get(format!("{a}/api/v1/users/me"))
            .bearer_auth(token)
            .header("Accept-Language", "en"),
    )
    .await;
    assert_eq!(down.status, 503);
    assert_eq!(down.body["code"], "service_unavailable");
    assert_eq!(down.body["details"]["service"], "identity");
    assert_eq!(get(&format!("{a}/health/live"), None).await.status, 200);
}

#[tokio::test]
async fn refusals_at_the_door_count_against_the_ip_and_carry_the_headers() {
    let t = TestDb::new().await;
    let mut config = t.config.clone();
    config.gateway.public_per_minute = 3;
    let node = bilet::node::start(config).await.unwrap();
    let base = format!("http://{}", node.addrs[&domain::config::Service::Gateway]);
    let closed = get(&format!("{base}/api/v1/users/me"), None).await;
    assert_eq!(closed.status, 401);
    assert_eq!(closed.headers["x-ratelimit-remaining"], "2");
    let bad_token = send(
        reqwest::Client::new()
            .get(format!("{base}/api/v1/users/me"))
            .bearer_auth("guess"),
    )
    .await;
    assert_eq!(bad_token.status, 401);
    assert_eq!(bad_token.headers["x-ratelimit-remaining"], "1");
    assert_eq!(
        get(&format!("{base}/api/v1/nothing"), None).await.headers["x-ratelimit-remaining"],
        "0"
    );
    assert_eq!(
        get(&format!("{base}/api/v1/users/me"), None).await.status,
        429,
        "guessing runs into the limit"
    );
    node.stop().await;
}

#[tokio::test]
async fn sign_in_routes_count_per_ip_even_with_a_token() {
    let ctx = Ctx::with_config(|c| c.gateway.public_per_minute = 3).await;
    let s = ctx.user().await;
    // Sign-up and sign-in above already spent two of the IP's three; a valid token does not
    // move login attempts into the user's budget.
    let attempt = || {
        ctx.post(
            "/api/v1/auth/login",
            Some(&s.access),
            json!({"email": s.email, "password": "wrong-password-1"}),
        )
    };
    let first = attempt().await;
    assert_eq!(first.status, 401, "{}", first.body);
    assert_eq!(first.body["code"], "invalid_credentials");
    assert_eq!(first.headers["x-ratelimit-limit"], "3");
    assert_eq!(first.headers["x-ratelimit-remaining"], "0");
    let refused = attempt().await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body["code"], "rate_limit_exceeded");
    // The user's own budget is untouched: an authenticated route still answers.
    let me = ctx.get("/api/v1/users/me", Some(&s.access)).await;
    assert_eq!(me.status, 200);
    assert_eq!(me.headers["x-ratelimit-limit"], "1000");
}

#[tokio::test]
async fn ipv6_clients_count_per_64_and_every_forwarded_line_is_read() {
    let t = TestDb::new().await;
    let mut config = t.config.clone();
    config.gateway.public_per_minute = 2;
    config.gateway.trusted_proxies = vec!["127.0.0.1".into()];
    // A clock that stands still: the run cannot straddle two rate-limit windows.
    let clock = std::sync::Arc::new(domain::clock::ManualClock::new(chrono::Utc::now()));
    let node = bilet::node::start_with_clock(config, clock).await.unwrap();
    let base = format!("http://{}", node.addrs[&domain::config::Service::Gateway]);
    let from = |lines: Vec<&'static str>| {
        let mut request = reqwest::Client::new()
            .post(format!("{base}/api/v1/auth/logout"))
            .json(&json!({"refreshToken": "x"}));
        for line in lines {
            request = request.header("X-Forwarded-For", line);
        }
        send(request)
    };
    // Two addresses of one /64 share a budget.
    assert_eq!(from(vec!["2001:db8:aa:1::1"]).await.status, 204);
    assert_eq!(from(vec!["2001:db8:aa:1:ffff::2"]).await.status, 204);
    let refused = from(vec!["2001:db8:aa:1:1234::9"]).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body["code"], "rate_limit_exceeded");
    // Another /64 has its own.
    assert_eq!(from(vec!["2001:db8:aa:2::1"]).await.status, 204);
    // A client hiding behind a first header line: the nearest untrusted hop is on the last
    // line, and it is the one counted (198.51.100.7 spends its budget, not 203.0.113.1's).
    assert_eq!(from(vec!["203.0.113.1", "198.51.100.7"]).await.status, 204);
    assert_eq!(from(vec!["203.0.113.2", "198.51.100.7"]).await.status, 204);
    assert_eq!(
        from(vec!["203.0.113.3", "198.51.100.7"]).await.status,
        429,
        "the second line is the client"
    );
    assert_eq!(from(vec!["203.0.113.1"]).await.status, 204);
    node.stop().await;
}

#[tokio::test]
async fn ambiguous_paths_are_refused_before_anything_else() {
    let ctx = Ctx::new().await;
    let s = ctx.user().await;
    let gateway = ctx.base.trim_start_matches("http://").to_string();
    for target in [
        "/api/v1/events/../notifications/send",
        "/api/v1/events/%2e%2e/notifications/send",
        "/api/v1/events/%2E%2e/notifications/send",
        "/api/v1/notifications/./send",
        "/api/v1/events%2f..%2fnotifications%2fsend",
        "/api/v1//notifications/send",
        "/api/v1/notifications/%73end",
        "/api/v1/events/..%5cnotifications%5csend",
    ] {
        for token in [None, Some(s.access.as_str())] {
            let (status, body) =
                crate::doors::raw_request(&gateway, "POST", target, token, "{}").await;
            assert_eq!(status, 400, "{target}: {body}");
            assert_eq!(body["code"], "validation_error", "{target}");
            assert!(body["details"]["path"].is_string(), "{target}: {body}");
        }
    }
    // An ordinary path still works, and the literal internal route is hidden.
    let (status, body) =
        crate::doors::raw_request(&gateway, "GET", "/api/v1/users/me", Some(&s.access), "").await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = crate::doors::raw_request(
        &gateway,
        "POST",
        "/api/v1/notifications/send",
        Some(&s.access),
        "{}",
    )
    .await;
    assert_eq!(status, 404);
}
