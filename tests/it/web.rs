//! The web front through the gateway: its pages answer the single-page shell, its files come
//! with their content types and a strict content policy, nothing else leaks out of `web/`,
//! no page needs a token or spends the rate limit, and an event is found by its slug.

use crate::identity::{Ctx, Session};
use crate::ticketing::setup;
use serde_json::json;

async fn fetch(ctx: &Ctx, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let reply = reqwest::get(format!("{}{path}", ctx.base)).await.unwrap();
    let status = reply.status().as_u16();
    let headers = reply.headers().clone();
    (status, headers, reply.text().await.unwrap())
}

#[tokio::test]
async fn pages_answer_the_shell_and_files_come_typed_without_a_token() {
    let ctx = Ctx::new().await;
    for page in [
        "/",
        "/signin",
        "/signup",
        "/verify-email?token=abc",
        "/reset-password?token=abc",
        "/e/rock-night",
        "/me/tickets",
        "/org/events",
        "/admin/requests",
        "/door/",
        "/docs",
    ] {
        let (status, headers, body) = fetch(&ctx, page).await;
        assert_eq!(status, 200, "{page}: {body}");
        assert_eq!(
            headers["content-type"], "text/html; charset=utf-8",
            "{page}"
        );
        assert!(body.contains("<main id=\"app\""), "{page}");
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"));
        assert_eq!(headers["x-content-type-options"], "nosniff");
    }
    let (status, headers, body) = fetch(&ctx, "/app/main.js").await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/javascript; charset=utf-8");
    assert!(body.contains("import"), "an ES module");
    let (status, headers, _) = fetch(&ctx, "/app/style.css").await;
    assert_eq!(
        (status, headers["content-type"].to_str().unwrap()),
        (200, "text/css; charset=utf-8")
    );
    // Only the app's files: not the tests or notes of web/, not a path out of it. A missing
    // file is the API's 404; an address outside the API is the front's 404 page.
    let (status, _, body) = fetch(&ctx, "/app/missing.js").await;
    assert_eq!(status, 404, "{body}");
    let error: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(error["code"].is_string(), "{body}");
    for path in ["/app/../README.md", "/app/%2e%2e/README.md"] {
        let (status, _, body) = fetch(&ctx, path).await;
        assert!([400, 404].contains(&status), "{path}: {status} {body}");
        assert!(!body.contains("# web"), "{path}: not the notes of web/");
    }
    for path in [
        "/tests/qr.test.mjs",
        "/README.md",
        "/about",
        "/e",
        "/x/y/z?q=1",
    ] {
        let (status, headers, body) = fetch(&ctx, path).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(
            headers["content-type"], "text/html; charset=utf-8",
            "{path}"
        );
        assert!(
            body.contains("<main id=\"app\""),
            "{path}: the front draws its 404"
        );
        assert!(!body.contains("Quartets"), "{path}");
    }
    // A page load fetches many files: none of them counts against the public budget.
    let (_, headers, _) = fetch(&ctx, "/app/main.js").await;
    assert!(!headers.contains_key("x-ratelimit-remaining"));
}

