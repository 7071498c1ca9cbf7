//! The event service through the gateway: life cycle, roles, tenant isolation, visibility of
//! public and private events, filters, ticket types and the events it publishes.

use crate::identity::{Ctx, Session};
use crate::support::eventually;
use chrono::{Duration, Utc};
use serde_json::{Value, json};

fn at(days: i64) -> String {
    (Utc::now() + Duration::days(days)).to_rfc3339()
}

async fn event(ctx: &Ctx, owner: &Session, body: Value) -> Value {
    let r = ctx.post("/api/v1/events", Some(&owner.access), body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

async fn published(ctx: &Ctx, owner: &Session, title: &str) -> String {
    let e = event(ctx, owner, json!({"title": title, "startsAt": at(10)})).await;
    let id = e["id"].as_str().unwrap().to_string();
    assert_eq!(
        ctx.post_empty(&format!("/api/v1/events/{id}/publish"), Some(&owner.access))
            .await
            .status,
        200
    );
    id
}

#[tokio::test]
async fn life_cycle_and_refused_transitions() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let e = event(&ctx, &owner, json!({
        "title": "Концерт в Москве", "description": "Живая музыка", "startsAt": at(30), "endsAt": at(31),
        "timezone": "Europe/Moscow", "locationType": "OFFLINE", "locationAddress": "Тверская, 1"
    })).await;
    assert_eq!(e["status"], "DRAFT");
    assert_eq!(e["slug"], "kontsert-v-moskve");
    assert_eq!(e["tenantId"], org.as_str());
    assert_eq!(e["participantsVisibility"], "CLOSED");
    let id = e["id"].as_str().unwrap();
    let path = |action: &str| format!("/api/v1/events/{id}/{action}");

    let p = ctx.post_empty(&path("publish"), Some(&owner.access)).await;
    assert_eq!(p.status, 200);
    assert_eq!(p.body["status"], "PUBLISHED");
    assert!(p.body["publishedAt"].is_string());
    assert_eq!(
        ctx.post_empty(&path("publish"), Some(&owner.access))
            .await
            .status,
        422,
        "publish twice"
    );
    assert_eq!(
        ctx.post_empty(&path("unpublish"), Some(&owner.access))
            .await
            .body["status"],
        "DRAFT"
    );
    assert_eq!(
        ctx.post_empty(&path("complete"), Some(&owner.access))
            .await
            .status,
        422,
        "a draft is not completed"
    );
    assert_eq!(
        ctx.post_empty(&path("cancel"), Some(&owner.access))
            .await
            .body["status"],
        "CANCELLED"
    );
    let again = ctx.post_empty(&path("cancel"), Some(&owner.access)).await;
    assert_eq!(
        again.status, 200,
        "cancelling again is a retry, not an error"
    );
    assert_eq!(again.body["status"], "CANCELLED");
    for action in ["publish", "unpublish", "complete"] {
        let r = ctx.post_empty(&path(action), Some(&owner.access)).await;
        assert_eq!(r.status, 422, "{action} on a cancelled event");
        assert_eq!(
            r.body["message"],
            "A cancelled or completed event cannot be changed"
        );
    }
    assert_eq!(
        ctx.put(
            &format!("/api/v1/events/{id}"),
            Some(&owner.access),
            json!({"title": "Again"})
        )
        .await
        .status,
        422
    );

    let past = event(&ctx, &owner, json!({"title": "Past", "startsAt": at(-1)})).await;
    let r = ctx
        .post_empty(
            &format!("/api/v1/events/{}/publish", past["id"].as_str().unwrap()),
            Some(&owner.access),
        )
        .await;
    assert_eq!(r.status, 422, "a past event is not published");

    let live = published(&ctx, &owner, "Live").await;
    assert_eq!(
        ctx.delete(&format!("/api/v1/events/{live}"), Some(&owner.access))
            .await
            .status,
        422,
        "cancel before deleting"
    );
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/events/{live}/complete"),
            Some(&owner.access)
        )
        .await
        .body["status"],
        "COMPLETED"
    );
    let draft = event(&ctx, &owner, json!({"title": "Draft", "startsAt": at(5)})).await;
    let draft = draft["id"].as_str().unwrap();
    assert_eq!(
        ctx.delete(&format!("/api/v1/events/{draft}"), Some(&owner.access))
            .await
            .status,
        204
    );
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{draft}"), Some(&owner.access))
            .await
            .status,
        404
    );

    for kind in [
        "event.created",
        "event.published",
        "event.cancelled",
        "event.completed",
    ] {
        assert!(
            eventually(10, || async { !ctx.events.of(kind).is_empty() }).await,
            "{kind} published"
        );
    }
    let completed = &ctx.events.of("event.completed")[0];
    assert_eq!(completed.data.value()["eventId"], live.as_str());
    assert_eq!(completed.data.value()["title"], "Live");
}

