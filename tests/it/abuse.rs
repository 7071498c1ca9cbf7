//! Abuse through the gateway, driven by the OpenAPI document so no endpoint is forgotten:
//! every operation tried by another organization's owner with the first organization's ids
//! (nothing leaks, nothing changes), and every operation that takes a body given malformed,
//! deeply nested and oversized ones (a clear 4xx, never a 5xx).

use crate::identity::{Ctx, Session};
use crate::support::{Reply, send};
use serde_json::{Value, json};

/// Tenant A's resources, the ids the sweep substitutes, and texts that must never leak.
struct Victim {
    owner: Session,
    org: String,
    draft: String,
    ticket_type: String,
    registration: String,
    file: String,
    group: String,
    request: String,
    secrets: Vec<String>,
}

async fn victim(ctx: &Ctx) -> Victim {
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let draft = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Secret-Draft-Title", "startsAt": (chrono::Utc::now() + chrono::Duration::days(9)).to_rfc3339()}),
        )
        .await;
    let draft = draft.body["id"].as_str().unwrap().to_string();
    let t = ctx
        .post(
            &format!("/api/v1/events/{draft}/ticket-types"),
            Some(&owner.access),
            json!({"name": "Secret-Type", "quantity": 5}),
        )
        .await;
    let ticket_type = t.body["id"].as_str().unwrap().to_string();
    // A published event with a registration of someone in A.
    let (event, free) = crate::notifications::free_event(ctx, &owner, "Secret-Public").await;
    let participant = ctx.user().await;
    let reg = crate::notifications::register(ctx, &participant, &event, &free).await;
    let registration = reg["id"].as_str().unwrap().to_string();
    let code = reg["confirmationCode"].as_str().unwrap().to_string();
    let boundary = "sweep";
    let png = {
        let img = image::RgbImage::from_fn(8, 8, |x, y| image::Rgb([x as u8, y as u8, 3]));
        let mut out = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut out, image::ImageFormat::Png)
            .unwrap();
        out.into_inner()
    };
    let mut body = format!("--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"s.png\"\r\nContent-Type: image/png\r\n\r\n").into_bytes();
    body.extend_from_slice(&png);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let file = send(
        ctx.http
            .post(format!("{}/api/v1/media/upload", ctx.base))
            .bearer_auth(&owner.access)
            .header(
                "content-type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body),
    )
    .await;
    assert_eq!(file.status, 201, "{}", file.body);
    let group = ctx
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&owner.access),
            json!({"name": "Secret-Group"}),
        )
        .await;
    let request = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&participant.access),
            json!({"name": "Secret-Request", "slug": format!("sr-{}", &uuid::Uuid::now_v7().simple().to_string()[20..])}),
        )
        .await;
    Victim {
        secrets: vec![
            "Secret-Draft-Title".into(),
            "Secret-Type".into(),
            "Secret-Group".into(),
            "Secret-Request".into(),
            code,
            participant.email.clone(),
        ],
        owner,
        org,
        draft,
        ticket_type,
        registration,
        file: file.body["id"].as_str().unwrap().to_string(),
        group: group.body["id"].as_str().unwrap().to_string(),
        request: request.body["id"].as_str().unwrap().to_string(),
    }
}

/// The path with A's ids in place of its parameters; None for paths a stranger may use by
/// design (joining by an invite code, signed media links, the caller's own resources).
fn aimed(path: &str, v: &Victim) -> Option<String> {
    if !path.contains('{')
        || path.contains("/join/")
        || path.contains("{*key}")
        || path.contains("/files/")
    {
        return None;
    }
    let id = if path.starts_with("/api/v1/events/") || path.starts_with("/api/v1/analytics/events/")
    {
        &v.draft
    } else if path.starts_with("/api/v1/registrations/") {
        &v.registration
    } else if path.starts_with("/api/v1/media/") {
        &v.file
    } else if path.starts_with("/api/v1/organizations/")
        || path.starts_with("/api/v1/analytics/organizations/")
    {
        &v.org
    } else if path.starts_with("/api/v1/groups/") {
        &v.group
    } else if path.starts_with("/api/v1/organization-requests/") {
        &v.request
    } else {
        return None;
    };
    Some(
        path.replace("{id}", id)
            .replace("{typeId}", &v.ticket_type)
            .replace("{type_id}", &v.ticket_type)
            .replace("{user_id}", &v.owner.user_id)
            .replace("{userId}", &v.owner.user_id),
    )
}

