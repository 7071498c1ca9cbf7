//! The waiting room of an on-sale through the gateway: an organizer opens it, visitors queue
//! (the early ones drawn at random at the on-sale time), the admitter lets them in at the
//! set rate, and a registration needs a valid admission while the room is open.

use crate::identity::{Ctx, Session};
use crate::support::{Reply, send};
use crate::web::published_with_types;
use chrono::{DateTime, Duration, Utc};
use domain::clock::Clock;
use domain::ids::{TenantId, UserId};
use serde_json::{Value, json};
use storage::events::waiting_room::{admitter, places, rooms};
use uuid::Uuid;

/// A published event with one ticket type of `seats` seats: (event, ticket type).
async fn on_sale(ctx: &Ctx, owner: &Session, seats: i64) -> (String, String) {
    let (event, _) = published_with_types(
        ctx,
        owner,
        "Opening night",
        &[json!({"name": "Stalls", "quantity": seats})],
    )
    .await;
    let types = ctx
        .get(
            &format!("/api/v1/events/{event}/ticket-types"),
            Some(&owner.access),
        )
        .await;
    let ticket_type = types.body["data"][0]["id"].as_str().unwrap().to_string();
    (event, ticket_type)
}

async fn open_room(ctx: &Ctx, owner: &Session, event: &str, body: Value) -> Reply {
    ctx.put(
        &format!("/api/v1/events/{event}/waiting-room"),
        Some(&owner.access),
        body,
    )
    .await
}

/// An owner's event on sale with `seats` seats and a room open from now at `rate` a minute:
/// (owner, event, ticket type).
async fn open_now(ctx: &Ctx, seats: i64, rate: i64) -> (Session, String, String) {
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = on_sale(ctx, &owner, seats).await;
    let body = json!({"onSaleAt": ctx.clock.now(), "admitPerMinute": rate});
    let opened = open_room(ctx, &owner, &event, body).await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    (owner, event, ticket_type)
}

async fn register(
    ctx: &Ctx,
    who: &Session,
    event: &str,
    ticket_type: &str,
    admission: Option<&str>,
) -> Reply {
    let mut request = ctx
        .http
        .post(format!("{}/api/v1/events/{event}/registrations", ctx.base))
        .bearer_auth(&who.access)
        .header("X-Idempotency-Key", Uuid::new_v4().to_string())
        .header("Accept-Language", "en")
        .json(&json!({"ticketTypeId": ticket_type, "firstName": "Ann", "lastName": "Lee"}));
    if let Some(admission) = admission {
        request = request.header("X-Admission", admission);
    }
    send(request).await
}

/// `who`, let in, registers with the admission their place shows.
async fn register_admitted(ctx: &Ctx, who: &Session, event: &str, ticket_type: &str) -> Reply {
    let seen = place(ctx, who, event).await;
    assert_eq!(seen["status"], "ADMITTED", "{seen}");
    register(ctx, who, event, ticket_type, seen["admission"].as_str()).await
}