#[tokio::test]
async fn validation_and_slugs() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let bad = |body: Value| {
        let ctx = &ctx;
        let token = owner.access.clone();
        async move { ctx.post("/api/v1/events", Some(&token), body).await }
    };
    let r = bad(json!({"description": "x"})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.body["details"]["title"], "This field is required");
    let r = bad(json!({"title": "T"})).await;
    assert_eq!(r.body["details"]["startsAt"], "This field is required");
    assert_eq!(
        bad(json!({"title": "T", "startsAt": "tomorrow"}))
            .await
            .status,
        400
    );
    let r = bad(json!({"title": "T", "startsAt": at(3), "endsAt": at(2)})).await;
    assert_eq!(
        r.body["details"]["endsAt"],
        "The end must be after the start"
    );
    assert!(
        bad(json!({"title": "T", "startsAt": at(3), "timezone": "Mars/Olympus Mons"}))
            .await
            .body["details"]["timezone"]
            .is_string()
    );
    assert!(
        bad(json!({"title": "T", "startsAt": at(3), "slug": "Not A Slug"}))
            .await
            .body["details"]["slug"]
            .is_string()
    );
    assert!(
        bad(json!({"title": "T", "startsAt": at(3), "locationType": "MOON"}))
            .await
            .body["details"]["locationType"]
            .is_string()
    );
    // Only whole addresses: one that merely starts like one (an unclosed IPv6 host, no host)
    // would be stored and break whatever parses it later.
    for url in ["javascript:alert(1)", "http://[", "https:///path"] {
        assert!(
            bad(json!({"title": "T", "startsAt": at(3), "locationUrl": url}))
                .await
                .body["details"]["locationUrl"]
                .is_string(),
            "{url}"
        );
    }
    assert!(
        bad(json!({"title": "T", "startsAt": at(3), "participantsVisibility": "PUBLIC"}))
            .await
            .body["details"]["participantsVisibility"]
            .is_string()
    );

    // Settings PostgreSQL would keep but could not give back as JSON numbers (a huge number is
    // written back in full digits) or would refuse (NUL): refused, and nothing is stored that
    // would break the list.
    let huge = json!({"title": "Huge", "startsAt": at(3), "settings": {"a": [[-1.797_693_134_862_315_7e308]]}});
    let r = bad(huge).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.body["details"]["settings"],
        "The value must be between -9007199254740991 and 9007199254740991"
    );
    let r = bad(json!({"title": "Nul", "startsAt": at(3), "settings": {"k\u{0}": true}})).await;
    assert_eq!(r.status, 400);
    assert!(r.body["details"]["settings"].is_string());
    let listed = ctx
        .get("/api/v1/events?size=100", Some(&owner.access))
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.body["totalElements"], 0, "nothing stored");
    let kept = event(
        &ctx,
        &owner,
        json!({"title": "Kept", "startsAt": at(3), "settings": {"a": [1.5, -9_007_199_254_740_991i64]}}),
    )
    .await;
    assert_eq!(
        kept["settings"],
        json!({"a": [1.5, -9_007_199_254_740_991i64]})
    );
    let id = kept["id"].as_str().unwrap();
    let r = ctx
        .put(
            &format!("/api/v1/events/{id}"),
            Some(&owner.access),
            json!({"settings": {"a": 1e300}}),
        )
        .await;
    assert_eq!(r.status, 400);
    let r = ctx
        .get(&format!("/api/v1/events/{id}"), Some(&owner.access))
        .await;
    assert_eq!(
        r.body["settings"],
        json!({"a": [1.5, -9_007_199_254_740_991i64]})
    );

    let first = event(
        &ctx,
        &owner,
        json!({"title": "Rust Meetup", "startsAt": at(3)}),
    )
    .await;
    let second = event(
        &ctx,
        &owner,
        json!({"title": "Rust Meetup", "startsAt": at(4)}),
    )
    .await;
    assert_eq!(first["slug"], "rust-meetup");
    assert!(
        second["slug"].as_str().unwrap().starts_with("rust-meetup-"),
        "generated slugs are made unique"
    );
    let taken = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "X", "startsAt": at(3), "slug": "rust-meetup"}),
        )
        .await;
    assert_eq!(taken.status, 409);
}

