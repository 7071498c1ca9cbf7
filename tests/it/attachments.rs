//! Attachments belong to their owner: an avatar is a personal image of the same user, a logo
//! or cover an image of the same organization, checked by identity and events through the
//! media service (in the same process or over HTTP) and again by the media consumer; plus the
//! small holes of issue 15 (logo URLs, events before 2000).

use crate::identity::{Ctx, Session};
use crate::support::{Reply, amqp_url, eventually, send, signed};
use chrono::{Duration, Utc};
use domain::clock::Clock;
use domain::config::{NodeConfig, Service, ServiceAddr};
use domain::envelope::Envelope;
use domain::ids::TenantId;
use image::{DynamicImage, ImageFormat, Rgb, RgbImage};
use serde_json::{Value, json};
use std::io::Cursor;

/// A small PNG.
pub fn png() -> Vec<u8> {
    let img = RgbImage::from_fn(32, 24, |x, y| Rgb([x as u8 * 8, y as u8 * 10, 120]));
    let mut out = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(img)
        .write_to(&mut out, ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

const PDF: &[u8] = b"%PDF-1.4\n%tiny\n";

/// Uploads `bytes` with `token` (a personal file without an organization in the token, the
/// organization's otherwise); returns the file id.
pub async fn upload(ctx: &Ctx, token: &str, bytes: &[u8]) -> String {
    upload_to(ctx, "/api/v1/media/upload", token, bytes).await
}

/// As `upload`, to `path` (the upload's address with its query).
async fn upload_to(ctx: &Ctx, path: &str, token: &str, bytes: &[u8]) -> String {
    let boundary = "bilet-attachments-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"f\"\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    let reply = send(
        ctx.http
            .post(format!("{}{path}", ctx.base))
            .bearer_auth(token)
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            )
            .body(body),
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    reply.body["id"].as_str().unwrap().to_string()
}

/// What the file is attached to, as its owner sees it.
async fn attached_to(ctx: &Ctx, token: &str, file: &str) -> Value {
    let r = ctx.get(&format!("/api/v1/media/{file}"), Some(token)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["attachedTo"].clone()
}

async fn wait_attached(ctx: &Ctx, token: &str, file: &str, kind: &str, entity: &str) {
    assert!(
        eventually(15, || async {
            let a = attached_to(ctx, token, file).await;
            a["type"] == kind && a["id"] == entity
        })
        .await,
        "{file} attached as {kind} to {entity}: {}",
        attached_to(ctx, token, file).await
    );
}

/// The refusal every unusable file id gets, whatever the reason.
fn assert_refused(r: &Reply, field: &str) {
    assert_eq!(r.status, 422, "{field}: {}", r.body);
    assert_eq!(r.body["code"], "business_rule_violation", "{}", r.body);
    assert!(r.body["details"][field].is_string(), "{}", r.body);
}

fn soon() -> String {
    (Utc::now() + Duration::days(5)).to_rfc3339()
}

async fn create_event(ctx: &Ctx, owner: &Session, cover: Option<&str>) -> Reply {
    let mut body = json!({"title": "Covered", "startsAt": soon()});
    if let Some(cover) = cover {
        body["coverImageId"] = json!(cover);
    }
    ctx.post("/api/v1/events", Some(&owner.access), body).await
}

async fn set_avatar(ctx: &Ctx, user: &Session, avatar: Value) -> Reply {
    ctx.put(
        "/api/v1/users/me",
        Some(&user.access),
        json!({"avatarId": avatar}),
    )
    .await
}

async fn set_logo(ctx: &Ctx, owner: &Session, org: &str, logo: Value) -> Reply {
    ctx.put(
        &format!("/api/v1/organizations/{org}"),
        Some(&owner.access),
        json!({"logoId": logo}),
    )
    .await
}

async fn cleanup_far_ahead(ctx: &Ctx) -> usize {
    let objects = storage::media::objects::Objects::from_config(&ctx.config()).unwrap();
    storage::media::uploads::cleanup(&ctx.t.db, &objects, ctx.clock.now() + Duration::days(3))
        .await
        .unwrap()
}

#[tokio::test]
async fn an_organizations_cover_cannot_become_someones_avatar() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let cover = upload(&ctx, &owner.access, &png()).await;
    let event = create_event(&ctx, &owner, Some(&cover)).await;
    assert_eq!(event.status, 201, "{}", event.body);
    let event = event.body["id"].as_str().unwrap().to_string();
    wait_attached(&ctx, &owner.access, &cover, "EVENT_COVER", &event).await;

    let thief = ctx.user().await;
    let stolen = set_avatar(&ctx, &thief, json!(cover)).await;
    assert_refused(&stolen, "avatarId");
    // The same answer as for an id that does not exist: others' ids cannot be probed.
    let unknown = set_avatar(&ctx, &thief, json!(uuid::Uuid::now_v7())).await;
    assert_eq!(unknown.body, stolen.body);
    let cleared = set_avatar(&ctx, &thief, Value::Null).await;
    assert_eq!(cleared.status, 200, "{}", cleared.body);

    // Even a forged user.updated claiming it, then letting go of it, leaves it attached.
    let thief_id = thief.user_id.clone();
    let broker = ctx.broker();
    for avatar in [json!(cover), Value::Null] {
        let forged = Envelope::new(
            "user.updated",
            None,
            None,
            json!({"userId": thief_id, "avatarId": avatar}),
        );
        broker.publish(&[forged]).await.unwrap();
    }
    // The consumer takes events in order: once this one is applied, the forged ones were.
    let honest = ctx.user().await;
    let own = upload(&ctx, &honest.access, &png()).await;
    assert_eq!(set_avatar(&ctx, &honest, json!(own)).await.status, 200);
    wait_attached(&ctx, &honest.access, &own, "USER_AVATAR", &honest.user_id).await;

    assert_eq!(cleanup_far_ahead(&ctx).await, 0, "nothing unattached");
    let file = ctx
        .get(&format!("/api/v1/media/{cover}"), Some(&owner.access))
        .await;
    assert_eq!(file.body["status"], "READY", "{}", file.body);
    assert_eq!(file.body["attachedTo"]["type"], "EVENT_COVER");
    assert_eq!(file.body["attachedTo"]["id"], event.as_str());
}

#[tokio::test]
async fn avatars_are_personal_images_of_the_same_user() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let user = ctx.user().await;

    let pdf = upload(&ctx, &user.access, PDF).await;
    assert_refused(&set_avatar(&ctx, &user, json!(pdf)).await, "avatarId");
    assert_refused(
        &set_avatar(&ctx, &user, json!(uuid::Uuid::now_v7())).await,
        "avatarId",
    );
    let someone_elses = upload(&ctx, &ctx.user().await.access, &png()).await;
    assert_refused(
        &set_avatar(&ctx, &user, json!(someone_elses)).await,
        "avatarId",
    );
    // Uploaded by the owner, but in the organization: the organization's file.
    let org_file = upload(&ctx, &owner.access, &png()).await;
    let refused = ctx
        .put(
            "/api/v1/users/me",
            Some(&owner.access),
            json!({"avatarId": org_file}),
        )
        .await;
    assert_refused(&refused, "avatarId");
    // Asked to be personal, the same token's upload is the owner's own: another organization
    // sees nothing of it, and it may be their face (attached, a face is shown to anyone).
    let personal = upload_to(
        &ctx,
        "/api/v1/media/upload?personal=true",
        &owner.access,
        &png(),
    )
    .await;
    let file = ctx
        .get(&format!("/api/v1/media/{personal}"), Some(&owner.access))
        .await;
    assert_eq!(file.body["tenantId"], Value::Null, "{}", file.body);
    assert_eq!(
        file.body["ownerId"],
        owner.user_id.as_str(),
        "{}",
        file.body
    );
    let (other_owner, _) = ctx.owner(&admin).await;
    let seen = ctx
        .get(
            &format!("/api/v1/media/{personal}"),
            Some(&other_owner.access),
        )
        .await;
    assert_eq!(seen.status, 404, "{}", seen.body);
    let accepted = ctx
        .put(
            "/api/v1/users/me",
            Some(&owner.access),
            json!({"avatarId": personal}),
        )
        .await;
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    assert_eq!(accepted.body["avatarId"], personal.as_str());
    // `personal` is a boolean.
    let odd = send(
        ctx.http
            .post(format!("{}/api/v1/media/upload?personal=maybe", ctx.base))
            .bearer_auth(&owner.access)
            .header("Content-Type", "multipart/form-data; boundary=x")
            .body("--x--\r\n"),
    )
    .await;
    assert_eq!(odd.status, 400, "{}", odd.body);

    let own = upload(&ctx, &user.access, &png()).await;
    let accepted = set_avatar(&ctx, &user, json!(own)).await;
    assert_eq!(accepted.status, 200, "{}", accepted.body);
    assert_eq!(accepted.body["avatarId"], own.as_str());
    wait_attached(&ctx, &user.access, &own, "USER_AVATAR", &user.user_id).await;
    assert_eq!(set_avatar(&ctx, &user, Value::Null).await.status, 200);
    assert!(
        eventually(15, || async {
            attached_to(&ctx, &user.access, &own).await.is_null()
        })
        .await,
        "a cleared avatar lets go of its file"
    );
}

