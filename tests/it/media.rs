//! The media service against both stores (the local directory and the S3 server `make test`
//! starts): every refused upload, variant sizes for landscape, portrait and tiny images, signed
//! links that work within the hour and fail after, deletion, tenant isolation, and the cleanup
//! removing exactly the unattached old files.

use crate::identity::{Ctx, Session};
use crate::support::{Reply, eventually, send};
use chrono::Duration;
use domain::clock::Clock;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage, Rgba, RgbaImage};
use serde_json::{Value, json};
use std::io::Cursor;

/// Which object store a context uses.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Store {
    Local,
    S3,
}

async fn context(store: Store) -> Ctx {
    Ctx::with_config(|c| {
        if store == Store::S3 {
            let env =
                |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} (make test sets it)"));
            c.storage.endpoint = Some(env("STORAGE_ENDPOINT"));
            c.storage.access_key = Some(domain::config::Secret::new(env("STORAGE_ACCESS_KEY")));
            c.storage.secret_key = Some(domain::config::Secret::new(env("STORAGE_SECRET_KEY")));
            c.storage.bucket = env("STORAGE_BUCKET");
            c.storage.region = env("STORAGE_REGION");
        }
    })
    .await
}

fn encode(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn landscape_jpeg() -> Vec<u8> {
    let img = RgbImage::from_fn(1600, 900, |x, y| {
        Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    });
    encode(DynamicImage::ImageRgb8(img), ImageFormat::Jpeg)
}

fn portrait_png() -> Vec<u8> {
    let img = RgbaImage::from_fn(800, 2000, |x, y| {
        Rgba([(x % 256) as u8, (y % 256) as u8, 30, 200])
    });
    encode(DynamicImage::ImageRgba8(img), ImageFormat::Png)
}

fn tiny_gif() -> Vec<u8> {
    let img = RgbaImage::from_fn(40, 30, |x, _| Rgba([x as u8 * 6, 10, 10, 255]));
    encode(DynamicImage::ImageRgba8(img), ImageFormat::Gif)
}

/// A JPEG whose header claims 60000×60000 pixels: refused before any decoding.
fn bomb_jpeg() -> Vec<u8> {
    let mut bytes = encode(
        DynamicImage::ImageRgb8(RgbImage::new(8, 8)),
        ImageFormat::Jpeg,
    );
    let sof = bytes
        .windows(2)
        .position(|w| w[0] == 0xFF && (w[1] == 0xC0 || w[1] == 0xC2))
        .expect("a SOF marker");
    // Marker, length (2), precision (1), then height and width (2 each).
    bytes[sof + 5..sof + 7].copy_from_slice(&60000u16.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&60000u16.to_be_bytes());
    bytes
}

/// Uploads `bytes` as the multipart field `field`, declaring `content_type` if given.
async fn upload(
    ctx: &Ctx,
    token: &str,
    field: &str,
    bytes: &[u8],
    content_type: Option<&str>,
) -> Reply {
    let boundary = "bilet-test-boundary-7f3a";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"pic\"\r\n"
    )
    .into_bytes();
    if let Some(ct) = content_type {
        body.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
    }
    body.extend_from_slice(b"\r\n");
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    send(
        ctx.http
            .post(format!("{}/api/v1/media/upload", ctx.base))
            .bearer_auth(token)
            .header("Accept-Language", "en")
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body),
    )
    .await
}