#[tokio::test]
async fn writes_need_an_organizer_of_the_tenant() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    let participant = ctx.user().await;
    let r = ctx
        .post(
            "/api/v1/events",
            Some(&participant.access),
            json!({"title": "T", "startsAt": at(3)}),
        )
        .await;
    assert_eq!(r.status, 403, "no organization in the token");
    assert_eq!(
        ctx.post(
            "/api/v1/events",
            None,
            json!({"title": "T", "startsAt": at(3)})
        )
        .await
        .status,
        401
    );
    let by_moderator = event(
        &ctx,
        &moderator,
        json!({"title": "By moderator", "startsAt": at(3)}),
    )
    .await;
    let id = by_moderator["id"].as_str().unwrap();
    assert_eq!(
        ctx.post_empty(&format!("/api/v1/events/{id}/publish"), Some(&owner.access))
            .await
            .status,
        200
    );
    assert_eq!(
        ctx.put(
            &format!("/api/v1/events/{id}"),
            Some(&participant.access),
            json!({"title": "Mine"})
        )
        .await
        .status,
        403
    );
}

#[tokio::test]
async fn another_tenant_gets_404_for_every_read_and_write() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (a, _) = ctx.owner(&admin).await;
    let (b, _) = ctx.owner(&admin).await;
    let draft = event(
        &ctx,
        &a,
        json!({"title": "Secret plans", "startsAt": at(9)}),
    )
    .await;
    let id = draft["id"].as_str().unwrap().to_string();
    let tt = ctx
        .post(
            &format!("/api/v1/events/{id}/ticket-types"),
            Some(&a.access),
            json!({"name": "Std", "quantity": 10}),
        )
        .await;
    assert_eq!(tt.status, 201);
    let type_id = tt.body["id"].as_str().unwrap().to_string();
    let live = published(&ctx, &a, "Public show").await;

    let ev = format!("/api/v1/events/{id}");
    let types = format!("{ev}/ticket-types");
    let one_type = format!("{types}/{type_id}");
    assert_eq!(ctx.get(&ev, Some(&b.access)).await.status, 404);
    assert_eq!(ctx.get(&types, Some(&b.access)).await.status, 404);
    assert_eq!(
        ctx.put(&ev, Some(&b.access), json!({"title": "Mine"}))
            .await
            .status,
        404
    );
    assert_eq!(ctx.delete(&ev, Some(&b.access)).await.status, 404);
    for action in ["publish", "unpublish", "cancel", "complete"] {
        assert_eq!(
            ctx.post_empty(&format!("{ev}/{action}"), Some(&b.access))
                .await
                .status,
            404,
            "{action}"
        );
    }
    assert_eq!(
        ctx.post(&types, Some(&b.access), json!({"name": "X", "quantity": 1}))
            .await
            .status,
        404
    );
    assert_eq!(
        ctx.put(
            &one_type,
            Some(&b.access),
            json!({"name": "X", "quantity": 1})
        )
        .await
        .status,
        404
    );
    assert_eq!(ctx.delete(&one_type, Some(&b.access)).await.status, 404);
    // A published event is public, but still not B's to change.
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{live}"), Some(&b.access))
            .await
            .status,
        200
    );
    assert_eq!(
        ctx.put(
            &format!("/api/v1/events/{live}"),
            Some(&b.access),
            json!({"title": "Mine"})
        )
        .await
        .status,
        404
    );
    assert_eq!(
        ctx.post_empty(&format!("/api/v1/events/{live}/cancel"), Some(&b.access))
            .await
            .status,
        404
    );
    let list = ctx.get("/api/v1/events", Some(&b.access)).await;
    let titles: Vec<&str> = list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, vec!["Public show"], "B sees A's public event only");
    assert_eq!(
        ctx.get(&ev, Some(&a.access)).await.body["title"],
        "Secret plans",
        "A still has it, unchanged"
    );
}

#[tokio::test]
async fn anonymous_readers_see_published_public_events_and_active_types() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    event(
        &ctx,
        &owner,
        json!({"title": "Hidden draft", "startsAt": at(3)}),
    )
    .await;
    let live = published(&ctx, &owner, "Open air").await;
    let types = format!("/api/v1/events/{live}/ticket-types");
    ctx.post(&types, Some(&owner.access), json!({"name": "Early", "quantity": 5, "priceCents": 150000, "currency": "rub", "sortOrder": 1})).await;
    ctx.post(
        &types,
        Some(&owner.access),
        json!({"name": "Staff", "quantity": 5, "isActive": false}),
    )
    .await;
    let list = ctx.get("/api/v1/events", None).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.body["totalElements"], 1);
    assert_eq!(list.body["data"][0]["title"], "Open air");
    let public_types = ctx.get(&types, None).await;
    assert_eq!(
        public_types.body["totalElements"], 1,
        "inactive types are the organizer's business"
    );
    assert_eq!(public_types.body["data"][0]["currency"], "RUB");
    assert_eq!(public_types.body["data"][0]["available"], 5);
    assert_eq!(
        ctx.get(&types, Some(&owner.access)).await.body["totalElements"],
        2
    );
}

