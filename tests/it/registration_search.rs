//! Finding people among an event's registrations (`?search=`): organizers by words that begin
//! a name or an email, case aside, or by a whole code; a participant of an open event by the
//! others' names only; another organization not at all; wildcards taken literally; a search
//! too long or with control characters refused by field.

use crate::identity::Ctx;
use crate::ticketing::{participant, setup};
use serde_json::{Value, json};
use uuid::Uuid;

async fn register(ctx: &Ctx, token: &str, event: &str, ticket_type: &str, who: Value) -> Value {
    let mut body = json!({"ticketTypeId": ticket_type});
    body.as_object_mut()
        .unwrap()
        .extend(who.as_object().unwrap().clone());
    let r = crate::support::send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(token)
            .header("X-Idempotency-Key", Uuid::new_v4().to_string())
            .json(&body),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

/// The names (first and last) a search finds, sorted, as `token` sees them.
async fn found(ctx: &Ctx, token: &str, event: &str, search: &str) -> Vec<String> {
    let query: String = form_urlencoded::byte_serialize(search.as_bytes()).collect();
    let r = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations?search={query}"),
            Some(token),
        )
        .await;
    assert_eq!(r.status, 200, "{search}: {}", r.body);
    let mut names: Vec<String> = r.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            format!(
                "{} {}",
                x["firstName"].as_str().unwrap(),
                x["lastName"].as_str().unwrap()
            )
        })
        .collect();
    names.sort();
    assert_eq!(r.body["totalElements"], names.len(), "{}", r.body);
    names
}

#[tokio::test]
async fn organizers_find_people_by_name_email_or_code_and_nobody_else_sees_more() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = setup(&ctx, &owner, json!({"name": "Free", "quantity": 10})).await;
    let (_, ann) = participant();
    let (_, joanna) = participant();
    let (_, boris) = participant();
    let (_, percent) = participant();
    let (_, mary) = participant();
    let a = register(
        &ctx,
        &ann,
        &event,
        &ticket_type,
        json!({"firstName": "Ann", "lastName": "Lee", "email": "ann.lee@example.com"}),
    )
    .await;
    register(
        &ctx,
        &joanna,
        &event,
        &ticket_type,
        json!({"firstName": "Joanna", "lastName": "Smith", "email": "js@example.org"}),
    )
    .await;
    let b = register(
        &ctx,
        &boris,
        &event,
        &ticket_type,
        json!({"firstName": "Борис", "lastName": "Годунов", "email": "tsar@example.ru"}),
    )
    .await;
    register(
        &ctx,
        &percent,
        &event,
        &ticket_type,
        json!({"firstName": "Fifty", "lastName": "Percent_Off", "email": "p@example.com"}),
    )
    .await;
    register(
        &ctx,
        &mary,
        &event,
        &ticket_type,
        json!({"firstName": "Mary Ann", "lastName": "van der Berg", "email": "mvdb@example.com"}),
    )
    .await;
    let token = &owner.access;

    // The beginning of either name, case aside, Cyrillic too; every word must begin one, in
    // any order; the middle of a name is not a beginning.
    assert_eq!(found(&ctx, token, &event, "ann").await, ["Ann Lee"]);
    assert_eq!(found(&ctx, token, &event, "  LEE ").await, ["Ann Lee"]);
    assert_eq!(found(&ctx, token, &event, "ann lee").await, ["Ann Lee"]);
    assert_eq!(found(&ctx, token, &event, "Lee  ANN").await, ["Ann Lee"]);
    assert_eq!(
        found(&ctx, token, &event, "ann smith").await,
        Vec::<String>::new()
    );
    // Names of several words: typed whole, or a word of each in any order.
    for typed in [
        "van der Berg",
        "mary ann",
        "Mary Ann van",
        "Berg Mary",
        "der mary",
    ] {
        assert_eq!(
            found(&ctx, token, &event, typed).await,
            ["Mary Ann van der Berg"],
            "{typed}"
        );
    }
    assert_eq!(found(&ctx, token, &event, "годун").await, ["Борис Годунов"]);
    assert_eq!(
        found(&ctx, token, &event, "БОР год").await,
        ["Борис Годунов"]
    );
    assert_eq!(
        found(&ctx, token, &event, "oanna").await,
        Vec::<String>::new()
    );
    // The beginning of an email.
    assert_eq!(found(&ctx, token, &event, "js@exa").await, ["Joanna Smith"]);
    assert_eq!(found(&ctx, token, &event, "tsar@").await, ["Борис Годунов"]);
    // A whole code, in any case; a part of one is not a code.
    let code = b["confirmationCode"].as_str().unwrap();
    assert_eq!(
        found(&ctx, token, &event, &code.to_lowercase()).await,
        ["Борис Годунов"]
    );
    assert_eq!(
        found(&ctx, token, &event, &code[..5]).await,
        Vec::<String>::new()
    );
    // Wildcards are letters here.
    assert_eq!(found(&ctx, token, &event, "%").await, Vec::<String>::new());
    assert_eq!(
        found(&ctx, token, &event, "ann_lee").await,
        Vec::<String>::new()
    );
    assert_eq!(
        found(&ctx, token, &event, "percent_o").await,
        ["Fifty Percent_Off"]
    );
    assert_eq!(
        found(&ctx, token, &event, "percen_").await,
        Vec::<String>::new()
    );
    // With the other filters, and an empty search is no search.
    let confirmed = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations?search=ann&status=CANCELLED"),
            Some(token),
        )
        .await;
    assert_eq!(confirmed.body["totalElements"], 0, "{}", confirmed.body);
    assert_eq!(found(&ctx, token, &event, " ").await.len(), 5);

    // Refused by field: too long, control characters.
    for bad in ["a".repeat(101), "a\u{1}b".to_string()] {
        let query: String = form_urlencoded::byte_serialize(bad.as_bytes()).collect();
        let r = ctx
            .get(
                &format!("/api/v1/events/{event}/registrations?search={query}"),
                Some(token),
            )
            .await;
        assert_eq!(r.status, 400, "{}", r.body);
        assert!(r.body["details"]["search"].is_string(), "{}", r.body);
    }

    // A participant of an open event finds the others by name, never by email or code.
    ctx.put(
        &format!("/api/v1/events/{event}"),
        Some(token),
        json!({"participantsVisibility": "OPEN"}),
    )
    .await;
    assert_eq!(found(&ctx, &ann, &event, "smith").await, ["Joanna Smith"]);
    assert_eq!(found(&ctx, &ann, &event, "js@").await, Vec::<String>::new());
    assert_eq!(found(&ctx, &ann, &event, code).await, Vec::<String>::new());
    // Their own list (`GET /registrations`) searches their own.
    let own = ctx
        .get("/api/v1/registrations?search=lee", Some(&ann))
        .await;
    assert_eq!(own.body["totalElements"], 1, "{}", own.body);
    assert_eq!(own.body["data"][0]["id"], a["id"]);

    // Another organization's organizer finds nothing: the event is not theirs to list.
    let (other, _) = ctx.owner(&admin).await;
    let r = ctx
        .get(
            &format!("/api/v1/events/{event}/registrations?search=ann"),
            Some(&other.access),
        )
        .await;
    assert!(
        r.status == 404 || r.body["totalElements"] == 0,
        "{}: {}",
        r.status,
        r.body
    );
}
