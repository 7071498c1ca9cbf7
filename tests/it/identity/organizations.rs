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
    // Tokens issued for the organization end with it; the session goes on without it.
    assert_eq!(
        ctx.get("/api/v1/organizations", Some(&owner.access))
            .await
            .status,
        401
    );
    let again = ctx.login(&owner.email, super::PASSWORD).await;
    assert_eq!(again.status, 200, "{}", again.body);
    let owner = crate::identity::session(&again.body, &owner.email);
    assert!(claims(&owner.access)["tenantId"].is_null());
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
    // A role change ends the member's tokens at once; a new one carries the role as it is.
    assert_eq!(
        ctx.get(&format!("/api/v1/organizations/{org}"), Some(&petr_access))
            .await
            .status,
        401
    );
    let petr_access = ctx
        .switch(
            &super::session(
                &ctx.login(&petr.email, super::PASSWORD).await.body,
                &petr.email,
            ),
            &org,
        )
        .await;
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

/// Creates an invite of `org` with `token`; the creation answer.
async fn create_invite(
    ctx: &Ctx,
    token: &str,
    org: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let r = ctx
        .post(
            &format!("/api/v1/organizations/{org}/invite"),
            Some(token),
            body,
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

/// A new access token of `s` in `org`, after the clock moved on.
async fn signed_in_again(ctx: &Ctx, s: &super::Session, org: &str) -> String {
    let fresh = super::session(&ctx.login(&s.email, super::PASSWORD).await.body, &s.email);
    ctx.switch(&fresh, org).await
}

/// The address of one pending invite.
fn withdraw(org: &str, id: &str) -> String {
    format!("/api/v1/organizations/{org}/invites/{id}")
}

/// An RFC 3339 time from a JSON answer, in microseconds (what the database keeps).
fn micros(v: &serde_json::Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap())
        .unwrap()
        .timestamp_micros()
}

#[tokio::test]
async fn pending_invites_list_what_still_works_newest_first() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    // Joined through an invite: that one is used and not listed.
    let moderator = ctx.moderator(&owner, &org).await;
    let stale = create_invite(&ctx, &owner.access, &org, json!({})).await;

    // Almost a week later: two more, one by the moderator (who may invite, and so list).
    ctx.clock.advance(Duration::days(7) - Duration::minutes(2));
    let owner_access = signed_in_again(&ctx, &owner, &org).await;
    let moderator_access = signed_in_again(&ctx, &moderator, &org).await;
    let first = create_invite(
        &ctx,
        &owner_access,
        &org,
        json!({"messengerUsername": "@anna"}),
    )
    .await;
    ctx.clock.advance(Duration::seconds(1));
    let second = create_invite(&ctx, &moderator_access, &org, json!({})).await;
    let path = format!("/api/v1/organizations/{org}/invites");
    let before = ctx.get(&path, Some(&owner_access)).await;
    assert_eq!(before.status, 200, "{}", before.body);
    assert_eq!(before.body["totalElements"], 3, "{}", before.body);
    assert_eq!(before.body["data"][2]["id"], stale["id"]);

    // The first one has expired now.
    ctx.clock.advance(Duration::minutes(3));
    let listed = ctx.get(&path, Some(&owner_access)).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["totalElements"], 2, "{}", listed.body);
    let data = listed.body["data"].as_array().unwrap();
    assert_eq!(data[0]["id"], second["id"], "newest first");
    assert_eq!(data[1]["id"], first["id"]);
    let anna = &data[1];
    assert_eq!(anna["organizationId"], org.as_str());
    assert_eq!(anna["inviteCode"], first["inviteCode"]);
    assert_eq!(anna["deepLink"], first["deepLink"]);
    assert_eq!(
        anna["deepLink"],
        format!(
            "https://t.me/bilet_test_bot?start={}",
            first["inviteCode"].as_str().unwrap()
        )
    );
    assert_eq!(anna["role"], "MODERATOR");
    assert_eq!(anna["messengerUsername"], "anna");
    assert_eq!(micros(&anna["expiresAt"]), micros(&first["expiresAt"]));
    assert_eq!(
        micros(&anna["expiresAt"]) - micros(&anna["createdAt"]),
        Duration::days(7).num_microseconds().unwrap()
    );
    assert!(data[0]["messengerUsername"].is_null());
    assert!(micros(&data[0]["createdAt"]) > micros(&anna["createdAt"]));

    // The moderator sees the same list; paging and the other sort work.
    let by_moderator = ctx.get(&path, Some(&moderator_access)).await;
    assert_eq!(by_moderator.status, 200, "{}", by_moderator.body);
    assert_eq!(by_moderator.body["totalElements"], 2);
    let oldest = ctx
        .get(
            &format!("{path}?sort=expiresAt,asc&size=1&page=0"),
            Some(&owner_access),
        )
        .await;
    assert_eq!(oldest.status, 200, "{}", oldest.body);
    assert_eq!(oldest.body["data"].as_array().unwrap().len(), 1);
    assert_eq!(oldest.body["data"][0]["id"], first["id"]);
    assert_eq!(oldest.body["hasNext"], true);

    // Using one takes it off the list.
    let mut joiner = ctx.user().await;
    let code = second["inviteCode"].as_str().unwrap();
    let joined = ctx
        .post_empty(
            &format!("/api/v1/organizations/join/{code}"),
            Some(&joiner.access),
        )
        .await;
    assert_eq!(joined.status, 200, "{}", joined.body);
    joiner.access = ctx.switch(&joiner, &org).await;
    let after = ctx.get(&path, Some(&joiner.access)).await;
    assert_eq!(after.status, 200, "{}", after.body);
    assert_eq!(after.body["totalElements"], 1);
    assert_eq!(after.body["data"][0]["id"], first["id"]);
}