#[tokio::test]
async fn private_events_open_to_group_members_once_they_join() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let participant = ctx.user().await;
    let group = ctx
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&owner.access),
            json!({"name": "Club"}),
        )
        .await;
    let group_id = group.body["id"].as_str().unwrap().to_string();
    // The projection fills from group.created.
    let created = eventually(10, || async {
        ctx.post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Members only", "startsAt": at(5), "groupId": group_id}),
        )
        .await
        .status
            == 201
    })
    .await;
    assert!(created);
    let list = ctx
        .get("/api/v1/events?search=members", Some(&owner.access))
        .await;
    let id = list.body["data"][0]["id"].as_str().unwrap().to_string();
    ctx.post_empty(&format!("/api/v1/events/{id}/publish"), Some(&owner.access))
        .await;
    let unknown_group = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "X", "startsAt": at(5), "groupId": uuid::Uuid::now_v7()}),
        )
        .await;
    assert_eq!(unknown_group.status, 422);

    assert_eq!(
        ctx.get(&format!("/api/v1/events/{id}"), Some(&participant.access))
            .await
            .status,
        404
    );
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{id}"), None).await.status,
        404
    );
    assert_eq!(
        ctx.get("/api/v1/events", Some(&participant.access))
            .await
            .body["totalElements"],
        0
    );

    let code = ctx
        .post_empty(
            &format!("/api/v1/groups/{group_id}/invite"),
            Some(&owner.access),
        )
        .await;
    let joined = ctx
        .post_empty(
            &format!(
                "/api/v1/groups/join/{}",
                code.body["inviteCode"].as_str().unwrap()
            ),
            Some(&participant.access),
        )
        .await;
    assert_eq!(joined.status, 200);
    let visible = eventually(10, || async {
        ctx.get(&format!("/api/v1/events/{id}"), Some(&participant.access))
            .await
            .status
            == 200
    })
    .await;
    assert!(visible, "group.member.added opens the event");
    assert_eq!(
        ctx.get("/api/v1/events", Some(&participant.access))
            .await
            .body["totalElements"],
        1
    );
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{id}"), None).await.status,
        404,
        "still private to everyone else"
    );
}

