//! Link previews of event pages (`/e/{slug}`): a messenger's robot runs no JavaScript, so the
//! gateway writes the event's title, time and place into the page as Open Graph and Twitter
//! tags — for published public events only, and in a deployment of separate processes too,
//! where the gateway asks the events service.

use crate::fake_telegram::FakeTelegram;
use crate::identity::Ctx;
use crate::scenario::cluster::Cluster;
use crate::support::TestDb;
use chrono::{Duration, Utc};
use serde_json::json;

async fn page(base: &str, slug: &str) -> String {
    let reply = reqwest::get(format!("{base}/e/{slug}")).await.unwrap();
    assert_eq!(
        reply.status(),
        200,
        "an event page is always the front's page"
    );
    reply.text().await.unwrap()
}

#[tokio::test]
async fn a_public_event_page_carries_its_preview_and_a_draft_or_private_one_does_not() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let start = Utc::now() + Duration::days(3);
    let created = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Quiz <night> & \"friends\"", "description": "Teams of four.\nPrizes.",
                   "startsAt": start.to_rfc3339(), "timezone": "Asia/Tokyo", "locationAddress": "Bar, 5"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    let slug = created.body["slug"].as_str().unwrap();

    let draft = page(&ctx.base, slug).await;
    assert!(
        !draft.contains("og:title"),
        "a draft is not previewed: {draft}"
    );

    let r = ctx
        .post_empty(&format!("/api/v1/events/{id}/publish"), Some(&owner.access))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // Published a moment after its plain page was served: previewed at once.
    let fresh_slug = slug;
    let html = page(&ctx.base, fresh_slug).await;
    let local = start
        .with_timezone(&chrono_tz::Asia::Tokyo)
        .format("%Y-%m-%d %H:%M");
    assert!(
        html.contains(
            r#"<meta property="og:title" content="Quiz &lt;night&gt; &amp; &quot;friends&quot;">"#
        ),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            r#"<meta property="og:description" content="{local} (Asia/Tokyo) · Bar, 5. Teams of four. Prizes.">"#
        )),
        "{html}"
    );
    let url = html
        .lines()
        .find(|l| l.contains("og:url"))
        .expect("og:url")
        .trim();
    assert!(
        url.starts_with(r#"<meta property="og:url" content="http"#),
        "{url}"
    );
    assert!(url.ends_with(&format!(r#"/e/{fresh_slug}">"#)), "{url}");
    assert!(html.contains(r#"<meta name="twitter:card" content="summary">"#));
    assert!(html.contains("<title>Quiz &lt;night&gt; &amp; &quot;friends&quot; — bilet</title>"));
    assert!(
        html.contains("<script type=\"module\""),
        "still the front's shell"
    );

    // A published event of a group: its members see it, a robot does not.
    let group = ctx
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&owner.access),
            json!({"name": "Club"}),
        )
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_string();
    let private = crate::support::eventually(10, || async {
        ctx.post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Members only", "startsAt": start.to_rfc3339(), "groupId": group_id}),
        )
        .await
        .status
            == 201
    })
    .await;
    assert!(private, "the group is known to the events service");
    let listed = ctx
        .get(
            "/api/v1/events?size=100&search=members",
            Some(&owner.access),
        )
        .await;
    let private = &listed.body["data"][0];
    let private_id = private["id"].as_str().unwrap();
    let r = ctx
        .post_empty(
            &format!("/api/v1/events/{private_id}/publish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let members = page(&ctx.base, private["slug"].as_str().unwrap()).await;
    assert!(
        !members.contains("og:title"),
        "a private event is not previewed: {members}"
    );

    // Unknown slugs and odd ones get the plain shell, an undecodable one too.
    assert!(!page(&ctx.base, "no-such-event").await.contains("og:title"));
    assert!(!page(&ctx.base, "Not%20A%20Slug").await.contains("og:title"));
    assert!(
        page(&ctx.base, "%FF%FE")
            .await
            .contains("<script type=\"module\"")
    );
}

#[tokio::test]
async fn a_gateway_in_its_own_process_asks_the_events_service_for_the_preview() {
    let t = TestDb::new().await;
    let telegram = FakeTelegram::start().await;
    let cluster = Cluster::start(&t, &telegram).await;
    let platform = cluster.platform(&t, telegram).await;
    let admin = platform.user("Admin").await;
    storage::identity::admins::grant(&t.db, &admin.email)
        .await
        .unwrap();
    let mut owner = platform.user("Owner").await;
    let org = crate::scenario::organization(&platform, &admin, &owner).await;
    owner.access = platform.switch(&owner, &org).await;
    let created = platform
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Cluster gig", "startsAt": (Utc::now() + Duration::days(2)).to_rfc3339()}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap();
    let r = platform
        .post_empty(&format!("/api/v1/events/{id}/publish"), &owner.access)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let html = page(
        &cluster.urls["gateway"],
        created.body["slug"].as_str().unwrap(),
    )
    .await;
    assert!(
        html.contains(r#"<meta property="og:title" content="Cluster gig">"#),
        "{html}"
    );
}