async fn ready(ctx: &Ctx, token: &str, id: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        last = ctx
            .get(&format!("/api/v1/media/{id}"), Some(token))
            .await
            .body;
        if last["status"] == "READY" {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("file {id} never became READY: {last}");
}

fn variant_sizes(file: &Value) -> Vec<(String, i64, i64)> {
    file["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["variant"].as_str().unwrap().to_string(),
                v["width"].as_i64().unwrap(),
                v["height"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Fetches a signed link; local links point at the configured public URL, so they are sent
/// to the test's gateway instead.
async fn fetch(ctx: &Ctx, url: &str) -> (u16, Vec<u8>) {
    let target = match url.find("/api/v1/media/files/") {
        Some(at) => format!("{}{}", ctx.base, &url[at..]),
        None => url.to_string(),
    };
    let response = ctx
        .http
        .get(target)
        .header("Accept-Language", "en")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap().to_vec())
}

async fn link(ctx: &Ctx, token: &str, id: &str, variant: &str) -> Reply {
    ctx.get(
        &format!("/api/v1/media/{id}/url?variant={variant}"),
        Some(token),
    )
    .await
}

async fn refused_uploads(ctx: &Ctx, user: &Session) {
    let token = &user.access;
    let r = upload(ctx, token, "file", b"", Some("image/png")).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["details"]["file"], "The file is empty");

    let r = upload(ctx, token, "file", b"just some text", Some("text/plain")).await;
    assert_eq!(r.status, 415, "{}", r.body);
    assert_eq!(r.body["code"], "unsupported_media_type");

    let r = upload(ctx, token, "file", &portrait_png(), Some("image/jpeg")).await;
    assert_eq!(
        r.status, 415,
        "the declared type is not trusted: {}",
        r.body
    );
    assert_eq!(r.body["details"]["detected"], "image/png");

    let mut big = landscape_jpeg();
    big.resize(5 * 1024 * 1024 + 1, 0);
    let r = upload(ctx, token, "file", &big, Some("image/jpeg")).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert_eq!(r.body["details"]["maxBytes"], 5 * 1024 * 1024);

    let mut pdf = b"%PDF-1.4\n".to_vec();
    pdf.resize(10 * 1024 * 1024 + 1, b' ');
    let r = upload(ctx, token, "file", &pdf, Some("application/pdf")).await;
    assert_eq!(r.status, 413, "{}", r.body);

    let r = upload(ctx, token, "file", &bomb_jpeg(), Some("image/jpeg")).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.body["details"]["file"],
        "The image dimensions are too large"
    );

    let r = upload(ctx, token, "other", &tiny_gif(), None).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.body["details"]["other"], "Unknown field");

    let r = send(
        ctx.http
            .post(format!("{}/api/v1/media/upload", ctx.base))
            .bearer_auth(token)
            .json(&json!({"file": "x"})),
    )
    .await;
    assert_eq!(r.status, 415, "{}", r.body);

    let anonymous = send(
        ctx.http
            .post(format!("{}/api/v1/media/upload", ctx.base))
            .body("x"),
    )
    .await;
    assert_eq!(anonymous.status, 401);

    // Nothing of the refused uploads was recorded.
    let rows: i64 = ctx
        .t
        .owner()
        .await
        .query_one("SELECT count(*) FROM media_service.files", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 0);
}