/// `GET path` with `headers`.
async fn fetch_with(ctx: &Ctx, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    // reqwest would take gzip itself only with its `gzip` feature; the bytes are read as sent.
    let mut request = reqwest::Client::new().get(format!("{}{path}", ctx.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn files_come_compressed_validated_and_kept_by_release() {
    let ctx = Ctx::new().await;
    // The shell names this release's files below their version.
    let (_, headers, shell) = fetch(&ctx, "/").await;
    assert_eq!(headers["cache-control"], "no-cache");
    let start = shell.find("src=\"/app/").unwrap() + "src=\"".len();
    let main = &shell[start..start + shell[start..].find('"').unwrap()];
    assert!(
        main.ends_with("/main.js") && main.len() == "/app/".len() + 12 + "/main.js".len(),
        "{main}"
    );
    let permissions = headers["permissions-policy"].to_str().unwrap();
    assert!(permissions.contains("camera=(self)") && permissions.contains("geolocation=()"));
    assert!(
        !headers.contains_key("strict-transport-security"),
        "plain HTTP here"
    );

    // Kept a year there, compressed for a browser that takes gzip.
    let zipped = fetch_with(&ctx, main, &[("accept-encoding", "gzip, br")]).await;
    assert_eq!(zipped.status(), 200);
    let h = zipped.headers().clone();
    assert_eq!(h["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(h["content-encoding"], "gzip");
    assert_eq!(h["vary"], "Accept-Encoding");
    let packed = zipped.bytes().await.unwrap();
    let plain = fetch_with(&ctx, "/app/main.js", &[]).await;
    let plain_etag = plain.headers()["etag"].clone();
    assert_eq!(plain.headers()["cache-control"], "no-cache");
    assert!(!plain.headers().contains_key("content-encoding"));
    let plain = plain.bytes().await.unwrap();
    let mut unpacked = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(&packed[..]),
        &mut unpacked,
    )
    .unwrap();
    assert_eq!(unpacked, plain, "the same file");
    assert!(
        packed.len() * 2 < plain.len(),
        "{} of {}",
        packed.len(),
        plain.len()
    );
    assert_ne!(h["etag"], plain_etag, "two bodies, two tags");

    // Asked again with its tag: 304 and no body; another tag: the file.
    let again = fetch_with(
        &ctx,
        "/app/main.js",
        &[("if-none-match", plain_etag.to_str().unwrap())],
    )
    .await;
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["etag"], plain_etag);
    assert!(again.bytes().await.unwrap().is_empty());
    let stale = fetch_with(&ctx, "/app/main.js", &[("if-none-match", "\"0000\"")]).await;
    assert_eq!(stale.status(), 200);
    // An older release's address (a page loaded before a release) gets today's file, not kept.
    let older = fetch_with(&ctx, "/app/000000000000/main.js", &[]).await;
    assert_eq!(older.status(), 200);
    assert_eq!(older.headers()["cache-control"], "no-cache");

    // The favicon and robots.txt, with their types, no token and no rate limit spent.
    let icon = fetch_with(&ctx, "/favicon.ico", &[]).await;
    assert_eq!(icon.status(), 200);
    assert_eq!(icon.headers()["content-type"], "image/x-icon");
    assert!(!icon.headers().contains_key("x-ratelimit-remaining"));
    assert_eq!(
        &icon.bytes().await.unwrap()[..4],
        &[0, 0, 1, 0],
        "an ICO file"
    );
    let (status, headers, robots) = fetch(&ctx, "/robots.txt").await;
    assert_eq!(status, 200);
    assert_eq!(headers["content-type"], "text/plain; charset=utf-8");
    assert!(
        robots.contains("Disallow: /api/") && robots.contains("Disallow: /me/"),
        "{robots}"
    );
}

#[tokio::test]
async fn a_node_behind_tls_sends_hsts() {
    let ctx = Ctx::with_config(|c| c.http.public_url = "https://tickets.example".into()).await;
    let (_, headers, _) = fetch(&ctx, "/").await;
    assert_eq!(headers["strict-transport-security"], "max-age=15552000");
    let (_, headers, _) = fetch(&ctx, "/app/main.js").await;
    assert_eq!(headers["strict-transport-security"], "max-age=15552000");
}

/// A published event with a readable address and two free ticket types: (id, slug).
pub async fn published_with_slug(ctx: &Ctx, owner: &Session, title: &str) -> (String, String) {
    let free = |name: &str| json!({"name": name, "quantity": 50});
    published_with_types(ctx, owner, title, &[free("Stalls"), free("Balcony")]).await
}

/// A published event at `/e/{slug}` with these ticket types: (event id, slug).
pub async fn published_with_types(
    ctx: &Ctx,
    owner: &Session,
    title: &str,
    types: &[serde_json::Value],
) -> (String, String) {
    let slug = format!("show-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let starts = (chrono::Utc::now() + chrono::Duration::days(10)).to_rfc3339();
    let created = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": title, "slug": slug, "startsAt": starts, "description": "Quartets by candlelight."}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event = created.body["id"].as_str().unwrap().to_string();
    for ticket in types {
        let t = ctx
            .post(
                &format!("/api/v1/events/{event}/ticket-types"),
                Some(&owner.access),
                ticket.clone(),
            )
            .await;
        assert_eq!(t.status, 201, "{}", t.body);
    }
    let published = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/publish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(published.status, 200, "{}", published.body);
    (event, slug)
}

#[tokio::test]
async fn an_event_is_found_by_its_slug_as_its_viewer_may_see_it() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, slug) = published_with_slug(&ctx, &owner, "Strings").await;

    // Published: anyone, without a token.
    let found = ctx
        .get(&format!("/api/v1/events/by-slug/{slug}"), None)
        .await;
    assert_eq!(found.status, 200, "{}", found.body);
    assert_eq!(found.body["id"], event.as_str());
    assert_eq!(found.body["slug"], slug.as_str());
    let unknown = ctx.get("/api/v1/events/by-slug/no-such-event", None).await;
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.body["code"], "not_found");

    // Unpublished: its organization still sees it, a visitor does not.
    let back = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/unpublish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(
        ctx.get(&format!("/api/v1/events/by-slug/{slug}"), None)
            .await
            .status,
        404
    );
    let own = ctx
        .get(
            &format!("/api/v1/events/by-slug/{slug}"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(own.status, 200, "{}", own.body);
}

#[tokio::test]
async fn my_tickets_list_only_my_own_registrations_across_events() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (first, first_type) = setup(&ctx, &owner, json!({"name": "A", "quantity": 5})).await;
    let (second, second_type) = setup(&ctx, &owner, json!({"name": "B", "quantity": 5})).await;
    let ann = ctx.user().await;
    let bob = ctx.user().await;
    for (event, ticket_type, who) in [
        (&first, &first_type, &ann),
        (&second, &second_type, &ann),
        (&first, &first_type, &bob),
    ] {
        let r = crate::support::send(
            reqwest::Client::new()
                .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
                .bearer_auth(&who.access)
                .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
                .json(&json!({"ticketTypeId": ticket_type})),
        )
        .await;
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let mine = ctx.get("/api/v1/registrations", Some(&ann.access)).await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    let events: Vec<&str> = mine.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["eventId"].as_str().unwrap())
        .collect();
    assert_eq!(events.len(), 2, "{}", mine.body);
    assert!(events.contains(&first.as_str()) && events.contains(&second.as_str()));
    let filtered = ctx
        .get(
            &format!("/api/v1/registrations?ticketTypeId={second_type}"),
            Some(&ann.access),
        )
        .await;
    assert_eq!(filtered.body["data"].as_array().unwrap().len(), 1);
    let of_first = ctx
        .get(
            &format!("/api/v1/registrations?eventId={first}"),
            Some(&ann.access),
        )
        .await;
    assert_eq!(of_first.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(of_first.body["data"][0]["eventId"], first.as_str());
    // Refusals: no token, a bad filter, an unknown sort key.
    assert_eq!(ctx.get("/api/v1/registrations", None).await.status, 401);
    let bad = ctx
        .get("/api/v1/registrations?status=NOPE", Some(&ann.access))
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let sort = ctx
        .get("/api/v1/registrations?sort=password,asc", Some(&ann.access))
        .await;
    assert_eq!(sort.status, 400, "{}", sort.body);
}
