//! Copying an event (`POST /events/{id}/copy`): a new draft with the source's details and the
//! ticket types on offer, none of its registrations, moved in time as a whole; refused for
//! other organizations, participants, bad input and dates past the calendar.

use crate::identity::Ctx;
use chrono::{DateTime, Duration, Utc};
use serde_json::{Value, json};

fn time(v: &Value) -> DateTime<Utc> {
    v.as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_copy_is_a_draft_with_the_types_on_offer_moved_with_its_start() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (stranger, _) = ctx.owner(&admin).await;
    let participant = ctx.user().await;
    let start = Utc::now() + Duration::days(10);
    let source = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Jazz night", "description": "Trio", "startsAt": start.to_rfc3339(),
                   "endsAt": (start + Duration::hours(3)).to_rfc3339(), "timezone": "Europe/Moscow",
                   "locationType": "OFFLINE", "locationAddress": "Club, 1", "settings": {"doors": 30}}),
        )
        .await;
    assert_eq!(source.status, 201, "{}", source.body);
    let id = source.body["id"].as_str().unwrap().to_string();
    let types = format!("/api/v1/events/{id}/ticket-types");
    let sales_end = start - Duration::hours(1);
    let paid = ctx
        .post(
            &types,
            Some(&owner.access),
            json!({"name": "Table", "quantity": 2, "priceCents": 150000, "currency": "RUB",
                   "reservationMinutes": 30, "salesEnd": sales_end.to_rfc3339()}),
        )
        .await;
    assert_eq!(paid.status, 201, "{}", paid.body);
    let free = ctx
        .post(
            &types,
            Some(&owner.access),
            json!({"name": "Standing", "quantity": 5}),
        )
        .await;
    assert_eq!(free.status, 201, "{}", free.body);
    let off = ctx
        .post(
            &types,
            Some(&owner.access),
            json!({"name": "Off", "quantity": 5, "isActive": false}),
        )
        .await;
    assert_eq!(off.status, 201, "{}", off.body);
    let publish = ctx
        .post_empty(&format!("/api/v1/events/{id}/publish"), Some(&owner.access))
        .await;
    assert_eq!(publish.status, 200, "{}", publish.body);
    let free_id = free.body["id"].as_str().unwrap();
    let taken = crate::support::send(
        ctx.http
            .post(format!("{}/api/v1/events/{id}/registrations", ctx.base))
            .bearer_auth(&participant.access)
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": free_id, "firstName": "Ann", "lastName": "Lee"})),
    )
    .await;
    assert_eq!(taken.status, 201, "{}", taken.body);

    // Same date: everything but the id, slug, status and registrations is the source's.
    let copy = ctx
        .post(
            &format!("/api/v1/events/{id}/copy"),
            Some(&owner.access),
            json!({}),
        )
        .await;
    assert_eq!(copy.status, 201, "{}", copy.body);
    let c = &copy.body;
    assert_ne!(c["id"], source.body["id"]);
    assert_ne!(c["slug"], source.body["slug"]);
    assert_eq!(c["status"], "DRAFT");
    for field in [
        "title",
        "description",
        "startsAt",
        "endsAt",
        "timezone",
        "locationType",
        "locationAddress",
        "settings",
    ] {
        assert_eq!(c[field], source.body[field], "{field}");
    }
    let copied = ctx
        .get(
            &format!(
                "/api/v1/events/{}/ticket-types?size=100",
                c["id"].as_str().unwrap()
            ),
            Some(&owner.access),
        )
        .await;
    assert_eq!(copied.status, 200);
    let listed = copied.body["data"].as_array().unwrap();
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Table", "Standing"], "the types on offer, in order");
    assert_eq!(listed[0]["priceCents"], 150000);
    assert_eq!(listed[0]["currency"], "RUB");
    assert_eq!(listed[0]["reservationMinutes"], 30);
    assert_eq!(listed[0]["salesEnd"], paid.body["salesEnd"]);
    assert_eq!(listed[1]["quantity"], 5);
    assert_eq!(
        listed[1]["available"], 5,
        "no seat of the source is taken in the copy"
    );
    let mine = ctx
        .get(
            &format!("/api/v1/events/{}/registrations", c["id"].as_str().unwrap()),
            Some(&owner.access),
        )
        .await;
    assert_eq!(mine.body["totalElements"], 0, "{}", mine.body);

    // A new date and title: the end and the sales window move with the start.
    let later = start + Duration::days(35) + Duration::minutes(30);
    let moved = ctx
        .post(
            &format!("/api/v1/events/{id}/copy"),
            Some(&owner.access),
            json!({"title": "  Jazz night II ", "startsAt": later.to_rfc3339()}),
        )
        .await;
    assert_eq!(moved.status, 201, "{}", moved.body);
    assert_eq!(moved.body["title"], "Jazz night II");
    let shift = time(&moved.body["startsAt"]) - time(&source.body["startsAt"]);
    assert_eq!(shift, later - start);
    assert_eq!(
        time(&moved.body["endsAt"]),
        time(&source.body["endsAt"]) + shift
    );
    let moved_types = ctx
        .get(
            &format!(
                "/api/v1/events/{}/ticket-types",
                moved.body["id"].as_str().unwrap()
            ),
            Some(&owner.access),
        )
        .await;
    assert_eq!(
        time(&moved_types.body["data"][0]["salesEnd"]),
        time(&paid.body["salesEnd"]) + shift
    );

    // Refusals: nothing is created by any of them.
    let count = || async {
        ctx.get("/api/v1/events?size=100", Some(&owner.access))
            .await
            .body["totalElements"]
            .clone()
    };
    let before = count().await;
    assert_eq!(before, 3);
    let path = format!("/api/v1/events/{id}/copy");
    let r = ctx.post(&path, Some(&stranger.access), json!({})).await;
    assert_eq!(r.status, 404, "another organization's event: {}", r.body);
    let r = ctx.post(&path, Some(&participant.access), json!({})).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = ctx.post(&path, None, json!({})).await;
    assert_eq!(r.status, 401);
    let unknown = format!("/api/v1/events/{}/copy", uuid::Uuid::now_v7());
    assert_eq!(
        ctx.post(&unknown, Some(&owner.access), json!({}))
            .await
            .status,
        404
    );
    let r = ctx
        .post(&path, Some(&owner.access), json!({"title": " \t "}))
        .await;
    assert_eq!(r.status, 400);
    assert!(r.body["details"]["title"].is_string(), "{}", r.body);
    let r = ctx
        .post(&path, Some(&owner.access), json!({"slug": "mine"}))
        .await;
    assert_eq!(r.status, 400, "unknown fields are refused: {}", r.body);
    let r = ctx
        .post(
            &path,
            Some(&owner.access),
            json!({"startsAt": "1999-12-31T00:00:00Z"}),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(r.body["details"]["startsAt"].is_string(), "{}", r.body);
    let r = ctx
        .post(&path, Some(&owner.access), json!({"startsAt": 5}))
        .await;
    assert_eq!(r.status, 400);
    // The end is three hours after the start: a copy starting on the last evening of 9999
    // would end in the year 10000.
    let r = ctx
        .post(
            &path,
            Some(&owner.access),
            json!({"startsAt": "9999-12-31T23:00:00Z"}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "The copy's dates would fall outside the years 1 to 9999"
    );
    assert_eq!(count().await, before, "no refused copy was stored");
}