#[tokio::test]
async fn covers_and_logos_are_images_of_the_same_organization() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let (other, _) = ctx.owner(&admin).await;
    let personal = upload(&ctx, &ctx.user().await.access, &png()).await;
    let foreign = upload(&ctx, &other.access, &png()).await;
    let pdf = upload(&ctx, &owner.access, PDF).await;
    let unknown = uuid::Uuid::now_v7().to_string();

    for bad in [&personal, &foreign, &pdf, &unknown] {
        assert_refused(&create_event(&ctx, &owner, Some(bad)).await, "coverImageId");
        assert_refused(&set_logo(&ctx, &owner, &org, json!(bad)).await, "logoId");
    }
    let event = create_event(&ctx, &owner, None).await;
    assert_eq!(event.status, 201, "{}", event.body);
    let event = event.body["id"].as_str().unwrap().to_string();
    let changed = ctx
        .put(
            &format!("/api/v1/events/{event}"),
            Some(&owner.access),
            json!({"coverImageId": foreign}),
        )
        .await;
    assert_refused(&changed, "coverImageId");

    // Only the owner may change the logo, and a moderator is refused for that before the
    // file is looked at (the answer tells nothing about the file).
    let moderator = ctx.moderator(&owner, &org).await;
    let mine = upload(&ctx, &owner.access, &png()).await;
    let r = set_logo(&ctx, &moderator, &org, json!(mine)).await;
    assert_eq!(r.status, 403, "{}", r.body);

    let logo = set_logo(&ctx, &owner, &org, json!(mine)).await;
    assert_eq!(logo.status, 200, "{}", logo.body);
    wait_attached(&ctx, &owner.access, &mine, "ORGANIZATION_LOGO", &org).await;
    let cover = upload(&ctx, &owner.access, &png()).await;
    let changed = ctx
        .put(
            &format!("/api/v1/events/{event}"),
            Some(&owner.access),
            json!({"coverImageId": cover}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    wait_attached(&ctx, &owner.access, &cover, "EVENT_COVER", &event).await;
}

#[tokio::test]
async fn the_media_consumer_ignores_a_forged_cover_of_another_tenant() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (victim, _) = ctx.owner(&admin).await;
    let (attacker, attacker_org) = ctx.owner(&admin).await;
    let file = upload(&ctx, &victim.access, &png()).await;
    let forged_event = uuid::Uuid::now_v7();
    let forged = Envelope::new(
        "event.created",
        Some(TenantId(attacker_org.parse().unwrap())),
        None,
        crate::support::event_data(
            "event.created",
            json!({"eventId": forged_event, "tenantId": attacker_org, "coverImageId": file}),
        ),
    );
    ctx.broker().publish(&[forged]).await.unwrap();
    // An honest cover of the attacker's, applied after the forged event.
    let own = upload(&ctx, &attacker.access, &png()).await;
    let event = create_event(&ctx, &attacker, Some(&own)).await;
    assert_eq!(event.status, 201, "{}", event.body);
    let event = event.body["id"].as_str().unwrap().to_string();
    wait_attached(&ctx, &attacker.access, &own, "EVENT_COVER", &event).await;
    assert!(
        attached_to(&ctx, &victim.access, &file).await.is_null(),
        "the victim's file was not taken over"
    );
}