async fn variants_and_links(ctx: &Ctx, user: &Session, store: Store) {
    let token = &user.access;
    let landscape = upload(ctx, token, "file", &landscape_jpeg(), Some("image/jpeg")).await;
    assert_eq!(landscape.status, 201, "{}", landscape.body);
    assert_eq!(landscape.body["status"], "PROCESSING");
    assert_eq!(landscape.body["contentType"], "image/jpeg");
    assert_eq!(
        (
            landscape.body["width"].as_i64(),
            landscape.body["height"].as_i64()
        ),
        (Some(1600), Some(900))
    );
    let id = landscape.body["id"].as_str().unwrap().to_string();
    let file = ready(ctx, token, &id).await;
    assert_eq!(
        variant_sizes(&file),
        vec![
            ("THUMBNAIL".into(), 150, 84),
            ("SMALL".into(), 300, 169),
            ("MEDIUM".into(), 600, 338),
            ("LARGE".into(), 1200, 675)
        ]
    );

    let portrait = upload(ctx, token, "file", &portrait_png(), None).await;
    assert_eq!(portrait.status, 201, "{}", portrait.body);
    let portrait = ready(ctx, token, portrait.body["id"].as_str().unwrap()).await;
    assert_eq!(
        variant_sizes(&portrait),
        vec![
            ("THUMBNAIL".into(), 60, 150),
            ("SMALL".into(), 120, 300),
            ("MEDIUM".into(), 240, 600),
            ("LARGE".into(), 480, 1200)
        ]
    );
    assert!(
        portrait["variants"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v["contentType"] == "image/png"),
        "transparency is kept"
    );

    let tiny = upload(ctx, token, "file", &tiny_gif(), Some("image/gif")).await;
    assert_eq!(tiny.status, 201, "{}", tiny.body);
    let tiny = ready(ctx, token, tiny.body["id"].as_str().unwrap()).await;
    assert!(
        variant_sizes(&tiny)
            .iter()
            .all(|(_, w, h)| (*w, *h) == (40, 30)),
        "a tiny image is never enlarged: {tiny}"
    );

    let pdf = upload(
        ctx,
        token,
        "file",
        b"%PDF-1.4\n%tiny\n",
        Some("application/pdf"),
    )
    .await;
    assert_eq!(pdf.status, 201, "{}", pdf.body);
    assert_eq!(pdf.body["status"], "READY");
    let pdf_id = pdf.body["id"].as_str().unwrap();
    assert_eq!(link(ctx, token, pdf_id, "THUMBNAIL").await.status, 422);
    assert_eq!(link(ctx, token, &id, "HUGE").await.status, 400);

    // A link works within the hour: the variant's bytes are the variant's size.
    let r = link(ctx, token, &id, "SMALL").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let url = r.body["url"].as_str().unwrap().to_string();
    if store == Store::S3 {
        assert!(url.contains("X-Amz-Signature="), "{url}");
    }
    let (status, bytes) = fetch(ctx, &url).await;
    assert_eq!(status, 200);
    let small = image::load_from_memory(&bytes).unwrap();
    assert_eq!((small.width(), small.height()), (300, 169));
    let (status, original) = fetch(
        ctx,
        link(ctx, token, &id, "ORIGINAL").await.body["url"]
            .as_str()
            .unwrap(),
    )
    .await;
    assert_eq!((status, original.len()), (200, landscape_jpeg().len()));

    // An altered link is refused.
    let altered = url.replacen("small", "large", 1);
    assert_ne!(altered, url);
    assert_eq!(fetch(ctx, &altered).await.0, 403);

    // After the hour the link is refused. Locally bilet checks it against its clock; the S3
    // server checks against real time and object_store signs at real time, so there the
    // link states its hour (and a link that outlives its lifetime is refused in
    // `s3_presigned_links_are_checked_by_the_server`).
    match store {
        Store::Local => {
            ctx.clock.advance(Duration::minutes(61));
            let (status, body) = fetch(ctx, &url).await;
            ctx.clock.advance(-Duration::minutes(61));
            assert_eq!(status, 403);
            assert!(String::from_utf8_lossy(&body).contains("expired"));
        }
        Store::S3 => {
            assert!(url.contains("X-Amz-Expires=3600"), "{url}");
            assert_eq!(
                r.body["expiresAt"],
                json!(ctx.clock.now() + Duration::hours(1))
            );
        }
    }

    // Another user sees nothing of it and cannot delete it.
    let other = ctx.user().await;
    assert_eq!(
        ctx.get(&format!("/api/v1/media/{id}"), Some(&other.access))
            .await
            .status,
        404
    );
    assert_eq!(link(ctx, &other.access, &id, "SMALL").await.status, 404);
    let r = send(
        ctx.http
            .delete(format!("{}/api/v1/media/{id}", ctx.base))
            .bearer_auth(&other.access),
    )
    .await;
    assert_eq!(r.status, 404);

    // Deleting removes the original and every variant.
    let r = send(
        ctx.http
            .delete(format!("{}/api/v1/media/{id}", ctx.base))
            .bearer_auth(token),
    )
    .await;
    assert_eq!(r.status, 204, "{}", r.body);
    let gone = ctx.get(&format!("/api/v1/media/{id}"), Some(token)).await;
    assert_eq!(gone.body["status"], "DELETED");
    assert_eq!(gone.body["variants"], json!([]));
    assert_eq!(fetch(ctx, &url).await.0, 404, "the bytes are gone");
    assert_eq!(link(ctx, token, &id, "SMALL").await.status, 404);
    let r = send(
        ctx.http
            .delete(format!("{}/api/v1/media/{id}", ctx.base))
            .bearer_auth(token),
    )
    .await;
    assert_eq!(r.status, 404, "deleting twice");
}