/// A body that passes validation, so the sweep reaches the ownership checks behind it.
fn plausible_body(path: &str, method: &str) -> Value {
    let soon = (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339();
    match (method, path) {
        ("put", p)
            if p.ends_with("/ticket-types/{typeId}") || p.ends_with("/ticket-types/{type_id}") =>
        {
            json!({"name": "Hijacked", "quantity": 9})
        }
        ("post", p) if p.ends_with("/ticket-types") => json!({"name": "Hijacked", "quantity": 9}),
        ("put", "/api/v1/events/{id}") => json!({"title": "Hijacked", "startsAt": soon}),
        ("post", p) if p.ends_with("/registrations") => {
            json!({"ticketTypeId": uuid::Uuid::nil(), "firstName": "X", "lastName": "Y"})
        }
        ("post", "/api/v1/events/{id}/check-in") => json!({"confirmationCode": "ABCDEFGH"}),
        ("post", p) if p.ends_with("/waitlist") => json!({"ticketTypeId": uuid::Uuid::nil()}),
        ("put", "/api/v1/organizations/{id}") => json!({"name": "Hijacked"}),
        ("put", p) if p.ends_with("/members/{user_id}") || p.ends_with("/members/{userId}") => {
            json!({"role": "MODERATOR"})
        }
        ("post", p) if p.ends_with("/groups") => json!({"name": "Hijacked"}),
        ("put", "/api/v1/groups/{id}") => json!({"name": "Hijacked"}),
        ("post", p) if p.ends_with("/reject") => json!({"reason": "no"}),
        _ => json!({}),
    }
}

async fn call(ctx: &Ctx, method: &str, path: &str, token: &str, body: Option<&[u8]>) -> Reply {
    let url = format!("{}{path}", ctx.base);
    let mut request = match method {
        "get" => ctx.http.get(&url),
        "post" => ctx.http.post(&url),
        "put" => ctx.http.put(&url),
        "delete" => ctx.http.delete(&url),
        "patch" => ctx.http.patch(&url),
        other => panic!("method {other}"),
    }
    .bearer_auth(token)
    .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string());
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_vec());
    }
    send(request).await
}

/// Every (method, path template, takes a JSON body) of the API document.
async fn operations(ctx: &Ctx) -> Vec<(String, String, bool)> {
    let doc = ctx
        .http
        .get(format!("{}/api/v1/openapi.json", ctx.base))
        .send()
        .await
        .unwrap();
    let doc: Value = doc.json().await.unwrap();
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["get", "post", "put", "delete", "patch"] {
            if let Some(op) = item.get(method) {
                let json_body = op["requestBody"]["content"]
                    .get("application/json")
                    .is_some();
                out.push((method.to_string(), path.clone(), json_body));
            }
        }
    }
    assert!(
        out.len() > 50,
        "the document lists the API ({} operations)",
        out.len()
    );
    out
}