async fn place(ctx: &Ctx, who: &Session, event: &str) -> Value {
    let r = ctx
        .get(&format!("/api/v1/events/{event}/queue"), Some(&who.access))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

/// The turn of `who`'s place, from the database.
async fn turn(ctx: &Ctx, event: &str, who: &Session) -> i64 {
    let event: Uuid = event.parse().unwrap();
    let user: Uuid = who.user_id.parse().unwrap();
    ctx.t
        .owner()
        .await
        .query_one(
            "SELECT ordinal FROM event_service.waiting_room_places WHERE event_id = $1 AND user_id = $2",
            &[&event, &user],
        )
        .await
        .unwrap()
        .get(0)
}

/// Runs the admitter over the room at the node's clock, as the node's job does, and the room
/// after it. The node's own job may have run first at the same time (or be running: then this
/// waits for it), so what happened is read from the room, not from this run.
async fn admit(ctx: &Ctx, event: &str) -> storage::events::waiting_room::Room {
    admit_at(ctx, event.parse().unwrap(), ctx.clock.now()).await
}

async fn admit_at(
    ctx: &Ctx,
    event: Uuid,
    now: DateTime<Utc>,
) -> storage::events::waiting_room::Room {
    while admitter::room(&ctx.t.db, event, now).await.unwrap().busy > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    rooms::watched(&ctx.t.db, event).await.unwrap().unwrap()
}

#[tokio::test]
async fn an_open_room_lets_in_only_those_it_admitted() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, ticket_type) = on_sale(&ctx, &owner, 5).await;
    let on_sale_at = ctx.clock.now() + Duration::hours(1);

    // Settings are checked, each under its name; only the event's organizers open a room.
    let bad = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": on_sale_at, "admitPerMinute": 0, "graceMinutes": 500}),
    )
    .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body["details"]["admitPerMinute"].is_string(),
        "{}",
        bad.body
    );
    assert!(
        bad.body["details"]["graceMinutes"].is_string(),
        "{}",
        bad.body
    );
    let wrong_type = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": "tomorrow", "admitPerMinute": "many"}),
    )
    .await;
    assert_eq!(wrong_type.status, 400, "{}", wrong_type.body);
    let missing = open_room(&ctx, &owner, &event, json!({"admitPerMinute": 2})).await;
    assert_eq!(missing.status, 400, "{}", missing.body);
    assert!(
        missing.body["details"]["onSaleAt"].is_string(),
        "{}",
        missing.body
    );
    let unknown = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": on_sale_at, "admitPerMinute": 2, "vip": true}),
    )
    .await;
    assert_eq!(unknown.status, 400, "{}", unknown.body);
    let visitor = ctx.user().await;
    let not_organizer = open_room(
        &ctx,
        &visitor,
        &event,
        json!({"onSaleAt": on_sale_at, "admitPerMinute": 2}),
    )
    .await;
    assert_eq!(not_organizer.status, 403, "{}", not_organizer.body);
    let (stranger, _) = ctx.owner(&admin).await;
    let other_tenant = open_room(
        &ctx,
        &stranger,
        &event,
        json!({"onSaleAt": on_sale_at, "admitPerMinute": 2}),
    )
    .await;
    assert_eq!(other_tenant.status, 404, "{}", other_tenant.body);
    let none = ctx
        .get(&format!("/api/v1/events/{event}/waiting-room"), None)
        .await;
    assert_eq!(none.status, 404, "no room yet: {}", none.body);

    let opened = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": on_sale_at, "admitPerMinute": 2}),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    assert_eq!(opened.body["admitPerMinute"], 2);
    assert_eq!(opened.body["admissionMinutes"], 10, "the default");
    assert_eq!(opened.body["graceMinutes"], 5, "the default");
    assert!(opened.body["drawnAt"].is_null());
    let public = ctx
        .get(&format!("/api/v1/events/{event}/waiting-room"), None)
        .await;
    assert_eq!(
        public.status, 200,
        "anyone who sees the event sees its room: {}",
        public.body
    );

    // Without an admission nobody registers, not even before anyone queues.
    let refused = register(&ctx, &visitor, &event, &ticket_type, None).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert_eq!(refused.body["code"], "forbidden");
    assert_eq!(
        refused.body["message"],
        "Registration is through the waiting room: wait for your turn"
    );

    // Three visitors come before the sale: the pre-queue. One place per account.
    let (a, b, c) = (visitor, ctx.user().await, ctx.user().await);
    for who in [&a, &b, &c] {
        let joined = ctx
            .post_empty(&format!("/api/v1/events/{event}/queue"), Some(&who.access))
            .await;
        assert_eq!(joined.status, 201, "{}", joined.body);
        assert_eq!(joined.body["status"], "PRE_QUEUE");
        assert!(joined.body["ahead"].is_null(), "no order before the draw");
    }
    let again = ctx
        .post_empty(&format!("/api/v1/events/{event}/queue"), Some(&a.access))
        .await;
    assert_eq!(again.status, 200, "the place held: {}", again.body);
    assert_eq!(
        ctx.get(&format!("/api/v1/events/{event}/waiting-room"), None)
            .await
            .body["arrivals"],
        3
    );
    // The on-sale time moves freely until the sale opens.
    let moved = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": on_sale_at + Duration::minutes(1), "admitPerMinute": 2}),
    )
    .await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    let back = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": on_sale_at, "admitPerMinute": 2}),
    )
    .await;
    assert_eq!(back.status, 200, "{}", back.body);

    // The sale opens: the pre-queue is drawn, each visitor gets a distinct turn.
    ctx.clock.advance(Duration::hours(1));
    assert!(admit(&ctx, &event).await.drawn_at.is_some());
    let mut ahead = Vec::new();
    for who in [&a, &b, &c] {
        let p = place(&ctx, who, &event).await;
        assert_eq!(p["status"], "WAITING", "{p}");
        ahead.push(p["ahead"].as_i64().unwrap());
        assert!(p["estimatedWaitSeconds"].as_i64().unwrap() >= 30, "{p}");
    }
    ahead.sort_unstable();
    assert_eq!(ahead, vec![0, 1, 2]);
    let drawn = ctx
        .get(&format!("/api/v1/events/{event}/waiting-room"), None)
        .await;
    assert!(drawn.body["drawnAt"].is_string(), "{}", drawn.body);
    let late_move = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": on_sale_at + Duration::hours(2), "admitPerMinute": 2}),
    )
    .await;
    assert_eq!(
        late_move.status, 422,
        "the sale has opened: {}",
        late_move.body
    );

    // Two a minute: after 30 seconds, exactly one is let in — the one drawn first.
    ctx.clock.advance(Duration::seconds(30));
    assert_eq!(admit(&ctx, &event).await.admitted_count, 1);
    let mut admitted = Vec::new();
    let mut waiting = Vec::new();
    for who in [&a, &b, &c] {
        let p = place(&ctx, who, &event).await;
        match p["status"].as_str().unwrap() {
            "ADMITTED" => admitted.push((who.clone(), p)),
            "WAITING" => waiting.push(who.clone()),
            other => panic!("unexpected {other}: {p}"),
        }
    }
    assert_eq!(admitted.len(), 1);
    let (first, seen) = &admitted[0];
    let admission = seen["admission"].as_str().unwrap().to_string();
    let expires: DateTime<Utc> = seen["admissionExpiresAt"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        expires.timestamp_micros(),
        (ctx.clock.now() + Duration::minutes(10)).timestamp_micros(),
        "ten minutes from first sight"
    );
    assert_eq!(
        place(&ctx, first, &event).await["admissionExpiresAt"],
        seen["admissionExpiresAt"],
        "reading again does not extend it"
    );

    // Another account's admission, a forged one, one for another event: refused, each said.
    let other = &waiting[0];
    let theirs = register(&ctx, other, &event, &ticket_type, Some(&admission)).await;
    assert_eq!(theirs.status, 403, "{}", theirs.body);
    assert_eq!(
        theirs.body["message"],
        "This waiting-room admission was given to another account"
    );
    let mut tampered = admission.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == '0' { '1' } else { '0' });
    let forged = register(&ctx, first, &event, &ticket_type, Some(&tampered)).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_eq!(
        forged.body["message"],
        "The waiting-room admission is not valid"
    );
    let (elsewhere, elsewhere_type) = on_sale(&ctx, &owner, 5).await;
    let wrong_event = register(&ctx, first, &elsewhere, &elsewhere_type, Some(&admission)).await;
    assert_eq!(wrong_event.status, 403, "{}", wrong_event.body);
    assert_eq!(
        wrong_event.body["message"],
        "This waiting-room admission is for another event"
    );

    // Its own holder registers with it.
    let registered = register(&ctx, first, &event, &ticket_type, Some(&admission)).await;
    assert_eq!(registered.status, 201, "{}", registered.body);

    // The next one is let in, and lets the admission lapse.
    ctx.clock.advance(Duration::seconds(30));
    assert_eq!(admit(&ctx, &event).await.admitted_count, 2);
    let mut lapsing = None;
    for who in &waiting {
        let p = place(&ctx, who, &event).await;
        if p["status"] == "ADMITTED" {
            lapsing = Some((who.clone(), p["admission"].as_str().unwrap().to_string()));
        }
    }
    let (late, late_admission) = lapsing.expect("a second admission");
    ctx.clock.advance(Duration::minutes(10));
    let expired = register(&ctx, &late, &event, &ticket_type, Some(&late_admission)).await;
    assert_eq!(expired.status, 403, "{}", expired.body);
    assert_eq!(
        expired.body["message"],
        "The waiting-room admission has expired: join the queue again"
    );
    assert_eq!(place(&ctx, &late, &event).await["status"], "EXPIRED");
    // Joining again puts them at the back of the line.
    let rejoined = ctx
        .post_empty(&format!("/api/v1/events/{event}/queue"), Some(&late.access))
        .await;
    assert_eq!(rejoined.status, 201, "{}", rejoined.body);
    assert_eq!(rejoined.body["status"], "WAITING");

    // Every refusal was counted under its reason.
    let metrics = reqwest::get(format!("{}/metrics", ctx.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for reason in [
        "missing",
        "forged",
        "expired",
        "other_account",
        "other_event",
    ] {
        assert!(
            metrics.contains(&format!(
                "bilet_admissions_refused_total{{reason=\"{reason}\"}} 1"
            )),
            "{reason} in\n{}",
            metrics
                .lines()
                .filter(|l| l.contains("admissions"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }

    // Closed, the room asks nothing of registrations.
    let closed = ctx
        .delete(
            &format!("/api/v1/events/{event}/waiting-room"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(closed.status, 204, "{}", closed.body);
    assert_eq!(
        register(&ctx, &late, &event, &ticket_type, None)
            .await
            .status,
        201
    );
    let gone = ctx
        .get(&format!("/api/v1/events/{event}/queue"), Some(&late.access))
        .await;
    assert_eq!(gone.status, 404, "{}", gone.body);
    assert_eq!(gone.body["message"], "This event has no waiting room");
}

/// An event on sale with a room open since `opened` at `rate` a minute, and `visitors` who
/// queued after the sale opened, in that order (written straight to storage: the place
/// handlers are tested above): (tenant, event, the visitors in arrival order).
async fn queue_of(
    ctx: &Ctx,
    seats: i64,
    rate: i64,
    visitors: usize,
) -> (TenantId, Uuid, Vec<UserId>) {
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let (event, _) = on_sale(ctx, &owner, seats).await;
    let opened = open_room(
        ctx,
        &owner,
        &event,
        json!({"onSaleAt": ctx.clock.now(), "admitPerMinute": rate}),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let (tenant, event) = (TenantId(org.parse().unwrap()), event.parse().unwrap());
    let mut users = Vec::new();
    for _ in 0..visitors {
        let user = UserId::new();
        places::join(&ctx.t.db, tenant, event, user, ctx.clock.now())
            .await
            .unwrap();
        users.push(user);
    }
    (tenant, event, users)
}

#[tokio::test]
async fn admission_follows_the_set_rate_in_arrival_order() {
    let ctx = Ctx::new().await;
    let (tenant, event, users) = queue_of(&ctx, 500, 60, 150).await;
    // A minute in steps of a quarter second, as the node's job runs: 60 let in, no more.
    for _ in 0..240 {
        ctx.clock.advance(Duration::milliseconds(250));
        admit_at(&ctx, event, ctx.clock.now()).await;
    }
    let room = rooms::get(&ctx.t.db, tenant, event).await.unwrap();
    assert_eq!(room.admitted_count, 60);
    // The first sixty to arrive, and only they.
    for (i, user) in users.iter().enumerate() {
        let p = places::of(&ctx.t.db, tenant, event, *user, ctx.clock.now())
            .await
            .unwrap();
        let expected = if i < 60 { "Admitted" } else { "Waiting" };
        assert_eq!(
            format!("{:?}", p.status(ctx.clock.now())),
            expected,
            "visitor {i}"
        );
    }
    // Ten seconds idle with people still in line: ten more; nothing is owed twice.
    ctx.clock.advance(Duration::seconds(10));
    assert_eq!(
        admit_at(&ctx, event, ctx.clock.now()).await.admitted_count,
        70
    );
    assert_eq!(
        admit_at(&ctx, event, ctx.clock.now()).await.admitted_count,
        70
    );
}

#[tokio::test]
async fn an_empty_line_banks_no_admissions_for_later_crowds() {
    let ctx = Ctx::new().await;
    let (tenant, event, _) = queue_of(&ctx, 500, 60, 0).await;
    // An hour with nobody waiting, then a crowd: they come in at the rate, not all at once.
    ctx.clock.advance(Duration::hours(1));
    admit_at(&ctx, event, ctx.clock.now()).await;
    for _ in 0..100 {
        places::join(&ctx.t.db, tenant, event, UserId::new(), ctx.clock.now())
            .await
            .unwrap();
    }
    ctx.clock.advance(Duration::seconds(5));
    assert_eq!(
        admit_at(&ctx, event, ctx.clock.now()).await.admitted_count,
        5
    );
}

#[tokio::test]
async fn two_admitters_never_let_the_same_place_in_twice() {
    let ctx = Ctx::new().await;
    let (tenant, event, _) = queue_of(&ctx, 5_000, 6_000, 2_000).await;
    // Two nodes' admitters, each with a pool of its own, racing over the same minute.
    let other = ctx.t.db.separate(4).unwrap();
    let start = ctx.clock.now();
    let race = |db: storage::Database, offset: i64| async move {
        let mut given = 0;
        for step in 0..120 {
            let now = start + Duration::milliseconds(step * 100 + offset);
            given += admitter::room(&db, event, now).await.unwrap().admitted;
        }
        given
    };
    let (mine, theirs) = tokio::join!(race(ctx.t.db.clone(), 0), race(other, 50));
    // A run that found the room taken skipped it; the next one, at the last time, catches up.
    let end = start + Duration::milliseconds(119 * 100 + 50);
    let last = admitter::room(&ctx.t.db, event, end)
        .await
        .unwrap()
        .admitted;
    let room = rooms::get(&ctx.t.db, tenant, event).await.unwrap();
    assert_eq!(
        mine + theirs + last,
        room.admitted_count,
        "each admission counted once"
    );
    // 6,000 a minute for 11.95 s is 1,195: every one of them given, by one admitter or the other.
    assert_eq!(
        room.admitted_count,
        (end - start).num_milliseconds() * 100 / 1_000
    );
    assert_eq!(
        room.admitted_through, room.admitted_count,
        "the cursor over as many places"
    );
}

#[tokio::test]
async fn a_visitor_who_leaves_keeps_the_place_for_the_grace_period() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _) = on_sale(&ctx, &owner, 5).await;
    let opened = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": ctx.clock.now(), "admitPerMinute": 1, "graceMinutes": 5}),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let queue = format!("/api/v1/events/{event}/queue");
    let (first, second) = (ctx.user().await, ctx.user().await);
    assert_eq!(
        ctx.post_empty(&queue, Some(&first.access)).await.status,
        201
    );
    assert_eq!(
        ctx.post_empty(&queue, Some(&second.access)).await.status,
        201
    );
    assert_eq!(place(&ctx, &second, &event).await["ahead"], 1);

    // Leaving is said, twice is harmless; a stranger to the room has no place to leave.
    assert_eq!(ctx.delete(&queue, Some(&second.access)).await.status, 204);
    assert_eq!(ctx.delete(&queue, Some(&second.access)).await.status, 204);
    let stranger = ctx.user().await;
    let none = ctx.delete(&queue, Some(&stranger.access)).await;
    assert_eq!(none.status, 404, "{}", none.body);
    assert_eq!(none.body["message"], "You hold no place in this queue");
    assert_eq!(ctx.delete(&queue, None).await.status, 401);
    let left = place(&ctx, &second, &event).await;
    assert_eq!(left["status"], "LEFT");
    let kept: DateTime<Utc> = left["keptUntil"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        kept.timestamp_micros(),
        (ctx.clock.now() + Duration::minutes(5)).timestamp_micros()
    );

    // Back within the grace period: the same place. (Turns are read from the database: the
    // node's admitter, on the test's clock, may let people in meanwhile.)
    let kept = turn(&ctx, &event, &second).await;
    ctx.clock.advance(Duration::minutes(4));
    let back = ctx.post_empty(&queue, Some(&second.access)).await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_ne!(back.body["status"], "LEFT", "{}", back.body);
    assert_eq!(turn(&ctx, &event, &second).await, kept);

    // Away longer than that: a new place at the back.
    assert_eq!(ctx.delete(&queue, Some(&first.access)).await.status, 204);
    ctx.clock.advance(Duration::minutes(6));
    assert_eq!(
        ctx.post_empty(&queue, Some(&stranger.access)).await.status,
        201
    );
    let behind = ctx.post_empty(&queue, Some(&first.access)).await;
    assert_eq!(behind.status, 201, "{}", behind.body);
    assert!(
        turn(&ctx, &event, &first).await > turn(&ctx, &event, &stranger).await,
        "behind the one who came after it"
    );
}

#[tokio::test]
async fn everyone_waiting_is_told_when_the_last_seat_sells() {
    let ctx = Ctx::new().await;
    let (_, event, ticket_type) = open_now(&ctx, 1, 1).await;
    let queue = format!("/api/v1/events/{event}/queue");
    let visitors = [ctx.user().await, ctx.user().await, ctx.user().await];
    for who in &visitors {
        assert_eq!(ctx.post_empty(&queue, Some(&who.access)).await.status, 201);
    }
    ctx.clock.advance(Duration::minutes(1));
    assert_eq!(admit(&ctx, &event).await.admitted_count, 1);
    let registered = register_admitted(&ctx, &visitors[0], &event, &ticket_type).await;
    assert_eq!(registered.status, 201, "{}", registered.body);

    // The one seat is gone: the next run tells everyone still waiting, and lets nobody in.
    ctx.clock.advance(Duration::minutes(1));
    let room = admit(&ctx, &event).await;
    assert!(room.sold_out_at.is_some());
    assert_eq!(room.admitted_count, 1, "nobody more let in");
    for who in &visitors[1..] {
        let p = place(&ctx, who, &event).await;
        assert_eq!(p["status"], "SOLD_OUT", "{p}");
        assert!(p["ahead"].is_null());
    }
    let room = ctx
        .get(&format!("/api/v1/events/{event}/waiting-room"), None)
        .await;
    assert_eq!(room.body["soldOut"], true, "{}", room.body);

    // A seat freed: admissions go on at the rate, owing nothing for the sold-out time.
    let id = registered.body["id"].as_str().unwrap();
    let cancelled = ctx
        .delete(
            &format!("/api/v1/registrations/{id}"),
            Some(&visitors[0].access),
        )
        .await;
    assert!(cancelled.status < 300, "{}", cancelled.body);
    assert_eq!(
        admit(&ctx, &event).await.admitted_count,
        1,
        "the clock starts again now"
    );
    ctx.clock.advance(Duration::minutes(1));
    assert_eq!(admit(&ctx, &event).await.admitted_count, 2);
    assert_eq!(
        place(&ctx, &visitors[1], &event).await["status"],
        "ADMITTED"
    );
}

/// Reads a stream until `wanted` has come, for at most five seconds; everything read so far.
async fn read_until(response: &mut reqwest::Response, seen: &mut String, wanted: &str) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while !seen.contains(wanted) {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .unwrap_or_else(|_| panic!("no {wanted} in time; read:\n{seen}"))
            .unwrap();
        let Some(chunk) = chunk else {
            panic!("the stream ended before {wanted}; read:\n{seen}");
        };
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
}

#[tokio::test]
async fn a_visitor_is_told_of_their_turn_as_it_comes() {
    let ctx = Ctx::new().await;
    let (owner, event, ticket_type) = open_now(&ctx, 5, 1).await;
    let stream = format!("/api/v1/events/{event}/queue/events");
    // Nobody follows a place they do not hold.
    let stranger = ctx.user().await;
    let none = ctx.get(&stream, Some(&stranger.access)).await;
    assert_eq!(none.status, 404, "{}", none.body);
    assert_eq!(ctx.get(&stream, None).await.status, 401);

    let (first, second) = (ctx.user().await, ctx.user().await);
    for who in [&first, &second] {
        assert_eq!(
            ctx.post_empty(&format!("/api/v1/events/{event}/queue"), Some(&who.access))
                .await
                .status,
            201
        );
    }
    let mut response = ctx
        .http
        .get(format!("{}{stream}", ctx.base))
        .bearer_auth(&second.access)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut seen = String::new();
    read_until(&mut response, &mut seen, "\"status\":\"WAITING\"").await;
    assert!(seen.contains("event: place"), "{seen}");
    assert!(seen.contains("retry: 1000"), "{seen}");
    assert!(seen.contains("\"ahead\":1"), "{seen}");

    // The first is let in: the second hears it moved up, without asking.
    ctx.clock.advance(Duration::minutes(1));
    assert_eq!(admit(&ctx, &event).await.admitted_count, 1);
    read_until(&mut response, &mut seen, "\"ahead\":0").await;
    // Then its own turn comes, with the admission it registers with.
    ctx.clock.advance(Duration::minutes(1));
    assert_eq!(admit(&ctx, &event).await.admitted_count, 2);
    read_until(&mut response, &mut seen, "\"status\":\"ADMITTED\"").await;
    let admitted = seen
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|place| place["status"] == "ADMITTED")
        .unwrap();
    let admission = admitted["admission"]
        .as_str()
        .expect("the admission is pushed");
    let registered = register(&ctx, &second, &event, &ticket_type, Some(admission)).await;
    assert_eq!(registered.status, 201, "{}", registered.body);

    // The room closes: the stream says so.
    assert_eq!(
        ctx.delete(
            &format!("/api/v1/events/{event}/waiting-room"),
            Some(&owner.access)
        )
        .await
        .status,
        204
    );
    read_until(&mut response, &mut seen, "event: closed").await;
}

#[tokio::test]
async fn joins_are_limited_per_address_and_per_account() {
    let ctx = Ctx::with_config(|c| {
        c.gateway.queue_joins_per_ip_per_minute = 3;
        c.gateway.queue_joins_per_account_per_minute = 2;
    })
    .await;
    let (_, event, _) = open_now(&ctx, 5, 1).await;
    let queue = format!("/api/v1/events/{event}/queue");
    let (a, b) = (ctx.user().await, ctx.user().await);
    // One account asking again and again: twice a minute.
    assert_eq!(ctx.post_empty(&queue, Some(&a.access)).await.status, 201);
    assert_eq!(ctx.post_empty(&queue, Some(&a.access)).await.status, 200);
    let again = ctx.post_empty(&queue, Some(&a.access)).await;
    assert_eq!(again.status, 429, "{}", again.body);
    assert_eq!(again.body["code"], "rate_limit_exceeded");
    assert_eq!(
        again.headers["x-ratelimit-limit"], "2",
        "the account's budget is said"
    );
    // Many accounts from one address: three joins a minute, whoever asks.
    let from_b = ctx.post_empty(&queue, Some(&b.access)).await;
    assert_eq!(
        from_b.status, 429,
        "the address's fourth join: {}",
        from_b.body
    );
    assert_eq!(from_b.headers["x-ratelimit-limit"], "3");
    // Reading one's place is not a join.
    assert_eq!(ctx.get(&queue, Some(&a.access)).await.status, 200);
    // The next minute, joins go through again.
    ctx.clock.advance(Duration::minutes(1));
    assert_eq!(ctx.post_empty(&queue, Some(&b.access)).await.status, 201);
}

async fn place_with(ctx: &Ctx, who: &Session, event: &str, pass: &str) -> Value {
    let r = send(
        ctx.http
            .get(format!("{}/api/v1/events/{event}/queue", ctx.base))
            .bearer_auth(&who.access)
            .header("X-Queue-Place", pass),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

#[tokio::test]
async fn a_place_pass_answers_from_the_room_alone() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (event, _) = on_sale(&ctx, &owner, 5).await;
    let on_sale_at = ctx.clock.now() + Duration::minutes(10);
    let opened = open_room(
        &ctx,
        &owner,
        &event,
        json!({"onSaleAt": on_sale_at, "admitPerMinute": 1}),
    )
    .await;
    assert_eq!(opened.status, 200, "{}", opened.body);
    let queue = format!("/api/v1/events/{event}/queue");
    let (a, b, c) = (ctx.user().await, ctx.user().await, ctx.user().await);
    let mut passes = Vec::new();
    for who in [&a, &b, &c] {
        let joined = ctx.post_empty(&queue, Some(&who.access)).await;
        assert_eq!(joined.status, 201, "{}", joined.body);
        passes.push(joined.body["placePass"].as_str().unwrap().to_string());
    }
    // Before the draw: the pass says the pre-queue.
    assert_eq!(
        place_with(&ctx, &a, &event, &passes[0]).await["status"],
        "PRE_QUEUE"
    );

    // The draw changes the turns: a pre-queue pass is not believed, a new one comes back.
    ctx.clock.advance(Duration::minutes(10));
    assert!(admit(&ctx, &event).await.drawn_at.is_some());
    let drawn = place_with(&ctx, &a, &event, &passes[0]).await;
    assert_eq!(drawn["status"], "WAITING", "{drawn}");
    let fresh = drawn["placePass"].as_str().unwrap().to_string();
    assert_ne!(fresh, passes[0]);
    let ahead = drawn["ahead"].clone();
    // The new pass answers alone: the room as the node reads it, the turn as the pass says.
    // (So a visitor who left and kept their pass is still told WAITING: the page forgets it.)
    assert_eq!(ctx.delete(&queue, Some(&a.access)).await.status, 204);
    let alone = place_with(&ctx, &a, &event, &fresh).await;
    assert_eq!(
        (alone["status"].clone(), alone["ahead"].clone()),
        (json!("WAITING"), ahead),
        "{alone}"
    );
    assert_eq!(alone["placePass"], json!(fresh));
    assert_eq!(
        place(&ctx, &a, &event).await["status"],
        "LEFT",
        "without the pass, the place itself"
    );
    let back = ctx.post_empty(&queue, Some(&a.access)).await;
    assert_eq!(back.status, 200, "{}", back.body);

    // Someone else's pass, or a made-up one, is not believed: the caller's own place answers.
    let theirs = place_with(&ctx, &b, &event, &fresh).await;
    assert_ne!(theirs["placePass"], json!(fresh), "{theirs}");
    assert_eq!(theirs["status"], "WAITING");
    let none = send(
        ctx.http
            .get(format!("{}{queue}", ctx.base))
            .bearer_auth(&owner.access)
            .header("X-Queue-Place", &fresh),
    )
    .await;
    assert_eq!(none.status, 404, "no place of one's own: {}", none.body);

    // A turn come is read from the place: its admission starts when first told.
    ctx.clock.advance(Duration::minutes(3));
    assert!(admit(&ctx, &event).await.admitted_count >= 1);
    let mut admitted = 0;
    for (who, pass) in [(&b, &passes[1]), (&c, &passes[2])] {
        // Pre-queue passes, after the on-sale time: each read from the place.
        let seen = place_with(&ctx, who, &event, pass).await;
        if seen["status"] == "ADMITTED" {
            admitted += 1;
            assert!(seen["admission"].is_string(), "{seen}");
        }
    }
    let first = place(&ctx, &a, &event).await;
    if first["status"] == "ADMITTED" {
        admitted += 1;
    }
    assert_eq!(admitted, 3, "three minutes at one a minute");
}

#[tokio::test]
async fn a_linked_visitor_hears_their_turn_from_the_bot() {
    let (ctx, telegram) = crate::notifications::with_bot(|_| {}).await;
    let (_, event, _) = open_now(&ctx, 5, 60).await;
    let visitor = ctx.user().await;
    crate::notifications::linked(&ctx, &telegram, &visitor, 7001).await;
    let before = telegram.delivered_to(7001).len();
    let joined = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/queue"),
            Some(&visitor.access),
        )
        .await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    ctx.clock.advance(Duration::seconds(1));
    assert_eq!(admit(&ctx, &event).await.admitted_count, 1);
    let got = telegram.wait_for(7001, before + 1, 10).await;
    assert_eq!(got.len(), before + 1, "the turn was told");
    // As sent: MarkdownV2, its escapes taken out to read the address.
    let turn = got[before].text.replace('\\', "");
    let slug = ctx.get(&format!("/api/v1/events/{event}"), None).await.body["slug"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(turn.contains(&format!("/e/{slug}/queue")), "{turn}");
    assert!(turn.contains("Opening night"), "{turn}");
    assert!(turn.contains("10"), "the admission's minutes: {turn}");
}

#[tokio::test]
async fn the_dashboard_shows_the_queue_on_both_stores() {
    let mut figures = Vec::new();
    for clickhouse in [false, true] {
        let ctx = Ctx::with_config(|c| {
            if clickhouse {
                let url = std::env::var("CLICKHOUSE_URL")
                    .unwrap_or_else(|_| "http://127.0.0.1:8123".into());
                c.clickhouse.url = Some(format!(
                    "{url}?database=bilet_test_{}",
                    Uuid::new_v4().simple()
                ));
            }
        })
        .await;
        let (owner, event, ticket_type) = open_now(&ctx, 5, 60).await;
        let queue = format!("/api/v1/events/{event}/queue");
        let visitors = [ctx.user().await, ctx.user().await, ctx.user().await];
        for who in &visitors {
            assert_eq!(ctx.post_empty(&queue, Some(&who.access)).await.status, 201);
        }
        assert_eq!(
            ctx.delete(&queue, Some(&visitors[2].access)).await.status,
            204
        );
        // One a second: the first is let in after a second, and registers.
        ctx.clock.advance(Duration::seconds(1));
        assert_eq!(admit(&ctx, &event).await.admitted_count, 1);
        let registered = register_admitted(&ctx, &visitors[0], &event, &ticket_type).await;
        assert_eq!(registered.status, 201, "{}", registered.body);

        let dashboard = format!("/api/v1/analytics/events/{event}/dashboard");
        // The records follow the outbox: asked until they are all in, for 15 s at most.
        let mut seen = Value::Null;
        let mut recorded = false;
        for _ in 0..150 {
            let r = ctx.get(&dashboard, Some(&owner.access)).await;
            seen = r.body["queue"].clone();
            recorded = r.status == 200 && seen["registered"] == 1 && seen["left"] == 1;
            if recorded {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(recorded, "clickhouse {clickhouse}: {seen}");
        let wait = seen["averageWaitSeconds"].as_f64().unwrap();
        assert!((0.0..60.0).contains(&wait), "{seen}");
        seen.as_object_mut().unwrap().remove("averageWaitSeconds");
        assert_eq!(
            seen,
            json!({"joined": 3, "admitted": 1, "left": 1, "waiting": 1, "registered": 1,
                "gaveUp": 0, "admissionToRegistrationRate": 1.0}),
            "clickhouse {clickhouse}"
        );
        figures.push(seen);
    }
    assert_eq!(figures[0], figures[1], "both stores agree");
}
