//! The catalogue's cards: each listed event says what it offers — the lowest price of the
//! types on sale and whether seats are plentiful, few or gone — counted from the same seats
//! registrations take.

use crate::identity::Ctx;
use chrono::{Duration, Utc};
use serde_json::{Value, json};

async fn listed(ctx: &Ctx, id: &str) -> Value {
    let r = ctx.get("/api/v1/events?size=100", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} listed: {}", r.body))
}

/// A new participant takes a seat of `ticket_type` (reserved: the seat is held either way).
async fn take_seat(ctx: &Ctx, event: &str, ticket_type: &str) {
    let person = ctx.user().await;
    let r = crate::support::send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(&person.access)
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .json(&json!({"ticketTypeId": ticket_type, "firstName": "Ann", "lastName": "Lee"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn a_card_shows_the_lowest_price_and_seats_going_from_plenty_to_few_to_none() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let start = (Utc::now() + Duration::days(5)).to_rfc3339();
    let create = |title: &'static str| {
        let (ctx, token, start) = (&ctx, owner.access.clone(), start.clone());
        async move {
            let r = ctx
                .post(
                    "/api/v1/events",
                    Some(&token),
                    json!({"title": title, "startsAt": start}),
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.body);
            r.body["id"].as_str().unwrap().to_string()
        }
    };
    let add_type = |event: String, body: Value| {
        let (ctx, token) = (&ctx, owner.access.clone());
        async move {
            let r = ctx
                .post(
                    &format!("/api/v1/events/{event}/ticket-types"),
                    Some(&token),
                    body,
                )
                .await;
            assert_eq!(r.status, 201, "{}", r.body);
            r.body["id"].as_str().unwrap().to_string()
        }
    };
    let gig = create("Gig").await;
    // Not counted: a type taken off sale and one whose sales ended.
    add_type(gig.clone(), json!({"name": "Off", "quantity": 50, "priceCents": 100, "currency": "RUB", "isActive": false})).await;
    let ended = (Utc::now() - Duration::hours(1)).to_rfc3339();
    add_type(gig.clone(), json!({"name": "Early", "quantity": 50, "priceCents": 200, "currency": "RUB", "salesEnd": ended})).await;
    add_type(
        gig.clone(),
        json!({"name": "Balcony", "quantity": 4, "priceCents": 90000, "currency": "RUB"}),
    )
    .await;
    let floor = add_type(
        gig.clone(),
        json!({"name": "Floor", "quantity": 8, "priceCents": 50000, "currency": "RUB"}),
    )
    .await;
    let empty = create("Nothing on sale yet").await;
    for id in [&gig, &empty] {
        let r = ctx
            .post_empty(&format!("/api/v1/events/{id}/publish"), Some(&owner.access))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }

    let card = listed(&ctx, &gig).await;
    assert_eq!(
        card["offer"],
        json!({"lowestPriceCents": 50000, "currency": "RUB", "seatsLeft": 12, "availability": "AVAILABLE"})
    );
    assert!(
        listed(&ctx, &empty).await.get("offer").is_none(),
        "no type on offer, no offer"
    );

    // Seven of twelve seats go: five left is "few".
    for _ in 0..7 {
        take_seat(&ctx, &gig, &floor).await;
    }
    let card = listed(&ctx, &gig).await;
    assert_eq!(card["offer"]["seatsLeft"], 5, "{}", card);
    assert_eq!(card["offer"]["availability"], "FEW_LEFT");
    assert_eq!(
        card["offer"]["lowestPriceCents"], 50000,
        "the cheapest type still has a seat"
    );

    // The last floor seat is taken: the card's price is the balcony's, the one left to buy.
    take_seat(&ctx, &gig, &floor).await;
    let card = listed(&ctx, &gig).await;
    assert_eq!(
        card["offer"],
        json!({"lowestPriceCents": 90000, "currency": "RUB", "seatsLeft": 4, "availability": "FEW_LEFT"})
    );

    // The balcony goes off sale: sold out, and the price is the lowest of what was on offer.
    let types = ctx
        .get(
            &format!("/api/v1/events/{gig}/ticket-types?size=100"),
            Some(&owner.access),
        )
        .await;
    let balcony = types.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Balcony")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = ctx
        .put(
            &format!("/api/v1/events/{gig}/ticket-types/{balcony}"),
            Some(&owner.access),
            json!({"name": "Balcony", "quantity": 4, "priceCents": 90000, "currency": "RUB", "isActive": false}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let card = listed(&ctx, &gig).await;
    assert_eq!(
        card["offer"],
        json!({"lowestPriceCents": 50000, "currency": "RUB", "seatsLeft": 0, "availability": "SOLD_OUT"})
    );
}
