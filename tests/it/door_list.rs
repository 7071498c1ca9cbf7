//! The door's view of an event (`GET /events/{id}/door`): checked in against expected per
//! ticket type, and with `tickets=true` every ticket that lets someone in — for the
//! organization's staff only.

use crate::identity::Ctx;
use crate::ticketing::{participant, register, setup};
use serde_json::json;
use uuid::Uuid;

#[tokio::test]
async fn the_door_counts_who_is_in_and_lists_valid_tickets_for_staff_only() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, free) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 5})).await;
    let mut codes = Vec::new();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (_, token) = participant();
        let r = register(&ctx, &token, &event, &free, &Uuid::new_v4().to_string()).await;
        assert_eq!(r.status, 201, "{}", r.body);
        codes.push(r.body["confirmationCode"].as_str().unwrap().to_string());
        ids.push(r.body["id"].as_str().unwrap().to_string());
    }
    // One in, one cancelled (no longer a valid ticket), one still expected.
    let checked = ctx
        .post(
            &format!("/api/v1/events/{event}/check-in"),
            Some(&owner.access),
            json!({"confirmationCode": codes[0]}),
        )
        .await;
    assert_eq!(checked.status, 200, "{}", checked.body);
    let cancelled = ctx
        .delete(
            &format!("/api/v1/registrations/{}", ids[1]),
            Some(&owner.access),
        )
        .await;
    assert!(cancelled.status < 300, "{}", cancelled.body);

    let door = ctx
        .get(&format!("/api/v1/events/{event}/door"), Some(&owner.access))
        .await;
    assert_eq!(door.status, 200, "{}", door.body);
    assert_eq!(door.body["expected"], 2, "{}", door.body);
    assert_eq!(door.body["checkedIn"], 1, "{}", door.body);
    assert_eq!(door.body["byType"][0]["name"], "Free");
    assert_eq!(door.body["byType"][0]["expected"], 2);
    assert!(door.body["readAt"].is_string());
    assert!(
        door.body.get("tickets").is_none(),
        "only when asked: {}",
        door.body
    );

    let with = ctx
        .get(
            &format!("/api/v1/events/{event}/door?tickets=true"),
            Some(&owner.access),
        )
        .await;
    let tickets = with.body["tickets"].as_array().unwrap();
    assert_eq!(tickets.len(), 2, "{}", with.body);
    let a = tickets
        .iter()
        .find(|t| t["code"] == codes[0].as_str())
        .unwrap();
    assert!(a["checkedInAt"].is_string(), "{a}");
    assert_eq!(a["name"], "Ann Lee");
    let c = tickets
        .iter()
        .find(|t| t["code"] == codes[2].as_str())
        .unwrap();
    assert!(c["checkedInAt"].is_null(), "{c}");
    assert!(
        !tickets.iter().any(|t| t["code"] == codes[1].as_str()),
        "a cancelled ticket lets nobody in"
    );

    // Nobody else: a participant (403), another organization (404), no token (401), a bad
    // flag (400).
    let (_, stranger) = participant();
    let r = ctx
        .get(&format!("/api/v1/events/{event}/door"), Some(&stranger))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let (other, _) = ctx.owner(&admin).await;
    let r = ctx
        .get(
            &format!("/api/v1/events/{event}/door?tickets=true"),
            Some(&other.access),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{event}/door"), None)
            .await
            .status,
        401
    );
    let r = ctx
        .get(
            &format!("/api/v1/events/{event}/door?tickets=maybe"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = ctx
        .get(
            &format!("/api/v1/events/{}/door", Uuid::new_v4()),
            Some(&owner.access),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
}
