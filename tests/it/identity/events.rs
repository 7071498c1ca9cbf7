//! Every event of the identity service's table, observed on RabbitMQ by a test consumer.

use super::Ctx;
use crate::support::{amqp_url, eventually};
use serde_json::json;

#[tokio::test]
async fn every_identity_event_reaches_the_broker() {
    let exchange = format!("bilet.test-{}", uuid::Uuid::now_v7().simple());
    let ctx = Ctx::with_broker(Some((amqp_url(), exchange))).await;
    let admin = ctx.admin().await;
    ctx.put(
        "/api/v1/users/me",
        Some(&admin.access),
        json!({"firstName": "Admin"}),
    )
    .await;
    let (owner, org) = ctx.owner(&admin).await;
    ctx.put(
        &format!("/api/v1/organizations/{org}"),
        Some(&owner.access),
        json!({"name": "Renamed"}),
    )
    .await;
    let moderator = ctx.moderator(&owner, &org).await;
    ctx.put(
        &format!("/api/v1/organizations/{org}/members/{}", moderator.user_id),
        Some(&owner.access),
        json!({"role": "MODERATOR"}),
    )
    .await;
    let rejected = ctx.user().await;
    let r = ctx.post("/api/v1/organization-requests", Some(&rejected.access), json!({"name": "No", "slug": format!("no-{}", &uuid::Uuid::now_v7().simple().to_string()[20..])})).await;
    ctx.post(
        &format!(
            "/api/v1/organization-requests/{}/reject",
            r.body["id"].as_str().unwrap()
        ),
        Some(&admin.access),
        json!({"reason": "no"}),
    )
    .await;
    let group = ctx
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&owner.access),
            json!({"name": "G"}),
        )
        .await;
    let code = ctx
        .post_empty(
            &format!(
                "/api/v1/groups/{}/invite",
                group.body["id"].as_str().unwrap()
            ),
            Some(&owner.access),
        )
        .await;
    ctx.post_empty(
        &format!(
            "/api/v1/groups/join/{}",
            code.body["inviteCode"].as_str().unwrap()
        ),
        Some(&rejected.access),
    )
    .await;
    ctx.delete(
        &format!("/api/v1/organizations/{org}/members/{}", moderator.user_id),
        Some(&owner.access),
    )
    .await;
    ctx.delete(&format!("/api/v1/organizations/{org}"), Some(&owner.access))
        .await;

    let expected = [
        "user.registered",
        "user.updated",
        "organization.request.created",
        "organization.request.approved",
        "organization.request.rejected",
        "organization.created",
        "organization.updated",
        "organization.deleted",
        "organization.member.added",
        "organization.member.removed",
        "organization.member.role.changed",
        "group.created",
        "group.member.added",
    ];
    let all_seen = eventually(30, || async {
        expected.iter().all(|t| !ctx.events.of(t).is_empty())
    })
    .await;
    let missing: Vec<_> = expected
        .iter()
        .filter(|t| ctx.events.of(t).is_empty())
        .collect();
    assert!(all_seen, "events never observed: {missing:?}");

    let created = &ctx.events.of("organization.created")[0];
    assert_eq!(created.tenant_id.map(|t| t.to_string()), Some(org.clone()));
    assert_eq!(created.data.value()["ownerId"], owner.user_id.as_str());
    assert!(created.data.value()["slug"].is_string() && created.data.value()["name"].is_string());
    let added = &ctx.events.of("organization.member.added")[0];
    assert_eq!(added.data.value()["userId"], moderator.user_id.as_str());
    assert_eq!(added.data.value()["role"], "MODERATOR");
    let joined = &ctx.events.of("group.member.added")[0];
    assert_eq!(joined.data.value()["groupId"], group.body["id"]);
    assert_eq!(joined.data.value()["organizationId"], org.as_str());
    assert_eq!(joined.data.value()["userId"], rejected.user_id.as_str());
    assert_eq!(
        ctx.events.of("organization.request.rejected")[0]
            .data
            .value()["reason"],
        "no"
    );
    assert_eq!(
        ctx.events.of("organization.deleted")[0].data.value()["organizationId"],
        org.as_str()
    );
    // Four users registered in this scenario, each announced once.
    assert_eq!(ctx.events.of("user.registered").len(), 4);
}