#[tokio::test]
async fn pending_invites_are_for_the_organizations_inviters_only() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let (other_owner, other_org) = ctx.owner(&admin).await;
    let stranger = ctx.user().await;
    create_invite(&ctx, &owner.access, &org, json!({})).await;
    let path = format!("/api/v1/organizations/{org}/invites");

    assert_eq!(
        ctx.get(&path, Some(&stranger.access)).await.status,
        403,
        "not a member"
    );
    let other = ctx.get(&path, Some(&other_owner.access)).await;
    assert_eq!(other.status, 403, "the owner of another organization");
    assert!(other.body["data"].is_null(), "{}", other.body);
    // Their own list does not show ours.
    let theirs = ctx
        .get(
            &format!("/api/v1/organizations/{other_org}/invites"),
            Some(&other_owner.access),
        )
        .await;
    assert_eq!(theirs.status, 200, "{}", theirs.body);
    assert_eq!(theirs.body["totalElements"], 0);
    assert_eq!(
        ctx.get(
            &format!("/api/v1/organizations/{}/invites", uuid::Uuid::now_v7()),
            Some(&owner.access)
        )
        .await
        .status,
        404,
        "no such organization"
    );
    assert_eq!(ctx.get(&path, None).await.status, 401);
    assert_eq!(
        ctx.get(
            "/api/v1/organizations/not-a-uuid/invites",
            Some(&owner.access)
        )
        .await
        .status,
        400
    );
    for bad in [
        "sort=inviteCode,asc",
        "sort=createdAt,sideways",
        "size=0",
        "size=101",
        "size=abc",
        "page=-1",
    ] {
        let r = ctx.get(&format!("{path}?{bad}"), Some(&owner.access)).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(r.body["code"], "validation_error", "{bad}");
    }
}

#[tokio::test]
async fn a_withdrawn_invite_no_longer_lets_anyone_join() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let (other_owner, other_org) = ctx.owner(&admin).await;
    let stranger = ctx.user().await;
    let kept = create_invite(&ctx, &owner.access, &org, json!({})).await;
    let gone = create_invite(&ctx, &owner.access, &org, json!({})).await;
    let gone_id = gone["id"].as_str().unwrap();

    assert_eq!(
        ctx.delete(&withdraw(&org, gone_id), Some(&stranger.access))
            .await
            .status,
        403,
        "not a member"
    );
    assert_eq!(
        ctx.delete(&withdraw(&org, gone_id), Some(&other_owner.access))
            .await
            .status,
        403,
        "the owner of another organization"
    );
    assert_eq!(
        ctx.delete(&withdraw(&other_org, gone_id), Some(&other_owner.access))
            .await
            .status,
        404,
        "not an invite of their organization"
    );
    assert_eq!(ctx.delete(&withdraw(&org, gone_id), None).await.status, 401);
    assert_eq!(
        ctx.delete(&withdraw(&org, "not-a-uuid"), Some(&owner.access))
            .await
            .status,
        400
    );
    assert_eq!(
        ctx.delete(
            &withdraw(&org, &uuid::Uuid::now_v7().to_string()),
            Some(&owner.access)
        )
        .await
        .status,
        404,
        "unknown invite"
    );

    let done = ctx
        .delete(&withdraw(&org, gone_id), Some(&owner.access))
        .await;
    assert_eq!(done.status, 204, "{}", done.body);
    assert!(done.body.is_null());
    assert_eq!(
        ctx.delete(&withdraw(&org, gone_id), Some(&owner.access))
            .await
            .status,
        404,
        "withdrawn already"
    );
    let listed = ctx
        .get(
            &format!("/api/v1/organizations/{org}/invites"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(listed.body["totalElements"], 1, "{}", listed.body);
    assert_eq!(listed.body["data"][0]["id"], kept["id"]);

    // The withdrawn code lets nobody in; the other one still works.
    let code = gone["inviteCode"].as_str().unwrap();
    let refused = ctx
        .post_empty(
            &format!("/api/v1/organizations/join/{code}"),
            Some(&stranger.access),
        )
        .await;
    assert_eq!(refused.status, 404, "{}", refused.body);
    let kept_code = kept["inviteCode"].as_str().unwrap();
    let joined = ctx
        .post_empty(
            &format!("/api/v1/organizations/join/{kept_code}"),
            Some(&stranger.access),
        )
        .await;
    assert_eq!(joined.status, 200, "{}", joined.body);
    // A used invite is no longer pending: nothing to withdraw.
    assert_eq!(
        ctx.delete(
            &withdraw(&org, kept["id"].as_str().unwrap()),
            Some(&owner.access)
        )
        .await
        .status,
        404
    );
    let members = ctx
        .get(
            &format!("/api/v1/organizations/{org}/members"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(members.body["totalElements"], 2, "{}", members.body);
}