#[tokio::test]
async fn list_filters_search_and_sort() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    event(&ctx, &owner, json!({"title": "Джазовый концерт", "description": "Вечер импровизации", "startsAt": at(20)})).await;
    event(&ctx, &owner, json!({"title": "Rust workshop", "description": "Hands-on systems programming", "startsAt": at(2)})).await;
    event(
        &ctx,
        &moderator,
        json!({"title": "Board games", "startsAt": at(7)}),
    )
    .await;
    let draft_of = |q: &str| format!("/api/v1/events?{q}");
    let titles = |body: &Value| {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["title"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };

    let all = ctx
        .get(&draft_of("status=DRAFT"), Some(&owner.access))
        .await;
    assert_eq!(
        titles(&all.body),
        vec!["Rust workshop", "Board games", "Джазовый концерт"],
        "by start, ascending"
    );
    assert_eq!(
        ctx.get(&draft_of("status=PUBLISHED"), Some(&owner.access))
            .await
            .body["totalElements"],
        0
    );
    let by_mod = ctx
        .get(
            &draft_of(&format!("organizerId={}", moderator.user_id)),
            Some(&owner.access),
        )
        .await;
    assert_eq!(titles(&by_mod.body), vec!["Board games"]);
    let later = ctx
        .get(
            &draft_of(&format!("startsAfter={}", urlencode(&at(5)))),
            Some(&owner.access),
        )
        .await;
    assert_eq!(titles(&later.body), vec!["Board games", "Джазовый концерт"]);
    // Russian stemming: "концерты" finds "концерт"; English stemming: "workshops".
    assert_eq!(
        titles(
            &ctx.get(
                &draft_of("search=%D0%BA%D0%BE%D0%BD%D1%86%D0%B5%D1%80%D1%82%D1%8B"),
                Some(&owner.access)
            )
            .await
            .body
        ),
        vec!["Джазовый концерт"]
    );
    assert_eq!(
        titles(
            &ctx.get(&draft_of("search=workshops"), Some(&owner.access))
                .await
                .body
        ),
        vec!["Rust workshop"]
    );
    assert_eq!(
        titles(
            &ctx.get(&draft_of("search=programming"), Some(&owner.access))
                .await
                .body
        ),
        vec!["Rust workshop"]
    );
    let sorted = ctx
        .get(&draft_of("sort=title,desc&size=2"), Some(&owner.access))
        .await;
    assert_eq!(
        titles(&sorted.body),
        vec!["Джазовый концерт", "Rust workshop"]
    );
    assert_eq!(sorted.body["hasNext"], true);
    assert_eq!(
        ctx.get(&draft_of("status=OPEN"), Some(&owner.access))
            .await
            .status,
        400
    );
    assert_eq!(
        ctx.get(&draft_of("startsAfter=yesterday"), Some(&owner.access))
            .await
            .status,
        400
    );
    assert_eq!(
        ctx.get(&draft_of("organizerId=42"), Some(&owner.access))
            .await
            .status,
        400
    );
    assert_eq!(
        ctx.get(&draft_of("sort=slug,asc"), Some(&owner.access))
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn the_organization_filter_lists_what_the_caller_may_see_of_it() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let (other, other_org) = ctx.owner(&admin).await;
    let moderator = ctx.moderator(&owner, &org).await;
    let participant = ctx.user().await;

    // Ours: a draft, a published event, a cancelled one and a published members-only one.
    event(&ctx, &owner, json!({"title": "A draft", "startsAt": at(4)})).await;
    published(&ctx, &owner, "A live").await;
    let cancelled = published(&ctx, &owner, "A cancelled").await;
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/events/{cancelled}/cancel"),
            Some(&owner.access)
        )
        .await
        .status,
        200
    );
    let group = ctx
        .post(
            &format!("/api/v1/organizations/{org}/groups"),
            Some(&owner.access),
            json!({"name": "Club"}),
        )
        .await;
    assert_eq!(group.status, 201, "{}", group.body);
    let group_id = group.body["id"].as_str().unwrap().to_string();
    // The projection fills from group.created.
    let created = eventually(10, || async {
        ctx.post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Members only", "startsAt": at(5), "groupId": group_id}),
        )
        .await
        .status
            == 201
    })
    .await;
    assert!(created);
    let private = ctx
        .get("/api/v1/events?search=members", Some(&owner.access))
        .await;
    let private = private.body["data"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(
        ctx.post_empty(
            &format!("/api/v1/events/{private}/publish"),
            Some(&owner.access)
        )
        .await
        .status,
        200
    );
    // Theirs: a published event and a draft.
    published(&ctx, &other, "B live").await;
    event(&ctx, &other, json!({"title": "B draft", "startsAt": at(4)})).await;

    let of = |org: &str| format!("/api/v1/events?organizationId={org}&sort=title,asc");
    let titles = |body: &Value| {
        body["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["title"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };

    // Without the filter an organizer sees everyone's public events besides their own.
    let unfiltered = ctx
        .get("/api/v1/events?sort=title,asc", Some(&owner.access))
        .await;
    assert!(
        titles(&unfiltered.body).contains(&"B live".to_string()),
        "{}",
        unfiltered.body
    );

    // The organization's own members: every status, and nothing of anyone else.
    for member in [&owner, &moderator] {
        let r = ctx.get(&of(&org), Some(&member.access)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(
            titles(&r.body),
            vec!["A cancelled", "A draft", "A live", "Members only"]
        );
        assert_eq!(r.body["totalElements"], 4);
    }
    // With the other filters, and paged like every list.
    let drafts = ctx
        .get(&format!("{}&status=DRAFT", of(&org)), Some(&owner.access))
        .await;
    assert_eq!(titles(&drafts.body), vec!["A draft"]);
    let first = ctx
        .get(&format!("{}&size=3", of(&org)), Some(&owner.access))
        .await;
    assert_eq!(
        titles(&first.body),
        vec!["A cancelled", "A draft", "A live"]
    );
    assert_eq!(
        (
            first.body["totalElements"].as_u64(),
            first.body["hasNext"].as_bool()
        ),
        (Some(4), Some(true))
    );
    let second = ctx
        .get(&format!("{}&size=3&page=1", of(&org)), Some(&owner.access))
        .await;
    assert_eq!(titles(&second.body), vec!["Members only"]);
    assert_eq!(second.body["hasNext"], false);

    // Another organization's member: only what anyone may see of ours; all of their own.
    assert_eq!(
        titles(&ctx.get(&of(&org), Some(&other.access)).await.body),
        vec!["A live"]
    );
    assert_eq!(
        titles(&ctx.get(&of(&other_org), Some(&other.access)).await.body),
        vec!["B draft", "B live"]
    );
    assert_eq!(
        titles(&ctx.get(&of(&other_org), Some(&owner.access)).await.body),
        vec!["B live"]
    );
    // A visitor without a token, and a participant outside the group.
    assert_eq!(titles(&ctx.get(&of(&org), None).await.body), vec!["A live"]);
    assert_eq!(
        titles(&ctx.get(&of(&org), Some(&participant.access)).await.body),
        vec!["A live"]
    );
    // Joining the group opens its events, under the filter too.
    let code = ctx
        .post_empty(
            &format!("/api/v1/groups/{group_id}/invite"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(code.status, 201, "{}", code.body);
    let joined = ctx
        .post_empty(
            &format!(
                "/api/v1/groups/join/{}",
                code.body["inviteCode"].as_str().unwrap()
            ),
            Some(&participant.access),
        )
        .await;
    assert_eq!(joined.status, 200, "{}", joined.body);
    let opened = eventually(10, || async {
        titles(&ctx.get(&of(&org), Some(&participant.access)).await.body)
            == vec!["A live", "Members only"]
    })
    .await;
    assert!(opened, "group.member.added opens the members' event");

    // An organization nobody knows: an empty page.
    let nobody = ctx
        .get(&of(&uuid::Uuid::now_v7().to_string()), Some(&owner.access))
        .await;
    assert_eq!(nobody.status, 200, "{}", nobody.body);
    assert_eq!(nobody.body["totalElements"], 0);

    // Refusals: not a uuid. A token that is not one is ignored on this public read.
    for bad in ["42", "not-a-uuid"] {
        let r = ctx
            .get(
                &format!("/api/v1/events?organizationId={bad}"),
                Some(&owner.access),
            )
            .await;
        assert_eq!(r.status, 400, "{bad}: {}", r.body);
        assert_eq!(r.body["code"], "validation_error", "{bad}: {}", r.body);
        assert!(
            r.body["details"]["organizationId"].is_string(),
            "{bad}: {}",
            r.body
        );
    }
    let garbage = ctx.get(&of(&org), Some("not-a-token")).await;
    assert_eq!(garbage.status, 200, "{}", garbage.body);
    assert_eq!(titles(&garbage.body), vec!["A live"], "as to a visitor");
}

fn urlencode(s: &str) -> String {
    s.replace('+', "%2B").replace(':', "%3A")
}

#[tokio::test]
async fn changing_time_or_place_of_a_published_event_announces_it() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let draft = event(&ctx, &owner, json!({"title": "Draft", "startsAt": at(5)})).await;
    ctx.put(
        &format!("/api/v1/events/{}", draft["id"].as_str().unwrap()),
        Some(&owner.access),
        json!({"startsAt": at(6)}),
    )
    .await;
    let live = published(&ctx, &owner, "Live").await;
    let retitled = ctx
        .put(
            &format!("/api/v1/events/{live}"),
            Some(&owner.access),
            json!({"title": "Live!"}),
        )
        .await;
    assert_eq!(retitled.status, 200);
    let moved = ctx
        .put(
            &format!("/api/v1/events/{live}"),
            Some(&owner.access),
            json!({"startsAt": at(8), "locationAddress": "New hall"}),
        )
        .await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    assert_eq!(moved.body["locationAddress"], "New hall");
    assert!(eventually(10, || async { !ctx.events.of("event.changed").is_empty() }).await);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let changed = ctx.events.of("event.changed");
    assert_eq!(
        changed.len(),
        1,
        "only the published event's move is announced, not its title or a draft"
    );
    assert_eq!(changed[0].data.value()["eventId"], live.as_str());
    assert_eq!(changed[0].data.value()["locationAddress"], "New hall");
    assert!(changed[0].data.value()["previous"]["startsAt"].is_string());
    let cleared = ctx
        .put(
            &format!("/api/v1/events/{live}"),
            Some(&owner.access),
            json!({"locationAddress": null}),
        )
        .await;
    assert!(cleared.body["locationAddress"].is_null());
    let bad = ctx
        .put(
            &format!("/api/v1/events/{live}"),
            Some(&owner.access),
            json!({"endsAt": at(1)}),
        )
        .await;
    assert_eq!(bad.status, 422, "the end before the start");
}

#[tokio::test]
async fn ticket_types_keep_their_seats_honest() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let live = published(&ctx, &owner, "Gig").await;
    let types = format!("/api/v1/events/{live}/ticket-types");
    let bad = |body: Value| {
        let (ctx, types, token) = (&ctx, types.clone(), owner.access.clone());
        async move { ctx.post(&types, Some(&token), body).await }
    };
    assert!(
        bad(json!({"name": "X", "quantity": 1, "currency": "XXX"}))
            .await
            .body["details"]["currency"]
            .is_string()
    );
    assert!(
        bad(json!({"name": "X", "quantity": -1})).await.body["details"]["quantity"].is_string()
    );
    assert!(
        bad(json!({"name": "X", "quantity": 1, "prepaymentPercent": 150}))
            .await
            .body["details"]["prepaymentPercent"]
            .is_string()
    );
    assert!(
        bad(json!({"name": "X", "quantity": 1, "salesStart": at(3), "salesEnd": at(2)}))
            .await
            .body["details"]["salesEnd"]
            .is_string()
    );
    assert!(bad(json!({"name": "", "quantity": 1})).await.body["details"]["name"].is_string());
    assert_eq!(bad(json!({"name": "X"})).await.status, 400);

    let vip = ctx.post(&types, Some(&owner.access), json!({"name": "VIP", "quantity": 10, "priceCents": 500000, "currency": "EUR", "reservationMinutes": 15, "prepaymentPercent": 30})).await;
    assert_eq!(vip.status, 201, "{}", vip.body);
    assert_eq!(vip.body["reservationMinutes"], 15);
    let vip_id = vip.body["id"].as_str().unwrap().to_string();
    let free = ctx
        .post(
            &types,
            Some(&owner.access),
            json!({"name": "Free", "quantity": 3}),
        )
        .await;
    let free_id = free.body["id"].as_str().unwrap().to_string();

    // Seats sold elsewhere (registrations arrive with the ticketing step).
    ctx.t.owner().await.execute("UPDATE event_service.ticket_types SET sold_count = 4, reserved_count = 2 WHERE id = $1", &[&vip_id.parse::<uuid::Uuid>().unwrap()]).await.unwrap();
    let shrink = ctx
        .put(
            &format!("{types}/{vip_id}"),
            Some(&owner.access),
            json!({"name": "VIP", "quantity": 5, "priceCents": 500000, "currency": "EUR"}),
        )
        .await;
    assert_eq!(shrink.status, 422, "below sold + reserved");
    let fine = ctx
        .put(
            &format!("{types}/{vip_id}"),
            Some(&owner.access),
            json!({"name": "VIP+", "quantity": 6, "priceCents": 600000, "currency": "EUR"}),
        )
        .await;
    assert_eq!(fine.status, 200);
    assert_eq!(fine.body["available"], 0);
    assert_eq!(fine.body["name"], "VIP+");
    // The database refuses overselling even when the application would not.
    let oversell = ctx
        .t
        .owner()
        .await
        .execute(
            "UPDATE event_service.ticket_types SET sold_count = 5 WHERE id = $1",
            &[&vip_id.parse::<uuid::Uuid>().unwrap()],
        )
        .await;
    assert!(
        oversell.is_err(),
        "CHECK sold_count + reserved_count <= quantity"
    );

    let kept = ctx
        .delete(&format!("{types}/{vip_id}"), Some(&owner.access))
        .await;
    assert_eq!(
        kept.status, 204,
        "a type with sales is retired: {}",
        kept.body
    );
    assert_no_body(&kept);
    let vip = listed_type(&ctx, &owner.access, &types, &vip_id).await;
    assert_eq!(vip.unwrap()["isActive"], false);
    assert_eq!(
        ctx.delete(&format!("{types}/{free_id}"), Some(&owner.access))
            .await
            .status,
        204
    );
    assert_eq!(
        ctx.get(&types, Some(&owner.access)).await.body["totalElements"],
        1
    );
    assert_eq!(
        ctx.delete(&format!("{types}/{free_id}"), Some(&owner.access))
            .await
            .status,
        404
    );

    ctx.post_empty(
        &format!("/api/v1/events/{live}/cancel"),
        Some(&owner.access),
    )
    .await;
    assert_eq!(
        ctx.post(
            &types,
            Some(&owner.access),
            json!({"name": "Late", "quantity": 1})
        )
        .await
        .status,
        422,
        "no new types on a cancelled event"
    );
}

/// A 204 carries no body.
fn assert_no_body(r: &crate::support::Reply) {
    assert!(
        r.body.is_null()
            && r.headers
                .get("content-length")
                .is_none_or(|l| l.as_bytes() == b"0"),
        "no body: {:?} {}",
        r.headers,
        r.body
    );
}

/// A ticket type as `token` finds it in the event's list (organizers see retired ones too).
async fn listed_type(ctx: &Ctx, token: &str, types: &str, id: &str) -> Option<Value> {
    let list = ctx.get(&format!("{types}?size=100"), Some(token)).await;
    assert_eq!(list.status, 200, "{}", list.body);
    list.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .cloned()
}

async fn register(ctx: &Ctx, token: &str, event: &str, ticket_type: &str) -> crate::support::Reply {
    crate::support::send(
        ctx.http
            .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
            .bearer_auth(token)
            .header("X-Idempotency-Key", uuid::Uuid::new_v4().to_string())
            .header("Accept-Language", "en")
            .json(&json!({"ticketTypeId": ticket_type, "firstName": "Ann", "lastName": "Lee"})),
    )
    .await
}

#[tokio::test]
async fn deleting_a_ticket_type_answers_204_and_retires_one_with_sales() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let live = published(&ctx, &owner, "Retiring").await;
    let types = format!("/api/v1/events/{live}/ticket-types");
    let new_type = |name: &'static str| {
        let (ctx, types, token) = (&ctx, types.clone(), owner.access.clone());
        async move {
            let r = ctx
                .post(&types, Some(&token), json!({"name": name, "quantity": 5}))
                .await;
            assert_eq!(r.status, 201, "{}", r.body);
            r.body["id"].as_str().unwrap().to_string()
        }
    };
    let unsold = new_type("Unsold").await;
    let sold = new_type("Sold").await;
    let cancelled = new_type("Cancelled").await;
    let buyer = ctx.user().await;
    let kept = register(&ctx, &buyer.access, &live, &sold).await;
    assert_eq!(kept.status, 201, "{}", kept.body);
    let kept_id = kept.body["id"].as_str().unwrap().to_string();
    let changed_mind = ctx.user().await;
    let gone = register(&ctx, &changed_mind.access, &live, &cancelled).await;
    assert_eq!(gone.status, 201, "{}", gone.body);
    let gone_id = gone.body["id"].as_str().unwrap();
    let cancel = ctx
        .delete(
            &format!("/api/v1/registrations/{gone_id}"),
            Some(&changed_mind.access),
        )
        .await;
    assert_eq!(cancel.status, 204, "{}", cancel.body);

    // No sales: deleted.
    let r = ctx
        .delete(&format!("{types}/{unsold}"), Some(&owner.access))
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_no_body(&r);
    assert!(
        listed_type(&ctx, &owner.access, &types, &unsold)
            .await
            .is_none()
    );
    assert_eq!(
        ctx.delete(&format!("{types}/{unsold}"), Some(&owner.access))
            .await
            .status,
        404,
        "gone"
    );

    // An active registration: retired, listed as inactive to the organizer, off sale, and
    // the registration keeps its ticket type.
    let r = ctx
        .delete(&format!("{types}/{sold}"), Some(&owner.access))
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_no_body(&r);
    let retired = listed_type(&ctx, &owner.access, &types, &sold)
        .await
        .unwrap();
    assert_eq!(retired["isActive"], false);
    assert_eq!(retired["soldCount"], 1, "{retired}");
    assert!(
        listed_type(&ctx, &ctx.user().await.access, &types, &sold)
            .await
            .is_none(),
        "not offered to participants"
    );
    let late = register(&ctx, &ctx.user().await.access, &live, &sold).await;
    assert!(
        matches!(late.status, 400 | 422),
        "not on sale: {} {}",
        late.status,
        late.body
    );
    let registration = ctx
        .get(
            &format!("/api/v1/registrations/{kept_id}"),
            Some(&buyer.access),
        )
        .await;
    assert_eq!(registration.status, 200, "{}", registration.body);
    assert_eq!(registration.body["status"], "CONFIRMED");
    assert_eq!(registration.body["ticketTypeId"], sold.as_str());

    // Only a cancelled registration: retired too (the foreign key once made this a 500).
    let r = ctx
        .delete(&format!("{types}/{cancelled}"), Some(&owner.access))
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_no_body(&r);
    let retired = listed_type(&ctx, &owner.access, &types, &cancelled)
        .await
        .unwrap();
    assert_eq!(retired["isActive"], false);
    let cancelled_registration = ctx
        .get(
            &format!("/api/v1/registrations/{gone_id}"),
            Some(&changed_mind.access),
        )
        .await;
    assert_eq!(cancelled_registration.body["status"], "CANCELLED");
    // Deleting a retired type again changes nothing and is still 204.
    assert_eq!(
        ctx.delete(&format!("{types}/{cancelled}"), Some(&owner.access))
            .await
            .status,
        204
    );
}

#[tokio::test]
async fn ended_events_complete_and_deleted_organizations_archive_theirs() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let soon = event(&ctx, &owner, json!({"title": "Short", "startsAt": (Utc::now() + Duration::hours(1)).to_rfc3339(), "endsAt": (Utc::now() + Duration::hours(2)).to_rfc3339()})).await;
    let soon = soon["id"].as_str().unwrap().to_string();
    ctx.post_empty(
        &format!("/api/v1/events/{soon}/publish"),
        Some(&owner.access),
    )
    .await;
    let later = published(&ctx, &owner, "Later").await;
    use domain::clock::Clock;
    let completed =
        storage::events::catalog::complete_ended(&ctx.t.db, ctx.clock.now() + Duration::hours(3))
            .await
            .unwrap();
    assert_eq!(completed, 1);
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{soon}"), None).await.body["status"],
        "COMPLETED"
    );
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{later}"), None).await.body["status"],
        "PUBLISHED"
    );
    assert!(
        eventually(10, || async {
            ctx.events
                .of("event.completed")
                .iter()
                .any(|e| e.data.value()["eventId"] == soon.as_str())
        })
        .await
    );

    assert_eq!(
        ctx.delete(&format!("/api/v1/organizations/{org}"), Some(&owner.access))
            .await
            .status,
        204
    );
    let archived = eventually(10, || async {
        ctx.get(&format!("/api/v1/events/{later}"), None)
            .await
            .status
            == 404
    })
    .await;
    assert!(
        archived,
        "organization.deleted archives the organization's events"
    );
    assert_eq!(
        ctx.get("/api/v1/events", None).await.body["totalElements"],
        0
    );
}
