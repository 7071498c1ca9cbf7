//! Organizations, switching, members, roles and invites.

use super::{Ctx, claims};
use chrono::Duration;
use serde_json::json;

#[tokio::test]
async fn reads_updates_switch_and_delete_follow_roles() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    let stranger = ctx.user().await;

    let c = claims(&owner.access);
    assert_eq!(c["tenantId"], org.as_str());
    assert_eq!(c["roles"], json!(["OWNER"]));
    assert_eq!(claims(&moderator.access)["roles"], json!(["MODERATOR"]));

    assert_eq!(
        ctx.get(
            &format!("/api/v1/organizations/{org}"),
            Some(&moderator.access)
        )
        .await
        .body["myRole"],
        "MODERATOR"
    );
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organizations/{org}"),
            Some(&stranger.access)
        )
        .await
        .status,
        403
    );
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organizations/{}", uuid::Uuid::now_v7()),
            Some(&owner.access)
        )
        .await
        .status,
        404
    );
    assert_eq!(
        ctx.get("/api/v1/organizations/not-a-uuid", Some(&owner.access))
            .await
            .status,
        400
    );
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/organizations/{org}/switch"),
            Some(&stranger.access)
        )
        .await
        .status,
        403
    );

    let by_moderator = ctx
        .put(
            &format!("/api/v1/organizations/{org}"),
            Some(&moderator.access),
            json!({"name": "Hijack"}),
        )
        .await;
    assert_eq!(by_moderator.status, 403);
    // A logo must be an image uploaded in the organization (tests/it/attachments.rs).
    let logo = crate::attachments::upload(&ctx, &owner.access, &crate::attachments::png()).await;
    let updated = ctx
        .put(
            &format!("/api/v1/organizations/{org}"),
            Some(&owner.access),
            json!({"name": "Renamed", "logoId": logo, "settings": {"language": "en"}}),
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["name"], "Renamed");
    assert_eq!(updated.body["logoId"], logo.to_string());
    let bad = ctx
        .put(
            &format!("/api/v1/organizations/{org}"),
            Some(&owner.access),
            json!({"settings": [1]}),
        )
        .await;
    assert_eq!(bad.status, 400);

    // Refreshing a switched session stays in the organization.
    let refreshed = ctx
        .post(
            "/api/v1/auth/refresh",
            None,
            json!({"refreshToken": owner.refresh}),
        )
        .await;
    assert_eq!(refreshed.status, 200);
    assert_eq!(
        claims(refreshed.body["accessToken"].as_str().unwrap())["tenantId"],
        org.as_str()
    );

    assert_eq!(
        ctx.delete(
            &format!("/api/v1/organizations/{org}"),
            Some(&moderator.access)
        )
        .await
        .status,
        403
    );
    assert_eq!(
        ctx.delete(&format!("/api/v1/organizations/{org}"), Some(&owner.access))
            .await
            .status,
        204
    );
    assert_eq!(
        ctx.get(&format!("/api/v1/organizations/{org}"), Some(&owner.access))
            .await
            .status,
        404
    );
    assert_eq!(
        ctx.get("/api/v1/organizations", Some(&owner.access))
            .await
            .body["totalElements"],
        0
    );
    // The owner of a deleted organization may now delete the account.
    assert_eq!(
        ctx.delete("/api/v1/users/me", Some(&owner.access))
            .await
            .status,
        204
    );
}

#[tokio::test]
async fn an_owner_cannot_delete_the_account_while_owning() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let refused = ctx.delete("/api/v1/users/me", Some(&owner.access)).await;
    assert_eq!(refused.status, 422);
}