#[tokio::test]
async fn logo_urls_must_be_http_or_https() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    for bad in [
        "javascript:alert(1)",
        "data:image/png;base64,AAAA",
        "ftp://example.com/logo.png",
    ] {
        let r = ctx
            .put(
                &format!("/api/v1/organizations/{org}"),
                Some(&owner.access),
                json!({"logoUrl": bad}),
            )
            .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(r.body["code"], "validation_error");
        assert!(r.body["details"]["logoUrl"].is_string(), "{}", r.body);
    }
    let ok = ctx
        .put(
            &format!("/api/v1/organizations/{org}"),
            Some(&owner.access),
            json!({"logoUrl": "https://example.com/logo.png"}),
        )
        .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["logoUrl"], "https://example.com/logo.png");
}

#[tokio::test]
async fn events_cannot_start_before_2000() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let old = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Old", "startsAt": "1999-12-31T23:59:59Z"}),
        )
        .await;
    assert_eq!(old.status, 400, "{}", old.body);
    assert!(old.body["details"]["startsAt"].is_string(), "{}", old.body);
    let event = create_event(&ctx, &owner, None).await;
    let id = event.body["id"].as_str().unwrap();
    let moved = ctx
        .put(
            &format!("/api/v1/events/{id}"),
            Some(&owner.access),
            json!({"startsAt": "1999-06-01T10:00:00Z"}),
        )
        .await;
    assert_eq!(moved.status, 400, "{}", moved.body);
    assert!(moved.body["details"]["startsAt"].is_string());
}