#[tokio::test]
async fn another_tenant_gets_nothing_from_any_endpoint_with_our_ids() {
    let ctx = Ctx::with_config(|c| {
        // The payment webhook answers for its input, not 503 for a missing secret.
        c.payments.webhook_secret = Some(domain::config::Secret::new("abuse-webhook-secret"));
    })
    .await;
    let v = victim(&ctx).await;
    let admin = ctx.admin().await;
    let (stranger, _) = ctx.owner(&admin).await;
    let mut tried = 0;
    for (method, template, _) in operations(&ctx).await {
        let Some(path) = aimed(&template, &v) else {
            continue;
        };
        let body = serde_json::to_vec(&plausible_body(&template, &method)).unwrap();
        let r = call(&ctx, &method, &path, &stranger.access, Some(&body)).await;
        tried += 1;
        assert!(
            matches!(r.status, 400 | 403 | 404 | 405 | 409 | 422),
            "{method} {template} as another tenant answered {}: {}",
            r.status,
            r.body
        );
        let text = r.body.to_string();
        for secret in &v.secrets {
            assert!(
                !text.contains(secret.as_str()),
                "{method} {template} leaked {secret}: {text}"
            );
        }
    }
    assert!(tried >= 30, "{tried} operations aimed at tenant A");

    // Nothing of A changed.
    let draft = ctx
        .get(
            &format!("/api/v1/events/{}", v.draft),
            Some(&v.owner.access),
        )
        .await;
    assert_eq!(
        (draft.body["status"].as_str(), draft.body["title"].as_str()),
        (Some("DRAFT"), Some("Secret-Draft-Title"))
    );
    let types = ctx
        .get(
            &format!("/api/v1/events/{}/ticket-types", v.draft),
            Some(&v.owner.access),
        )
        .await;
    assert_eq!(
        types.body["data"][0]["name"], "Secret-Type",
        "{}",
        types.body
    );
    let reg = ctx
        .get(
            &format!("/api/v1/registrations/{}", v.registration),
            Some(&v.owner.access),
        )
        .await;
    assert_eq!(reg.body["status"], "CONFIRMED", "{}", reg.body);
    assert_eq!(
        ctx.get(&format!("/api/v1/media/{}", v.file), Some(&v.owner.access))
            .await
            .status,
        200
    );
    let group = ctx
        .get(
            &format!("/api/v1/groups/{}", v.group),
            Some(&v.owner.access),
        )
        .await;
    assert_eq!(group.body["name"], "Secret-Group", "{}", group.body);
    let org = ctx
        .get(
            &format!("/api/v1/organizations/{}", v.org),
            Some(&v.owner.access),
        )
        .await;
    assert_eq!(org.status, 200, "{}", org.body);
}

#[tokio::test]
async fn malformed_nested_and_oversized_bodies_are_refused_cleanly_everywhere() {
    let ctx = Ctx::with_config(|c| {
        // The payment webhook answers for its input, not 503 for a missing secret.
        c.payments.webhook_secret = Some(domain::config::Secret::new("abuse-webhook-secret"));
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let nested = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let nested_object = format!("{}1{}", "{\"a\":".repeat(50_000), "}".repeat(50_000));
    let huge = format!("{{\"title\": \"{}\"}}", "x".repeat(3 << 20));
    let bad: [(&str, &[u8]); 5] = [
        ("truncated", b"{\"title\": "),
        ("not json", b"<xml/>"),
        ("nested arrays", nested.as_bytes()),
        ("nested objects", nested_object.as_bytes()),
        ("3 MB", huge.as_bytes()),
    ];
    let mut tried = 0;
    for (method, template, json_body) in operations(&ctx).await {
        if !json_body {
            continue;
        }
        let path = template
            .replace("{*key}", "x")
            .replace("{code}", "CODE")
            .replace("{inviteCode}", "CODE");
        let path = path
            .split('/')
            .map(|seg| {
                if seg.starts_with('{') {
                    uuid::Uuid::now_v7().to_string()
                } else {
                    seg.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("/");
        for (name, body) in bad {
            let r = call(&ctx, &method, &path, &owner.access, Some(body)).await;
            tried += 1;
            assert!(
                (400..500).contains(&r.status),
                "{method} {template} with a {name} body answered {}: {}",
                r.status,
                r.body
            );
            assert!(
                r.body["code"].is_string(),
                "{method} {template} {name}: error body {}",
                r.body
            );
        }
    }
    assert!(tried > 80, "{tried}");
}

#[tokio::test]
async fn text_the_database_cannot_store_is_refused_as_bad_input() {
    let ctx = Ctx::with_config(|c| {
        // The payment webhook answers for its input, not 503 for a missing secret.
        c.payments.webhook_secret = Some(domain::config::Secret::new("abuse-webhook-secret"));
    })
    .await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    // A NUL byte in a JSON string and in a query parameter (found by schemathesis as a 500).
    let r = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "a\u{0}b", "startsAt": (chrono::Utc::now() + chrono::Duration::days(9)).to_rfc3339()}),
        )
        .await;
    assert_eq!(
        (r.status, r.body["code"].as_str()),
        (400, Some("validation_error")),
        "{}",
        r.body
    );
    let r = ctx
        .get("/api/v1/auth/verify-email?token=%00abc", None)
        .await;
    assert!((400..500).contains(&r.status), "{} {}", r.status, r.body);
    let events = ctx
        .get("/api/v1/events?size=100", Some(&owner.access))
        .await;
    assert_eq!(
        events.body["totalElements"], 0,
        "nothing stored: {}",
        events.body
    );
}