#[tokio::test]
async fn invites_join_and_member_rules() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let stranger = ctx.user().await;

    let invite = ctx
        .post(
            &format!("/api/v1/organizations/{org}/invite"),
            Some(&owner.access),
            json!({"messengerUsername": "@petr"}),
        )
        .await;
    assert_eq!(invite.status, 201, "{}", invite.body);
    let code = invite.body["inviteCode"].as_str().unwrap().to_string();
    assert_eq!(
        invite.body["deepLink"],
        format!("https://t.me/bilet_test_bot?start={code}")
    );
    assert_eq!(invite.body["role"], "MODERATOR");
    assert_eq!(invite.body["messengerUsername"], "petr");
    assert_eq!(
        ctx.post(
            &format!("/api/v1/organizations/{org}/invite"),
            Some(&owner.access),
            json!({"role": "OWNER"})
        )
        .await
        .status,
        422
    );
    assert_eq!(
        ctx.post(
            &format!("/api/v1/organizations/{org}/invite"),
            Some(&owner.access),
            json!({"role": "KING"})
        )
        .await
        .status,
        400
    );
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/organizations/{org}/invite"),
            Some(&stranger.access)
        )
        .await
        .status,
        403
    );

    let mut petr = ctx.user().await;
    let joined = ctx
        .post_empty(
            &format!("/api/v1/organizations/join/{code}"),
            Some(&petr.access),
        )
        .await;
    assert_eq!(joined.status, 200, "{}", joined.body);
    assert_eq!(joined.body["myRole"], "MODERATOR");
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/organizations/join/{code}"),
            Some(&stranger.access)
        )
        .await
        .status,
        422,
        "used"
    );
    assert_eq!(
        ctx.post_empty("/api/v1/organizations/join/NOPE", Some(&stranger.access))
            .await
            .status,
        404
    );
    assert_eq!(
        ctx.post_empty(&format!("/api/v1/organizations/join/{code}"), None)
            .await
            .status,
        401
    );
    petr.access = ctx.switch(&petr, &org).await;

    // A moderator may invite too; an expired invite is refused.
    let late = ctx
        .post_empty(
            &format!("/api/v1/organizations/{org}/invite"),
            Some(&petr.access),
        )
        .await;
    assert_eq!(late.status, 201);
    ctx.clock.advance(Duration::days(7) + Duration::seconds(1));
    let late_code = late.body["inviteCode"].as_str().unwrap();
    let fresh = ctx.login(&stranger.email, super::PASSWORD).await;
    let stranger_access = fresh.body["accessToken"].as_str().unwrap().to_string();
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/organizations/join/{late_code}"),
            Some(&stranger_access)
        )
        .await
        .status,
        422
    );
    // Tokens of the others expired with the clock too; sign in again.
    let owner_access = ctx
        .switch(
            &super::session(
                &ctx.login(&owner.email, super::PASSWORD).await.body,
                &owner.email,
            ),
            &org,
        )
        .await;
    let petr_access = ctx
        .switch(
            &super::session(
                &ctx.login(&petr.email, super::PASSWORD).await.body,
                &petr.email,
            ),
            &org,
        )
        .await;

    let members = ctx
        .get(
            &format!("/api/v1/organizations/{org}/members?sort=joinedAt,asc"),
            Some(&owner_access),
        )
        .await;
    assert_eq!(members.body["totalElements"], 2);
    assert_eq!(members.body["data"][0]["role"], "OWNER");
    assert_eq!(members.body["data"][1]["userId"], petr.user_id.as_str());
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organizations/{org}/members"),
            Some(&stranger_access)
        )
        .await
        .status,
        403
    );
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organizations/{org}/members?sort=password"),
            Some(&owner_access)
        )
        .await
        .status,
        400
    );

    let member = |id: &str| format!("/api/v1/organizations/{org}/members/{id}");
    assert_eq!(
        ctx.put(
            &member(&petr.user_id),
            Some(&petr_access),
            json!({"role": "MODERATOR"})
        )
        .await
        .status,
        403,
        "only the owner assigns roles"
    );
    assert_eq!(
        ctx.put(
            &member(&owner.user_id),
            Some(&owner_access),
            json!({"role": "MODERATOR"})
        )
        .await
        .status,
        422,
        "the owner stays owner"
    );
    assert_eq!(
        ctx.put(
            &member(&petr.user_id),
            Some(&owner_access),
            json!({"role": "OWNER"})
        )
        .await
        .status,
        422,
        "one owner"
    );
    let set = ctx
        .put(
            &member(&petr.user_id),
            Some(&owner_access),
            json!({"role": "MODERATOR"}),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["role"], "MODERATOR");
    assert_eq!(
        ctx.put(
            &member(&stranger.user_id),
            Some(&owner_access),
            json!({"role": "MODERATOR"})
        )
        .await
        .status,
        404
    );
    assert_eq!(
        ctx.put(&member(&petr.user_id), Some(&owner_access), json!({}))
            .await
            .status,
        400
    );

    assert_eq!(
        ctx.delete(&member(&owner.user_id), Some(&petr_access))
            .await
            .status,
        422,
        "the owner cannot be removed"
    );
    assert_eq!(
        ctx.delete(&member(&owner.user_id), Some(&owner_access))
            .await
            .status,
        422
    );
    let third = ctx
        .moderator(
            &super::Session {
                access: owner_access.clone(),
                ..owner.clone()
            },
            &org,
        )
        .await;
    assert_eq!(
        ctx.delete(&member(&third.user_id), Some(&petr_access))
            .await
            .status,
        403,
        "moderators do not remove others"
    );
    assert_eq!(
        ctx.delete(&member(&third.user_id), Some(&owner_access))
            .await
            .status,
        204
    );
    assert_eq!(
        ctx.delete(&member(&petr.user_id), Some(&petr_access))
            .await
            .status,
        204,
        "a member may leave"
    );
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organizations/{org}/members"),
            Some(&owner_access)
        )
        .await
        .body["totalElements"],
        1
    );
}
