//! Groups: management by organizers, joining by code.

use super::Ctx;
use serde_json::json;

#[tokio::test]
async fn groups_are_managed_by_organizers_and_joined_by_code() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    let participant = ctx.user().await;

    let groups = format!("/api/v1/organizations/{org}/groups");
    assert_eq!(
        ctx.post(&groups, Some(&participant.access), json!({"name": "VIP"}))
            .await
            .status,
        403
    );
    assert_eq!(
        ctx.post(&groups, Some(&owner.access), json!({"name": " "}))
            .await
            .status,
        400
    );
    assert_eq!(
        ctx.post(
            &groups,
            Some(&owner.access),
            json!({"description": "no name"})
        )
        .await
        .status,
        400
    );
    let created = ctx
        .post(
            &groups,
            Some(&moderator.access),
            json!({"name": "VIP", "description": "Близкие друзья"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["id"].as_str().unwrap().to_string();
    assert_eq!(created.body["organizationId"], org.as_str());
    ctx.post(&groups, Some(&owner.access), json!({"name": "Staff"}))
        .await;

    let list = ctx
        .get(&format!("{groups}?sort=name,asc"), Some(&owner.access))
        .await;
    assert_eq!(list.body["totalElements"], 2);
    assert_eq!(list.body["data"][0]["name"], "Staff");
    assert_eq!(
        ctx.get(&groups, Some(&participant.access)).await.status,
        403
    );

    let group = format!("/api/v1/groups/{id}");
    assert_eq!(ctx.get(&group, Some(&participant.access)).await.status, 403);
    assert_eq!(
        ctx.post_empty(&format!("{group}/invite"), Some(&participant.access))
            .await
            .status,
        403
    );
    let invite = ctx
        .post_empty(&format!("{group}/invite"), Some(&owner.access))
        .await;
    assert_eq!(invite.status, 201);
    let code = invite.body["inviteCode"].as_str().unwrap().to_string();
    assert_eq!(
        invite.body["deepLink"],
        format!("https://t.me/bilet_test_bot?start={code}")
    );

    let joined = ctx
        .post_empty(
            &format!("/api/v1/groups/join/{code}"),
            Some(&participant.access),
        )
        .await;
    assert_eq!(joined.status, 200, "{}", joined.body);
    assert_eq!(joined.body["id"], id.as_str());
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/groups/join/{code}"),
            Some(&participant.access)
        )
        .await
        .status,
        409
    );
    assert_eq!(
        ctx.post_empty("/api/v1/groups/join/WRONG", Some(&participant.access))
            .await
            .status,
        404
    );
    assert_eq!(
        ctx.get(&group, Some(&participant.access)).await.status,
        200,
        "group members see their group"
    );

    let members = ctx
        .get(&format!("{group}/members"), Some(&owner.access))
        .await;
    assert_eq!(members.body["totalElements"], 1);
    assert_eq!(
        members.body["data"][0]["userId"],
        participant.user_id.as_str()
    );
    assert_eq!(
        ctx.get(&format!("{group}/members"), Some(&participant.access))
            .await
            .status,
        403
    );

    assert_eq!(
        ctx.put(&group, Some(&participant.access), json!({"name": "Mine"}))
            .await
            .status,
        403
    );
    let renamed = ctx
        .put(&group, Some(&owner.access), json!({"name": "VVIP"}))
        .await;
    assert_eq!(renamed.status, 200);
    assert_eq!(renamed.body["name"], "VVIP");
    assert_eq!(renamed.body["description"], "Близкие друзья");
    assert_eq!(
        ctx.delete(&group, Some(&participant.access)).await.status,
        403
    );
    assert_eq!(ctx.delete(&group, Some(&owner.access)).await.status, 204);
    assert_eq!(ctx.get(&group, Some(&owner.access)).await.status, 404);
    assert_eq!(
        ctx.get(
            &format!("/api/v1/groups/{}", uuid::Uuid::now_v7()),
            Some(&owner.access)
        )
        .await
        .status,
        404
    );
}
