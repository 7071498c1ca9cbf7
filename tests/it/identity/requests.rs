//! Organization requests and creating the organization from an approved one.

use super::Ctx;
use chrono::Duration;
use serde_json::json;

fn slug() -> String {
    format!("org-{}", &uuid::Uuid::now_v7().simple().to_string()[18..])
}

#[tokio::test]
async fn submit_review_and_create() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let alice = ctx.user().await;
    let bob = ctx.user().await;
    let alice_slug = slug();

    let bad = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&alice.access),
            json!({"name": "", "slug": "Bad Slug"}),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(bad.body["details"]["slug"].is_string() && bad.body["details"]["name"].is_string());
    assert_eq!(
        ctx.post(
            "/api/v1/organization-requests",
            None,
            json!({"name": "x", "slug": "xyz"})
        )
        .await
        .status,
        401
    );

    let created = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&alice.access),
            json!({"name": "Alice Events", "slug": alice_slug, "description": "d"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["status"], "PENDING");
    let request_id = created.body["id"].as_str().unwrap().to_string();

    let second = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&alice.access),
            json!({"name": "Again", "slug": slug()}),
        )
        .await;
    assert_eq!(second.status, 422, "one pending request per user");
    let taken = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&bob.access),
            json!({"name": "Bob", "slug": alice_slug}),
        )
        .await;
    assert_eq!(taken.status, 409, "slug unique among pending requests");

    let bob_slug = slug();
    let bob_request = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&bob.access),
            json!({"name": "Bob", "slug": bob_slug}),
        )
        .await;
    let bob_id = bob_request.body["id"].as_str().unwrap().to_string();

    let own = ctx
        .get("/api/v1/organization-requests", Some(&alice.access))
        .await;
    assert_eq!(own.body["totalElements"], 1);
    let all = ctx
        .get(
            "/api/v1/organization-requests?status=PENDING",
            Some(&admin.access),
        )
        .await;
    assert_eq!(all.body["totalElements"], 2);
    assert_eq!(
        ctx.get(
            "/api/v1/organization-requests?status=WHATEVER",
            Some(&admin.access)
        )
        .await
        .status,
        400
    );
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organization-requests/{request_id}"),
            Some(&bob.access)
        )
        .await
        .status,
        404
    );
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organization-requests/{request_id}"),
            Some(&admin.access)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organization-requests/{}", uuid::Uuid::now_v7()),
            Some(&admin.access)
        )
        .await
        .status,
        404
    );

    let not_admin = ctx
        .post_empty(
            &format!("/api/v1/organization-requests/{request_id}/approve"),
            Some(&bob.access),
        )
        .await;
    assert_eq!(not_admin.status, 403);
    let no_org_yet = ctx
        .post_empty("/api/v1/organizations", Some(&alice.access))
        .await;
    assert_eq!(no_org_yet.status, 422, "nothing approved yet");

    let approved = ctx
        .post_empty(
            &format!("/api/v1/organization-requests/{request_id}/approve"),
            Some(&admin.access),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_eq!(approved.body["status"], "APPROVED");
    assert_eq!(approved.body["reviewedBy"], admin.user_id.as_str());
    assert!(approved.body["reservedUntil"].is_string());
    let twice = ctx
        .post_empty(
            &format!("/api/v1/organization-requests/{request_id}/approve"),
            Some(&admin.access),
        )
        .await;
    assert_eq!(twice.status, 422);
    let reject_approved = ctx
        .post(
            &format!("/api/v1/organization-requests/{request_id}/reject"),
            Some(&admin.access),
            json!({"reason": "late"}),
        )
        .await;
    assert_eq!(reject_approved.status, 422);

    let no_reason = ctx
        .post(
            &format!("/api/v1/organization-requests/{bob_id}/reject"),
            Some(&admin.access),
            json!({}),
        )
        .await;
    assert_eq!(no_reason.status, 400);
    assert_eq!(
        no_reason.body["details"]["reason"],
        "This field is required"
    );
    let rejected = ctx
        .post(
            &format!("/api/v1/organization-requests/{bob_id}/reject"),
            Some(&admin.access),
            json!({"reason": "Не подходит"}),
        )
        .await;
    assert_eq!(rejected.status, 200);
    assert_eq!(rejected.body["status"], "REJECTED");
    assert_eq!(rejected.body["reviewComment"], "Не подходит");

    // The approved slug is reserved for Alice: Bob cannot take it.
    let reserved = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&bob.access),
            json!({"name": "Bob", "slug": alice_slug}),
        )
        .await;
    assert_eq!(reserved.status, 409);

    let org = ctx
        .post_empty("/api/v1/organizations", Some(&alice.access))
        .await;
    assert_eq!(org.status, 201, "{}", org.body);
    assert_eq!(org.body["slug"], alice_slug.as_str());
    assert_eq!(org.body["name"], "Alice Events");
    assert_eq!(org.body["myRole"], "OWNER");
    assert_eq!(org.body["settings"]["language"], "ru");
    assert_eq!(
        ctx.post_empty("/api/v1/organizations", Some(&alice.access))
            .await
            .status,
        422,
        "the request is used up"
    );
    let mine = ctx.get("/api/v1/organizations", Some(&alice.access)).await;
    assert_eq!(mine.body["totalElements"], 1);
    assert_eq!(mine.body["data"][0]["myRole"], "OWNER");
}

#[tokio::test]
async fn reservation_lapses_after_seven_days() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let alice = ctx.user().await;
    let bob = ctx.user().await;
    let s = slug();
    let r = ctx
        .post(
            "/api/v1/organization-requests",
            Some(&alice.access),
            json!({"name": "A", "slug": s}),
        )
        .await;
    let id = r.body["id"].as_str().unwrap();
    ctx.post_empty(
        &format!("/api/v1/organization-requests/{id}/approve"),
        Some(&admin.access),
    )
    .await;
    ctx.clock.advance(Duration::days(7) + Duration::seconds(1));
    let bob_login = ctx.login(&bob.email, super::PASSWORD).await;
    let bob_access = bob_login.body["accessToken"].as_str().unwrap();
    let now_free = ctx
        .post(
            "/api/v1/organization-requests",
            Some(bob_access),
            json!({"name": "B", "slug": s}),
        )
        .await;
    assert_eq!(now_free.status, 201, "{}", now_free.body);
}
