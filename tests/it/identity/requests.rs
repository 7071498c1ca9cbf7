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
    // The administrator sees who asked: name and email, not only an account id.
    let bobs = all.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == bob_id.as_str())
        .unwrap();
    assert_eq!(bobs["requesterEmail"], bob.email.as_str(), "{bobs}");
    assert_eq!(bobs["requesterName"], "Test User", "{bobs}");
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

/// A fresh access token for `s`, after the manual clock outran the old one.
async fn relogin(ctx: &Ctx, s: &super::Session) -> String {
    let reply = ctx.login(&s.email, super::PASSWORD).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["accessToken"].as_str().unwrap().to_string()
}

/// Submits a request for `slug` as `access`; the answer.
async fn submit(ctx: &Ctx, access: &str, name: &str, slug: &str) -> crate::support::Reply {
    ctx.post(
        "/api/v1/organization-requests",
        Some(access),
        json!({"name": name, "slug": slug}),
    )
    .await
}

fn assert_conflict(reply: &crate::support::Reply, message: &str, what: &str) {
    assert_eq!(reply.status, 409, "{what}: {}", reply.body);
    assert_eq!(reply.body["code"], "conflict", "{what}");
    assert_eq!(reply.body["message"], message, "{what}");
}

const USED: &str = "This slug is already used by an organization";
const REQUESTED: &str = "This slug is asked for in another request awaiting review";
const RESERVED: &str = "This slug is reserved for another approved request";

#[tokio::test]
async fn a_lapsed_approval_cannot_take_the_slug_another_requester_holds() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let alice = ctx.user().await;
    let bob = ctx.user().await;
    let s = slug();
    let a = submit(&ctx, &alice.access, "Alice", &s).await;
    let a_id = a.body["id"].as_str().unwrap().to_string();
    let approved = ctx
        .post_empty(
            &format!("/api/v1/organization-requests/{a_id}/approve"),
            Some(&admin.access),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_conflict(
        &submit(&ctx, &bob.access, "Bob", &s).await,
        RESERVED,
        "Alice's reservation runs",
    );

    // Alice lets her seven days pass; Bob asks for the slug.
    ctx.clock.advance(Duration::days(7) + Duration::seconds(1));
    let (admin_access, alice_access, bob_access) = (
        relogin(&ctx, &admin).await,
        relogin(&ctx, &alice).await,
        relogin(&ctx, &bob).await,
    );
    let b = submit(&ctx, &bob_access, "Bob", &s).await;
    assert_eq!(b.status, 201, "{}", b.body);
    let b_id = b.body["id"].as_str().unwrap().to_string();
    assert_conflict(
        &ctx.post_empty("/api/v1/organizations", Some(&alice_access))
            .await,
        REQUESTED,
        "Bob's request awaits review",
    );

    let approved = ctx
        .post_empty(
            &format!("/api/v1/organization-requests/{b_id}/approve"),
            Some(&admin_access),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    assert_conflict(
        &ctx.post_empty("/api/v1/organizations", Some(&alice_access))
            .await,
        RESERVED,
        "Bob's reservation runs",
    );
    let orgs: i64 = ctx
        .t
        .owner()
        .await
        .query_one(
            "SELECT count(*) FROM user_service.organizations WHERE slug = $1",
            &[&s],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(orgs, 0, "nothing was created for Alice");

    let bobs = ctx
        .post_empty("/api/v1/organizations", Some(&bob_access))
        .await;
    assert_eq!(bobs.status, 201, "{}", bobs.body);
    assert_eq!(bobs.body["slug"], s.as_str());
    assert_conflict(
        &ctx.post_empty("/api/v1/organizations", Some(&alice_access))
            .await,
        USED,
        "Bob's organization uses it",
    );

    // Deleted, Bob's organization frees the slug; Alice's approval, unused, may now take it.
    let bob_org = bobs.body["id"].as_str().unwrap();
    let deleted = ctx
        .delete(
            &format!("/api/v1/organizations/{bob_org}"),
            Some(&bob_access),
        )
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let alices = ctx
        .post_empty("/api/v1/organizations", Some(&alice_access))
        .await;
    assert_eq!(alices.status, 201, "{}", alices.body);
    assert_eq!(alices.body["slug"], s.as_str());
    assert_eq!(alices.body["name"], "Alice");
}

#[tokio::test]
async fn approving_a_request_whose_slug_became_taken_is_a_conflict() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let alice = ctx.user().await;
    let s = slug();
    let first = submit(&ctx, &alice.access, "First", &s).await;
    let first_id = first.body["id"].as_str().unwrap().to_string();
    ctx.post_empty(
        &format!("/api/v1/organization-requests/{first_id}/approve"),
        Some(&admin.access),
    )
    .await;
    // Her own reservation does not keep Alice from asking for the slug again...
    let second = submit(&ctx, &alice.access, "Second", &s).await;
    assert_eq!(second.status, 201, "{}", second.body);
    let second_id = second.body["id"].as_str().unwrap().to_string();
    // ...but once the first approval made an organization of it, the second cannot be approved.
    let org = ctx
        .post_empty("/api/v1/organizations", Some(&alice.access))
        .await;
    assert_eq!(org.status, 201, "{}", org.body);
    assert_eq!(org.body["name"], "First");
    let approve = ctx
        .post_empty(
            &format!("/api/v1/organization-requests/{second_id}/approve"),
            Some(&admin.access),
        )
        .await;
    assert_conflict(&approve, USED, "approval re-checks the slug");
    let unchanged = ctx
        .get(
            &format!("/api/v1/organization-requests/{second_id}"),
            Some(&admin.access),
        )
        .await;
    assert_eq!(unchanged.body["status"], "PENDING", "{}", unchanged.body);
    assert!(unchanged.body["reservedUntil"].is_null());
    // The administrator can still answer it.
    let rejected = ctx
        .post(
            &format!("/api/v1/organization-requests/{second_id}/reject"),
            Some(&admin.access),
            json!({"reason": "the slug is in use"}),
        )
        .await;
    assert_eq!(rejected.status, 200, "{}", rejected.body);

    // And a slug a pending request asks for is refused to others with its own message.
    let bob = ctx.user().await;
    let other = slug();
    assert_eq!(submit(&ctx, &bob.access, "Bob", &other).await.status, 201);
    assert_conflict(
        &submit(&ctx, &alice.access, "Alice", &other).await,
        REQUESTED,
        "Bob's pending request",
    );
    let carol = ctx.user().await;
    assert_conflict(
        &submit(&ctx, &carol.access, "Carol", &s).await,
        USED,
        "Alice's organization",
    );
}