async fn cleanup_removes_exactly_the_unattached_old_files(ctx: &Ctx) {
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let token = &owner.access;
    let cover = upload(ctx, token, "file", &landscape_jpeg(), None).await;
    let cover = ready(ctx, token, cover.body["id"].as_str().unwrap()).await;
    let cover_id = cover["id"].as_str().unwrap().to_string();
    let stray = upload(ctx, token, "file", &tiny_gif(), None).await;
    let stray = ready(ctx, token, stray.body["id"].as_str().unwrap()).await;
    let stray_id = stray["id"].as_str().unwrap().to_string();
    let stray_url = link(ctx, token, &stray_id, "THUMBNAIL").await.body["url"]
        .as_str()
        .unwrap()
        .to_string();

    // The event names the cover: the media service learns it from event.created.
    let event = ctx
        .post(
            "/api/v1/events",
            Some(token),
            json!({"title": "With cover", "startsAt": (chrono::Utc::now() + Duration::days(5)).to_rfc3339(), "coverImageId": cover_id}),
        )
        .await;
    assert_eq!(event.status, 201, "{}", event.body);
    assert!(
        eventually(10, || async {
            ctx.get(&format!("/api/v1/media/{cover_id}"), Some(token))
                .await
                .body["attachedTo"]["type"]
                == "EVENT_COVER"
        })
        .await
    );
    // A visitor without a token gets a link to the cover (the event page shows it), never to
    // a file nothing points at, and a bad variant is still refused by name.
    let cover_link = ctx
        .get(
            &format!("/api/v1/media/{cover_id}/url?variant=MEDIUM"),
            None,
        )
        .await;
    assert_eq!(cover_link.status, 200, "{}", cover_link.body);
    assert!(cover_link.body["url"].as_str().unwrap().starts_with("http"));
    let stray_link = ctx
        .get(&format!("/api/v1/media/{stray_id}/url"), None)
        .await;
    assert_eq!(stray_link.status, 404, "{}", stray_link.body);
    // The same rules at an address that stays (a link preview's image): a redirection to a
    // fresh link, which serves the image.
    let plain = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let image = plain
        .get(format!(
            "{}/api/v1/media/{cover_id}/image?variant=MEDIUM",
            ctx.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(image.status(), 302);
    let location = image.headers()["location"].to_str().unwrap().to_string();
    assert!(location.starts_with("http"), "{location}");
    let (status, bytes) = fetch(ctx, &location).await;
    assert_eq!(status, 200);
    assert!(!bytes.is_empty());
    let stray_image = plain
        .get(format!("{}/api/v1/media/{stray_id}/image", ctx.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        stray_image.status(),
        404,
        "a file nothing points at has no public image"
    );
    let odd = plain
        .get(format!(
            "{}/api/v1/media/{cover_id}/image?variant=HUGE",
            ctx.base
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(odd.status(), 400);

    // Published, its page carries the cover in its link preview.
    let event_id = event.body["id"].as_str().unwrap();
    let published = ctx
        .post_empty(&format!("/api/v1/events/{event_id}/publish"), Some(token))
        .await;
    assert_eq!(published.status, 200, "{}", published.body);
    let slug = event.body["slug"].as_str().unwrap();
    let page = reqwest::get(format!("{}/e/{slug}", ctx.base))
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains(r#"<meta property="og:title" content="With cover">"#),
        "{html}"
    );
    assert!(
        html.contains(&format!("/api/v1/media/{cover_id}/image?variant=LARGE\">")),
        "{html}"
    );
    let bad = ctx
        .get(&format!("/api/v1/media/{cover_id}/url?variant=HUGE"), None)
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(bad.body["details"]["variant"].is_string());
    assert_eq!(
        ctx.get(&format!("/api/v1/media/{cover_id}"), None)
            .await
            .status,
        401,
        "the file's record still needs a token"
    );

    // A day and an hour later, a fresh unattached upload.
    ctx.clock.advance(Duration::hours(25));
    let fresh = upload(ctx, token, "file", &tiny_gif(), None).await;
    let fresh_id = fresh.body["id"].as_str().unwrap().to_string();
    ready(ctx, token, &fresh_id).await;

    let state = storage::media::objects::Objects::from_config(&ctx.config()).unwrap();
    let removed = storage::media::uploads::cleanup(&ctx.t.db, &state, ctx.clock.now())
        .await
        .unwrap();
    assert_eq!(removed, 1, "only the stray file");
    let status = |id: String| async move {
        ctx.get(&format!("/api/v1/media/{id}"), Some(token))
            .await
            .body["status"]
            .clone()
    };
    assert_eq!(status(stray_id.clone()).await, "DELETED");
    assert_eq!(status(cover_id.clone()).await, "READY");
    assert_eq!(status(fresh_id.clone()).await, "READY");
    // The stray's variants went with it (its link no longer finds bytes, whatever the clock).
    ctx.clock.advance(-Duration::hours(25));
    assert_eq!(fetch(ctx, &stray_url).await.0, 404);
    ctx.clock.advance(Duration::hours(25));
    let again = storage::media::uploads::cleanup(&ctx.t.db, &state, ctx.clock.now())
        .await
        .unwrap();
    assert_eq!(again, 0);
}

#[tokio::test]
async fn local_store_refuses_bad_uploads() {
    let ctx = context(Store::Local).await;
    let user = ctx.user().await;
    refused_uploads(&ctx, &user).await;
}

#[tokio::test]
async fn s3_store_refuses_bad_uploads() {
    let ctx = context(Store::S3).await;
    let user = ctx.user().await;
    refused_uploads(&ctx, &user).await;
}

#[tokio::test]
async fn local_store_variants_links_and_deletion() {
    let ctx = context(Store::Local).await;
    let user = ctx.user().await;
    variants_and_links(&ctx, &user, Store::Local).await;
}

#[tokio::test]
async fn s3_store_variants_links_and_deletion() {
    let ctx = context(Store::S3).await;
    let user = ctx.user().await;
    variants_and_links(&ctx, &user, Store::S3).await;
}

#[tokio::test]
async fn local_store_cleanup() {
    let ctx = context(Store::Local).await;
    cleanup_removes_exactly_the_unattached_old_files(&ctx).await;
}

#[tokio::test]
async fn s3_store_cleanup() {
    let ctx = context(Store::S3).await;
    cleanup_removes_exactly_the_unattached_old_files(&ctx).await;
}

/// How many entities the file is attached to (read as the database owner: every tenant).
async fn attachments_of(ctx: &Ctx, file: &str) -> i64 {
    ctx.t
        .owner()
        .await
        .query_one(
            "SELECT count(*) FROM media_service.attachments WHERE file_id = $1",
            &[&file.parse::<uuid::Uuid>().unwrap()],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_file_shared_by_a_logo_and_a_cover_stays_until_both_let_go() {
    let ctx = context(Store::Local).await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let token = &owner.access;
    let image = upload(&ctx, token, "file", &landscape_jpeg(), None).await;
    assert_eq!(image.status, 201, "{}", image.body);
    let image = image.body["id"].as_str().unwrap().to_string();
    ready(&ctx, token, &image).await;
    let logo = ctx
        .put(
            &format!("/api/v1/organizations/{org}"),
            Some(token),
            json!({"logoId": image}),
        )
        .await;
    assert_eq!(logo.status, 200, "{}", logo.body);
    let event = ctx
        .post(
            "/api/v1/events",
            Some(token),
            json!({"title": "Same picture", "startsAt": (chrono::Utc::now() + Duration::days(5)).to_rfc3339(), "coverImageId": image}),
        )
        .await;
    assert_eq!(event.status, 201, "{}", event.body);
    let event = event.body["id"].as_str().unwrap().to_string();
    assert!(
        eventually(15, || async { attachments_of(&ctx, &image).await == 2 }).await,
        "the logo and the cover both hold the file"
    );
    let objects = storage::media::objects::Objects::from_config(&ctx.config()).unwrap();
    let cleanup = || async {
        storage::media::uploads::cleanup(&ctx.t.db, &objects, ctx.clock.now() + Duration::days(3))
            .await
            .unwrap()
    };
    let status = || async {
        ctx.get(&format!("/api/v1/media/{image}"), Some(token))
            .await
            .body
    };

    // The logo lets go; the cover still holds it through the cleanup.
    let cleared = ctx
        .put(
            &format!("/api/v1/organizations/{org}"),
            Some(token),
            json!({"logoId": null}),
        )
        .await;
    assert_eq!(cleared.status, 200, "{}", cleared.body);
    assert!(
        eventually(15, || async {
            status().await["attachedTo"] == json!({"type": "EVENT_COVER", "id": event})
        })
        .await,
        "only the cover is left: {}",
        status().await
    );
    assert_eq!(attachments_of(&ctx, &image).await, 1);
    assert_eq!(cleanup().await, 0, "still attached to the cover");
    let kept = status().await;
    assert_eq!(kept["status"], "READY", "{kept}");
    assert_eq!(link(&ctx, token, &image, "ORIGINAL").await.status, 200);

    // The cover lets go too: now the cleanup removes it.
    let uncovered = ctx
        .put(
            &format!("/api/v1/events/{event}"),
            Some(token),
            json!({"coverImageId": null}),
        )
        .await;
    assert_eq!(uncovered.status, 200, "{}", uncovered.body);
    assert!(
        eventually(15, || async { status().await["attachedTo"].is_null() }).await,
        "nothing holds it: {}",
        status().await
    );
    assert_eq!(attachments_of(&ctx, &image).await, 0);
    assert_eq!(cleanup().await, 1, "the last one let go");
    assert_eq!(status().await["status"], "DELETED");
    assert_eq!(cleanup().await, 0);
}

#[tokio::test]
async fn organization_files_stay_in_the_organization() {
    let ctx = context(Store::Local).await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let logo = upload(&ctx, &owner.access, "file", &tiny_gif(), None).await;
    assert_eq!(logo.status, 201, "{}", logo.body);
    assert!(logo.body["tenantId"].is_string());
    let id = logo.body["id"].as_str().unwrap();
    let (other_owner, _) = ctx.owner(&admin).await;
    assert_eq!(
        ctx.get(&format!("/api/v1/media/{id}"), Some(&other_owner.access))
            .await
            .status,
        404
    );
    let r = send(
        ctx.http
            .delete(format!("{}/api/v1/media/{id}", ctx.base))
            .bearer_auth(&other_owner.access),
    )
    .await;
    assert_eq!(r.status, 404);
    assert_eq!(
        ctx.get(&format!("/api/v1/media/{id}"), Some(&owner.access))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn the_gateway_limits_uploads_per_user() {
    let ctx = context(Store::Local).await;
    let user = ctx.user().await;
    for i in 0..10 {
        let r = upload(&ctx, &user.access, "file", &tiny_gif(), None).await;
        assert_eq!(r.status, 201, "upload {i}: {}", r.body);
    }
    let limited = upload(&ctx, &user.access, "file", &tiny_gif(), None).await;
    assert_eq!(limited.status, 429, "{}", limited.body);
    assert_eq!(limited.body["code"], "rate_limit_exceeded");
    assert_eq!(limited.headers["x-ratelimit-limit"], "10");
    // Another user has their own allowance.
    let other = ctx.user().await;
    assert_eq!(
        upload(&ctx, &other.access, "file", &tiny_gif(), None)
            .await
            .status,
        201
    );
}

/// The S3 store of the test machine (Garage), straight from the environment `make test` sets.
fn s3_objects() -> storage::media::objects::Objects {
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} (make test sets it)"));
    let mut config = domain::config::Config::default();
    config.storage.endpoint = Some(env("STORAGE_ENDPOINT"));
    config.storage.access_key = Some(domain::config::Secret::new(env("STORAGE_ACCESS_KEY")));
    config.storage.secret_key = Some(domain::config::Secret::new(env("STORAGE_SECRET_KEY")));
    config.storage.bucket = env("STORAGE_BUCKET");
    config.storage.region = env("STORAGE_REGION");
    storage::media::objects::Objects::from_config(&config).unwrap()
}

/// Bytes that differ at every offset a part boundary could fall on, so a misplaced or
/// repeated part cannot go unnoticed.
fn patterned(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

#[tokio::test]
async fn s3_large_uploads_go_in_parts_and_round_trip() {
    let objects = s3_objects();
    let key = format!("tests/{}/large.bin", uuid::Uuid::now_v7());
    // Past the 8 MiB threshold and not a multiple of the 5 MiB part: three parts, the last
    // short.
    let body = patterned(storage::media::objects::MULTIPART_THRESHOLD + 2 * 1024 * 1024 + 17);
    objects
        .put(&key, body.clone(), "application/octet-stream")
        .await
        .unwrap();
    let back = objects.get(&key).await.unwrap().expect("stored");
    assert_eq!(back.len(), body.len());
    assert!(back == body, "the bytes come back unchanged");
    // S3 servers tag an object assembled from parts "<md5>-<parts>".
    let objects = &objects;
    let etag = |key: String| async move {
        let url = objects
            .url(&key, chrono::Utc::now(), Duration::minutes(1))
            .await
            .unwrap();
        // A GET link (the method is signed too); only the headers are read.
        let response = reqwest::Client::new().get(url).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        response.headers()["etag"].to_str().unwrap().to_string()
    };
    assert!(etag(key.clone()).await.ends_with("-3\""), "three parts");

    // Just under the threshold: one request.
    let small_key = format!("{key}.small");
    let small = patterned(storage::media::objects::MULTIPART_THRESHOLD - 1);
    objects
        .put(&small_key, small.clone(), "application/octet-stream")
        .await
        .unwrap();
    assert!(objects.get(&small_key).await.unwrap().unwrap() == small);
    assert!(!etag(small_key.clone()).await.contains('-'), "one request");

    for key in [&key, &small_key] {
        objects.delete(key).await.unwrap();
        assert_eq!(objects.get(key).await.unwrap(), None);
        // Deleting twice is fine.
        objects.delete(key).await.unwrap();
    }
}

#[tokio::test]
async fn s3_presigned_links_are_checked_by_the_server() {
    let objects = s3_objects();
    let key = format!("tests/{}/note.txt", uuid::Uuid::now_v7());
    let body = b"a presigned hello".to_vec();
    objects.put(&key, body.clone(), "text/plain").await.unwrap();
    let http = reqwest::Client::new();
    let get = |url: String| {
        let http = http.clone();
        async move {
            let response = http.get(url).send().await.unwrap();
            let status = response.status().as_u16();
            let content_type = response
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string());
            (
                status,
                content_type,
                response.bytes().await.unwrap().to_vec(),
            )
        }
    };

    let url = objects
        .url(&key, chrono::Utc::now(), domain::media::LINK_TTL)
        .await
        .unwrap();
    assert!(url.contains("X-Amz-Expires=3600"), "{url}");
    assert!(
        url.contains(&format!(
            "/{}/{key}?",
            std::env::var("STORAGE_BUCKET").unwrap()
        )),
        "path-style: {url}"
    );
    let (status, content_type, bytes) = get(url.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(content_type.as_deref(), Some("text/plain"));
    assert_eq!(bytes, body);

    // Any change to the signature, or to what it signs, is refused.
    let at = url.find("X-Amz-Signature=").unwrap() + "X-Amz-Signature=".len();
    let mut altered = url.clone();
    let flipped = if &url[at..at + 1] == "0" { "1" } else { "0" };
    altered.replace_range(at..at + 1, flipped);
    assert_ne!(altered, url);
    assert_eq!(get(altered).await.0, 403);
    let stretched = url.replace("X-Amz-Expires=3600", "X-Amz-Expires=7200");
    assert_eq!(get(stretched).await.0, 403);

    // A link past its lifetime is refused. Garage answers 400 "Date is too old" where AWS
    // answers 403 "Request has expired".
    let short = objects
        .url(&key, chrono::Utc::now(), Duration::seconds(1))
        .await
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let (status, _, body) = get(short).await;
    let body = String::from_utf8_lossy(&body).to_lowercase();
    assert!(matches!(status, 400 | 403), "{status}");
    assert!(
        body.contains("expire") || body.contains("too old"),
        "{body}"
    );

    objects.delete(&key).await.unwrap();
    assert_eq!(get(url).await.0, 404, "the bytes are gone");
}

/// `storage.public_endpoint`: the service reaches Garage at its private address (127.0.0.1),
/// browsers at another host name (localhost here). Links name the public host and work there;
/// a link signed for the private host and pointed at the public one afterwards is refused,
/// which is why links are signed for the public host rather than rewritten.
#[tokio::test]
async fn s3_links_are_signed_for_the_public_endpoint() {
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} (make test sets it)"));
    let private = env("STORAGE_ENDPOINT").trim_end_matches('/').to_string();
    assert!(
        private.contains("127.0.0.1"),
        "the test expects Garage at 127.0.0.1: {private}"
    );
    let public = private.replace("127.0.0.1", "localhost");
    let public_for_node = public.clone();
    let ctx = Ctx::with_config(move |c| {
        c.storage.endpoint = Some(env("STORAGE_ENDPOINT"));
        c.storage.public_endpoint = Some(public_for_node);
        c.storage.access_key = Some(domain::config::Secret::new(env("STORAGE_ACCESS_KEY")));
        c.storage.secret_key = Some(domain::config::Secret::new(env("STORAGE_SECRET_KEY")));
        c.storage.bucket = env("STORAGE_BUCKET");
        c.storage.region = env("STORAGE_REGION");
    })
    .await;
    let user = ctx.user().await;
    let token = &user.access;
    let uploaded = upload(&ctx, token, "file", &landscape_jpeg(), Some("image/jpeg")).await;
    assert_eq!(uploaded.status, 201, "{}", uploaded.body);
    let id = uploaded.body["id"].as_str().unwrap().to_string();
    ready(&ctx, token, &id).await;

    let given = link(&ctx, token, &id, "ORIGINAL").await;
    assert_eq!(given.status, 200, "{}", given.body);
    let url = given.body["url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with(&format!(
            "{public}/{}/",
            std::env::var("STORAGE_BUCKET").unwrap()
        )),
        "the link names the public endpoint: {url}"
    );
    assert!(!url.contains("127.0.0.1"), "{url}");
    let (status, bytes) = fetch(&ctx, &url).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    assert_eq!(bytes, landscape_jpeg());

    // What rewriting would give: the signature covers the host, so the server refuses it.
    let key = url[public.len()..].split('?').next().unwrap().to_string();
    let private_objects = s3_objects();
    let bucket_prefix = format!("/{}/", std::env::var("STORAGE_BUCKET").unwrap());
    let signed_privately = private_objects
        .url(
            key.strip_prefix(&bucket_prefix).unwrap(),
            chrono::Utc::now(),
            Duration::minutes(5),
        )
        .await
        .unwrap();
    assert!(signed_privately.starts_with(&private), "{signed_privately}");
    let (status, _) = fetch(&ctx, &signed_privately).await;
    assert_eq!(
        status, 200,
        "the private link works from the private network"
    );
    let rewritten = signed_privately.replacen(&private, &public, 1);
    let (status, _) = fetch(&ctx, &rewritten).await;
    assert_eq!(status, 403, "a rewritten link is refused: {rewritten}");
}