#[tokio::test]
async fn media_in_another_process_is_asked_over_http() {
    // Node "rest" runs everything but media; node "media" runs media alone on a port chosen
    // up front. Same database, secret and RabbitMQ exchange.
    let media_port = crate::support::free_port();
    let exchange = format!("bilet.test-{}", uuid::Uuid::now_v7().simple());
    let ctx = Ctx::with_config(|c| {
        c.broker.url = amqp_url();
        c.broker.exchange = exchange.clone();
        c.services.insert(
            Service::Media,
            ServiceAddr {
                listen: format!("127.0.0.1:{media_port}"),
                url: format!("http://127.0.0.1:{media_port}"),
            },
        );
        c.nodes = vec![
            NodeConfig {
                name: "rest".into(),
                services: Service::ALL
                    .into_iter()
                    .filter(|s| *s != Service::Media)
                    .collect(),
                addresses: Default::default(),
            },
            NodeConfig {
                name: "media".into(),
                services: vec![Service::Media],
                addresses: Default::default(),
            },
        ];
        c.node = "rest".into();
    })
    .await;
    let mut media_config = ctx.config();
    media_config.node = "media".into();
    let media = bilet::node::start(media_config).await.unwrap();
    let media_url = format!("http://127.0.0.1:{media_port}");

    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (other, _) = ctx.owner(&admin).await;
    let own = upload(&ctx, &owner.access, &png()).await;
    let foreign = upload(&ctx, &other.access, &png()).await;

    // The internal route answers services only.
    let tenant = ctx
        .get(&format!("/api/v1/media/{own}"), Some(&owner.access))
        .await
        .body["tenantId"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("{media_url}/internal/media/files/{own}/attachable?tenant={tenant}");
    let http = reqwest::Client::new();
    assert_eq!(send(http.get(&path)).await.status, 401, "unsigned");
    let by_gateway = send(signed(
        &http,
        reqwest::Method::GET,
        &path,
        Service::Gateway,
        &[],
    ))
    .await;
    assert_eq!(by_gateway.status, 403, "{}", by_gateway.body);
    let by_events = send(signed(
        &http,
        reqwest::Method::GET,
        &path,
        Service::Events,
        &[],
    ))
    .await;
    assert_eq!(by_events.status, 200, "{}", by_events.body);
    assert_eq!(by_events.body, json!({"attachable": true}));

    // Events asks media over HTTP: another organization's file is refused, its own accepted
    // and attached by the media node's consumer.
    assert_refused(
        &create_event(&ctx, &owner, Some(&foreign)).await,
        "coverImageId",
    );
    let event = create_event(&ctx, &owner, Some(&own)).await;
    assert_eq!(event.status, 201, "{}", event.body);
    let event = event.body["id"].as_str().unwrap().to_string();
    wait_attached(&ctx, &owner.access, &own, "EVENT_COVER", &event).await;

    // Media down: a cover change cannot be checked (503); clearing it needs no check.
    media.stop().await;
    let down = ctx
        .put(
            &format!("/api/v1/events/{event}"),
            Some(&owner.access),
            json!({"coverImageId": foreign}),
        )
        .await;
    assert_eq!(down.status, 503, "{}", down.body);
    assert_eq!(down.body["code"], "service_unavailable");
    assert_eq!(down.body["details"]["service"], "media");
    let cleared = ctx
        .put(
            &format!("/api/v1/events/{event}"),
            Some(&owner.access),
            json!({"coverImageId": null}),
        )
        .await;
    assert_eq!(cleared.status, 200, "{}", cleared.body);
}
