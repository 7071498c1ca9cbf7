//! The doors of a multi-process deployment, tried as an attacker would: the gateway and every
//! service as separate `bilet serve` processes, then every trick against every service port
//! and every internal route. Each refusal must be a clear 4xx body; nothing may get through.

use crate::fake_telegram::FakeTelegram;
use crate::scenario::cluster::Cluster;
use crate::support::{SERVICE_SECRET, TestDb, send, signed};
use domain::config::Service;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends a request with exactly this request target (no client-side normalization, unlike
/// reqwest's URL parser) and answers (status, JSON body or Null).
pub async fn raw_request(
    host: &str,
    method: &str,
    target: &str,
    token: Option<&str>,
    body: &str,
) -> (u16, Value) {
    raw_with_headers(host, method, target, token, &[], body).await
}

/// As `raw_request`, with extra header lines.
pub async fn raw_with_headers(
    host: &str,
    method: &str,
    target: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {host}\r\nAccept-Language: en\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, payload) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let payload = if chunked {
        dechunk(payload)
    } else {
        payload.to_string()
    };
    (
        status,
        serde_json::from_str(&payload).unwrap_or(Value::Null),
    )
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// A route of each service, with a body where it takes one.
fn service_routes(org: &str) -> Vec<(&'static str, &'static str, String, &'static str)> {
    vec![
        ("identity", "GET", "/api/v1/users/me".into(), ""),
        (
            "identity",
            "POST",
            format!("/api/v1/organizations/{org}/switch"),
            "",
        ),
        ("events", "GET", "/api/v1/events".into(), ""),
        (
            "events",
            "POST",
            "/api/v1/events".into(),
            r#"{"title":"x"}"#,
        ),
        (
            "notifications",
            "GET",
            "/api/v1/notifications/preferences".into(),
            "",
        ),
        (
            "notifications",
            "POST",
            "/api/v1/notifications/send".into(),
            r#"{"userId":"0190a000-0000-7000-8000-000000000001","template":"event.cancelled","variables":{}}"#,
        ),
        ("media", "GET", format!("/api/v1/media/{org}"), ""),
        (
            "analytics",
            "POST",
            "/api/v1/analytics/track".into(),
            r#"{"type":"page.view","eventId":"0190a000-0000-7000-8000-000000000001"}"#,
        ),
        (
            "analytics",
            "GET",
            format!("/api/v1/analytics/organizations/{org}/report"),
            "",
        ),
    ]
}

fn assert_clear_refusal(what: &str, status: u16, body: &Value, expected: u16, code: &str) {
    assert_eq!(status, expected, "{what}: {body}");
    assert_eq!(body["code"], code, "{what}: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: a readable message: {body}"
    );
}

#[tokio::test]
async fn no_trick_gets_through_a_multi_process_deployment() {
    let t = TestDb::new().await;
    let telegram = FakeTelegram::start().await;
    let cluster = Cluster::start(&t, &telegram).await;
    let platform = cluster.platform(&t, telegram).await;
    let host = |service: &str| {
        cluster.urls[service]
            .trim_start_matches("http://")
            .to_string()
    };
    let gateway = host("gateway");

    // An organization owner, and an attacker with an ordinary account.
    let admin = platform.user("Admin").await;
    storage::identity::admins::grant(&t.db, &admin.email)
        .await
        .unwrap();
    let owner = platform.user("Owner").await;
    let org = crate::scenario::organization(&platform, &admin, &owner).await;
    let attacker = platform.user("Mallory").await;
    let http = reqwest::Client::new();

    // Through the gateway, across processes, the signed path works for everyone it should.
    let me = send(
        http.get(format!("{}/api/v1/users/me", cluster.urls["gateway"]))
            .bearer_auth(&attacker.access),
    )
    .await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.body["email"], attacker.email.as_str());

    // 1. Dot segments and encodings towards the internal send route, with and without a token.
    let mut tried = 0;
    for target in [
        "/api/v1/events/../notifications/send",
        "/api/v1/events/%2e%2e/notifications/send",
        "/api/v1/events/%2E%2E/notifications/send",
        "/api/v1/events/.%2e/notifications/send",
        "/api/v1/notifications/./send",
        "/api/v1/notifications/%2e/send",
        "/api/v1/events%2f..%2fnotifications%2fsend",
        "/api/v1/events/..%2fnotifications/send",
        "/api/v1/events/..%5cnotifications/send",
        "/api/v1/events\\..\\notifications\\send",
        "/api/v1//notifications/send",
        "/api/v1/notifications/%73end",
        "/api/v1/events/%252e%252e/notifications/send",
        "/internal/../api/v1/notifications/send",
        "/api/v1/media/../../internal/media/files",
    ] {
        for token in [None, Some(attacker.access.as_str())] {
            let (status, body) = raw_request(
                &gateway,
                "POST",
                target,
                token,
                r#"{"userId":"0190a000-0000-7000-8000-000000000001","template":"event.cancelled","variables":{}}"#,
            )
            .await;
            assert_clear_refusal(target, status, &body, 400, "validation_error");
            assert!(body["details"]["path"].is_string(), "{target}: {body}");
            tried += 1;
        }
    }
    // The internal routes by their own names: hidden at the gateway.
    for target in [
        "/api/v1/notifications/send",
        "/api/v1/notifications/send/",
        "/internal/media/files",
        "/internal",
    ] {
        let (status, body) =
            raw_request(&gateway, "POST", target, Some(&attacker.access), "{}").await;
        assert_clear_refusal(target, status, &body, 404, "not_found");
        tried += 1;
    }

    // 2. Every service port, every way of pretending to be the gateway.
    let forged_identity = [
        ("X-User-Id", owner.user_id.as_str()),
        ("X-Tenant-Id", org.as_str()),
        ("X-User-Roles", "OWNER"),
    ];
    let wrong_secret = http::trust::Trust::new(b"not-the-cluster-secret-not-the-cluster");
    for (service, method, path, body) in service_routes(&org) {
        let what = format!("{method} {service}{path}");
        let url = format!("{}{path}", cluster.urls[service]);
        let method: reqwest::Method = method.parse().unwrap();
        let with_body = |r: reqwest::RequestBuilder| {
            if body.is_empty() {
                r
            } else {
                r.header("content-type", "application/json")
                    .body(body.to_string())
            }
        };
        // a) forged identity headers, no assertion
        let mut r = http
            .request(method.clone(), &url)
            .header("Accept-Language", "en");
        for (name, value) in forged_identity {
            r = r.header(name, value);
        }
        let reply = send(with_body(r)).await;
        assert_clear_refusal(
            &format!("{what} unsigned"),
            reply.status,
            &reply.body,
            401,
            "unauthorized",
        );
        assert_eq!(reply.body["details"]["reason"], "no service assertion");
        // b) a made-up assertion
        let mut r = http
            .request(method.clone(), &url)
            .header("Accept-Language", "en")
            .header("X-Bilet-Assertion", "v1.gateway.1.deadbeef");
        for (name, value) in forged_identity {
            r = r.header(name, value);
        }
        let reply = send(with_body(r)).await;
        assert_clear_refusal(
            &format!("{what} made up"),
            reply.status,
            &reply.body,
            401,
            "unauthorized",
        );
        // c) signed with another secret
        let parsed = reqwest::Url::parse(&url).unwrap();
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in forged_identity {
            headers.insert(name, value.parse().unwrap());
        }
        wrong_secret.sign(Service::Gateway, &method, &parsed, &mut headers);
        let reply = send(with_body(
            http.request(method.clone(), parsed.clone())
                .headers(headers)
                .header("Accept-Language", "en"),
        ))
        .await;
        assert_clear_refusal(
            &format!("{what} other secret"),
            reply.status,
            &reply.body,
            401,
            "unauthorized",
        );
        assert_eq!(
            reply.body["details"]["reason"],
            "service assertion does not match the request"
        );
        // d) the right secret, two minutes old, and at the ends of time (which once overflowed
        //    `(now - at).abs()`: a panic and a 500 in a debug build)
        let target = match parsed.query() {
            Some(q) => format!("{}?{q}", parsed.path()),
            None => parsed.path().to_string(),
        };
        for at in [chrono::Utc::now().timestamp() - 120, i64::MIN, i64::MAX] {
            let stale = domain::trust::sign(
                SERVICE_SECRET.as_bytes(),
                Service::Gateway,
                at,
                &domain::trust::Request {
                    method: method.as_str(),
                    target: &target,
                    user: &owner.user_id,
                    tenant: &org,
                    roles: "OWNER",
                },
            );
            let mut r = http
                .request(method.clone(), &url)
                .header("Accept-Language", "en")
                .header("X-Bilet-Assertion", stale);
            for (name, value) in forged_identity {
                r = r.header(name, value);
            }
            let reply = send(with_body(r)).await;
            assert_clear_refusal(
                &format!("{what} stale at {at}"),
                reply.status,
                &reply.body,
                401,
                "unauthorized",
            );
            assert_eq!(reply.body["details"]["reason"], "stale service assertion");
        }
        // e) a genuine assertion of the attacker's own request, replayed with the owner's
        //    identity (roles raised, user swapped)
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("x-user-id", attacker.user_id.parse().unwrap());
        http::trust::Trust::new(SERVICE_SECRET.as_bytes()).sign(
            Service::Gateway,
            &method,
            &parsed,
            &mut headers,
        );
        let assertion = headers["x-bilet-assertion"].to_str().unwrap().to_string();
        let mut r = http
            .request(method.clone(), &url)
            .header("Accept-Language", "en")
            .header("X-Bilet-Assertion", &assertion);
        for (name, value) in forged_identity {
            r = r.header(name, value);
        }
        let reply = send(with_body(r)).await;
        assert_clear_refusal(
            &format!("{what} replayed"),
            reply.status,
            &reply.body,
            401,
            "unauthorized",
        );
        // f) the attacker's genuine assertion, sent to the same real route with another
        //    query: the assertion is bound to the exact target
        let other_target = if url.contains('?') {
            format!("{url}&x=1")
        } else {
            format!("{url}?x=1")
        };
        let reply = send(with_body(
            http.request(method.clone(), &other_target)
                .header("Accept-Language", "en")
                .header("X-Bilet-Assertion", &assertion)
                .header("X-User-Id", attacker.user_id.as_str()),
        ))
        .await;
        assert_clear_refusal(
            &format!("{what} other target"),
            reply.status,
            &reply.body,
            401,
            "unauthorized",
        );
        assert_eq!(
            reply.body["details"]["reason"],
            "service assertion does not match the request"
        );
        // g) a service's own valid assertion for the internal route, sent with a dot-segment
        //    spelling of it: the service checks the target it received, not a normalized one
        let internal = "/api/v1/notifications/send";
        let service_assertion = domain::trust::sign(
            SERVICE_SECRET.as_bytes(),
            Service::Events,
            chrono::Utc::now().timestamp(),
            &domain::trust::Request {
                method: "POST",
                target: internal,
                ..Default::default()
            },
        );
        let (status, body) = raw_with_headers(
            &host(service),
            "POST",
            "/api/v1/x/../notifications/send",
            None,
            &[("X-Bilet-Assertion", service_assertion.as_str())],
            "{}",
        )
        .await;
        assert_clear_refusal(
            &format!("{service} dot segments"),
            status,
            &body,
            401,
            "unauthorized",
        );
        assert_eq!(
            body["details"]["reason"],
            "service assertion does not match the request"
        );
        tried += 7;
    }

    // 3. The forged-header route to an OWNER token (issue 15): nothing signed by identity.
    let (status, body) = raw_with_headers(
        &host("identity"),
        "POST",
        &format!("/api/v1/organizations/{org}/switch"),
        None,
        &[("X-User-Id", owner.user_id.as_str())],
        "",
    )
    .await;
    assert_clear_refusal(
        "switch with a forged user",
        status,
        &body,
        401,
        "unauthorized",
    );
    assert!(body.get("accessToken").is_none());

    // 4. Internal routes need a service's signature: a gateway's is not enough.
    let send_url = format!(
        "{}/api/v1/notifications/send",
        cluster.urls["notifications"]
    );
    let payload = json!({"userId": attacker.user_id, "template": "event.cancelled",
        "variables": {"eventTitle": "Fake"}});
    let as_gateway = send(
        signed(
            &http,
            reqwest::Method::POST,
            &send_url,
            Service::Gateway,
            &[("x-user-id", attacker.user_id.as_str())],
        )
        .header("Accept-Language", "en")
        .json(&payload),
    )
    .await;
    assert_clear_refusal(
        "send signed by a gateway",
        as_gateway.status,
        &as_gateway.body,
        403,
        "forbidden",
    );
    let as_service = send(
        signed(
            &http,
            reqwest::Method::POST,
            &send_url,
            Service::Events,
            &[],
        )
        .json(&payload),
    )
    .await;
    assert_eq!(as_service.status, 202, "a service may: {}", as_service.body);

    // The media service's internal route, the same way.
    let attachable = format!(
        "{}/internal/media/files/{}/attachable?user={}",
        cluster.urls["media"],
        uuid::Uuid::now_v7(),
        attacker.user_id
    );
    let unsigned = send(http.get(&attachable).header("Accept-Language", "en")).await;
    assert_clear_refusal(
        "attachable unsigned",
        unsigned.status,
        &unsigned.body,
        401,
        "unauthorized",
    );
    let as_gateway = send(
        signed(
            &http,
            reqwest::Method::GET,
            &attachable,
            Service::Gateway,
            &[],
        )
        .header("Accept-Language", "en"),
    )
    .await;
    assert_clear_refusal(
        "attachable signed by a gateway",
        as_gateway.status,
        &as_gateway.body,
        403,
        "forbidden",
    );
    let as_service = send(signed(
        &http,
        reqwest::Method::GET,
        &attachable,
        Service::Identity,
        &[],
    ))
    .await;
    assert_eq!(as_service.status, 200, "{}", as_service.body);
    assert_eq!(
        as_service.body["attachable"], false,
        "an unknown file is not attachable"
    );
    tried += 2;

    // Nothing the attacker did queued a message other than the service's own.
    let owner_db = t.owner().await;
    let queued: i64 = owner_db
        .query_one(
            "SELECT count(*) FROM notification_service.messages WHERE kind = 'event.cancelled'",
            &[],
        )
        .await
        .map(|row| row.get(0))
        .unwrap_or(-1);
    assert_eq!(queued, 1, "only the signed service call queued a message");
    println!("doors: {tried} tricks refused with a clear 4xx; 1 signed service call accepted");
}
