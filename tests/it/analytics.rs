//! The analytics service run twice over the same seeded data, once on PostgreSQL (the embedded
//! store) and once on ClickHouse: the dashboards, funnels and reports must be identical, and
//! equal to the figures worked out by hand. Plus tracking's refusals and who may read.

use crate::identity::Ctx;
use crate::support::{eventually, send};
use chrono::{DateTime, Duration, Utc};
use domain::clock::Clock;
use domain::envelope::Envelope;
use domain::ids::{EventId, TenantId, UserId};
use domain::roles::Role;
use serde_json::{Value, json};
use uuid::Uuid;

const SECRET: &str = "test-secret-test-secret-test-secret";

/// Ids shared by both runs, so their answers can be compared as they are.
struct Seed {
    tenant: TenantId,
    concert: Uuid,
    lecture: Uuid,
    standard: Uuid,
    vip: Uuid,
    users: Vec<Uuid>,
    start: DateTime<Utc>,
}

impl Seed {
    fn new() -> Seed {
        Seed {
            tenant: TenantId::new(),
            concert: Uuid::now_v7(),
            lecture: Uuid::now_v7(),
            standard: Uuid::now_v7(),
            vip: Uuid::now_v7(),
            users: (0..6).map(|_| Uuid::now_v7()).collect(),
            start: DateTime::parse_from_rfc3339("2026-11-20T10:00:00Z")
                .unwrap()
                .with_timezone(&Utc),
        }
    }

    fn token(&self, tenant: Option<TenantId>, roles: Vec<Role>) -> String {
        http::tokens::Tokens::new(SECRET)
            .issue(UserId::new(), None, tenant, roles, None, 0, Utc::now())
            .unwrap()
            .token
    }

    fn member(&self) -> String {
        self.token(Some(self.tenant), vec![Role::Moderator])
    }
}

async fn context(clickhouse: bool) -> Ctx {
    Ctx::with_config(|c| {
        if clickhouse {
            let url =
                std::env::var("CLICKHOUSE_URL").unwrap_or_else(|_| "http://127.0.0.1:8123".into());
            c.clickhouse.url = Some(format!(
                "{url}?database=bilet_test_{}",
                Uuid::new_v4().simple()
            ));
        }
    })
    .await
}

/// A service event of `kind` about `seed`'s organization; `data` names the fields the test is
/// about, the contract's example fills in the rest.
fn envelope(seed: &Seed, kind: &str, at: DateTime<Utc>, data: Value) -> Envelope {
    Envelope {
        id: EventId::new(),
        event_type: kind.into(),
        occurred_at: at,
        tenant_id: Some(seed.tenant),
        actor_id: None,
        data: crate::support::event_data(kind, data),
    }
}

async fn track(ctx: &Ctx, token: Option<&str>, body: Value) -> crate::support::Reply {
    let mut request = ctx
        .http
        .post(format!("{}/api/v1/analytics/track", ctx.base))
        .header("Accept-Language", "en")
        .json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    send(request).await
}

/// Seeds the same records and answers the figures both stores must agree on.
async fn seed_and_read(ctx: &Ctx, seed: &Seed) -> Vec<Value> {
    // Every run happens at the same instant of the service clock.
    ctx.clock.advance(seed.start - ctx.clock.now());
    let broker = ctx.broker();
    let day1 = seed.start;
    let day2 = seed.start + Duration::days(1);
    for event in [seed.concert, seed.lecture] {
        broker
            .publish(&[envelope(
                seed,
                "event.published",
                day1,
                json!({"eventId": event}),
            )])
            .await
            .unwrap();
    }
    assert!(
        eventually(10, || async {
            track(
                ctx,
                None,
                json!({"eventType": "page.view", "eventId": seed.lecture}),
            )
            .await
            .status
                == 202
        })
        .await,
        "event.published starts tracking"
    );

    // Day 1: 4 users and 3 anonymous views (2 visitors) of the concert from three sources,
    // 3 registrations started.
    let user_tokens: Vec<String> = seed
        .users
        .iter()
        .map(|_| seed.token(None, vec![]))
        .collect();
    for (i, token) in user_tokens.iter().take(4).enumerate() {
        let source = ["vk", "telegram", "vk", "direct"][i];
        let r = track(ctx, Some(token), json!({"eventType": "page.view", "eventId": seed.concert, "properties": {"source": source}})).await;
        assert_eq!(r.status, 202, "{}", r.body);
    }
    for visitor in ["a", "a", "b"] {
        let r = track(ctx, None, json!({"eventType": "page.view", "eventId": seed.concert, "properties": {"visitorId": visitor, "source": "telegram"}})).await;
        assert_eq!(r.status, 202);
    }
    for token in user_tokens.iter().take(3) {
        let r = track(
            ctx,
            Some(token),
            json!({"eventType": "registration.started", "eventId": seed.concert}),
        )
        .await;
        assert_eq!(r.status, 202);
    }
    // Day 2: one more view and start.
    ctx.clock.advance(Duration::days(1));
    track(
        ctx,
        Some(&user_tokens[4]),
        json!({"eventType": "page.view", "eventId": seed.concert, "properties": {"source": "vk"}}),
    )
    .await;
    track(
        ctx,
        Some(&user_tokens[4]),
        json!({"eventType": "registration.started", "eventId": seed.concert}),
    )
    .await;

    // From the event service: 4 registrations of the concert (2 free and confirmed, 2 paid and
    // reserved, one of them paid), one of the lecture, two check-ins, a cancellation; one
    // registration.created delivered twice.
    let registration = |user: usize, ticket: Uuid, status: &str, event: Uuid| json!({"registrationId": Uuid::now_v7(), "eventId": event, "ticketTypeId": ticket, "userId": seed.users[user], "status": status});
    let twice = envelope(
        seed,
        "registration.created",
        day1,
        registration(0, seed.standard, "CONFIRMED", seed.concert),
    );
    let events = vec![
        twice.clone(),
        twice,
        envelope(
            seed,
            "registration.created",
            day1,
            registration(1, seed.standard, "CONFIRMED", seed.concert),
        ),
        envelope(
            seed,
            "registration.created",
            day1,
            registration(2, seed.vip, "RESERVED", seed.concert),
        ),
        envelope(
            seed,
            "registration.created",
            day2,
            registration(4, seed.vip, "RESERVED", seed.concert),
        ),
        envelope(
            seed,
            "registration.created",
            day2,
            registration(5, seed.standard, "CONFIRMED", seed.lecture),
        ),
        envelope(
            seed,
            "registration.confirmed",
            day2,
            json!({"registrationId": Uuid::now_v7(), "eventId": seed.concert, "userId": seed.users[2], "amountCents": 5000}),
        ),
        envelope(
            seed,
            "checkin.completed",
            day2,
            registration(0, seed.standard, "CHECKED_IN", seed.concert),
        ),
        envelope(
            seed,
            "checkin.completed",
            day2,
            registration(2, seed.vip, "CHECKED_IN", seed.concert),
        ),
        envelope(
            seed,
            "registration.cancelled",
            day2,
            registration(1, seed.standard, "CANCELLED", seed.concert),
        ),
    ];
    for event in &events {
        broker.publish(std::slice::from_ref(event)).await.unwrap();
    }

    let member = seed.member();
    let get = |path: String| {
        let member = member.clone();
        async move { ctx.get(&path, Some(&member)).await }
    };
    let funnel_path = format!("/api/v1/analytics/events/{}/funnel", seed.concert);
    assert!(
        eventually(15, || async {
            let f = get(funnel_path.clone()).await.body;
            f["completed"] == 4 && f["checkedIn"] == 2 && f["views"] == 8 && f["started"] == 4
        })
        .await,
        "tracked and recorded: {}",
        get(funnel_path.clone()).await.body
    );
    let day1_only = format!(
        "?from={}&to={}",
        seed.start
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .to_rfc3339(),
        (seed.start + Duration::days(1))
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .unwrap()
            .and_utc()
            .to_rfc3339()
    )
    .replace('+', "%2B");
    let mut answers = Vec::new();
    for path in [
        format!("/api/v1/analytics/events/{}/dashboard", seed.concert),
        format!(
            "/api/v1/analytics/events/{}/dashboard{day1_only}",
            seed.concert
        ),
        funnel_path.clone(),
        format!("/api/v1/analytics/events/{}/funnel", seed.lecture),
        // Not on midnight: ClickHouse reads the records instead of the daily counts.
        format!(
            "/api/v1/analytics/events/{}/dashboard?from=2026-11-20T10:00:01Z&to=2026-11-21T12:00:00Z",
            seed.concert
        ),
        format!(
            "/api/v1/analytics/organizations/{}/report",
            seed.tenant.as_uuid()
        ),
    ] {
        let r = get(path.clone()).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        answers.push(r.body);
    }

    // The export of the two days: every record once, as CSV and as XLSX.
    let export = |format: &str| {
        let member = member.clone();
        let body = json!({"organizationId": seed.tenant.as_uuid(), "dateFrom": "2026-11-20T00:00:00Z",
                          "dateTo": "2026-11-22T00:00:00Z", "format": format});
        async move {
            ctx.http
                .post(format!("{}/api/v1/analytics/export", ctx.base))
                .bearer_auth(member)
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    let csv = export("csv").await;
    assert_eq!(csv.status(), 200);
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    let disposition = csv.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        disposition.starts_with("attachment; filename=\"bilet-analytics-")
            && disposition.ends_with(".csv\""),
        "{disposition}"
    );
    let text = csv.text().await.unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some(
            "\"id\",\"createdAt\",\"eventType\",\"eventId\",\"userId\",\"ticketTypeId\",\"source\",\"properties\""
        ),
        "every field quoted"
    );
    let mut per_type = std::collections::BTreeMap::<String, u64>::new();
    for line in lines {
        *per_type
            .entry(
                line.split(',')
                    .nth(2)
                    .unwrap()
                    .trim_matches('"')
                    .to_string(),
            )
            .or_default() += 1;
    }
    answers.push(json!(per_type));
    let xlsx = export("xlsx").await;
    assert_eq!(xlsx.status(), 200);
    assert_eq!(
        xlsx.headers()["content-type"],
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    );
    let bytes = xlsx.bytes().await.unwrap();
    assert!(bytes.starts_with(b"PK"), "a zip file");
    assert!(bytes.windows(24).any(|w| w == b"xl/worksheets/sheet1.xml"));
    answers
}

fn check_figures(seed: &Seed, answers: &[Value]) {
    let dashboard = &answers[0];
    assert_eq!(dashboard["totalViews"], 8);
    assert_eq!(dashboard["uniqueViews"], 7, "4 + 1 users and 2 visitors");
    assert_eq!(
        dashboard["totalRegistrations"], 4,
        "the repeated delivery counts once"
    );
    assert_eq!(dashboard["confirmedRegistrations"], 3, "2 free and 1 paid");
    assert_eq!(dashboard["checkedIn"], 2);
    assert_eq!(dashboard["viewToRegistrationRate"], 0.5);
    assert_eq!(dashboard["registrationToCheckinRate"], 0.5);
    assert_eq!(
        dashboard["byDay"],
        json!([
            {"date": "2026-11-20", "views": 7, "registrations": 3, "checkedIn": 0},
            {"date": "2026-11-21", "views": 1, "registrations": 1, "checkedIn": 2}
        ])
    );
    let mut types = vec![
        json!({"ticketTypeId": seed.standard.to_string(), "registrations": 2, "checkedIn": 1}),
        json!({"ticketTypeId": seed.vip.to_string(), "registrations": 2, "checkedIn": 1}),
    ];
    types.sort_by_key(|t| t["ticketTypeId"].as_str().unwrap().to_string());
    assert_eq!(dashboard["byTicketType"], Value::Array(types));
    assert_eq!(
        dashboard["bySource"],
        json!([
            {"source": "direct", "views": 1, "registrations": 4},
            {"source": "telegram", "views": 4, "registrations": 0},
            {"source": "vk", "views": 3, "registrations": 0}
        ])
    );
    let day1 = &answers[1];
    assert_eq!(
        (
            day1["totalViews"].clone(),
            day1["totalRegistrations"].clone()
        ),
        (json!(7), json!(3))
    );
    assert_eq!(
        answers[2],
        json!({"eventId": seed.concert, "views": 8, "started": 4, "completed": 4, "checkedIn": 2,
               "startRate": 0.5, "completionRate": 1.0, "attendanceRate": 0.5})
    );
    let lecture = &answers[3];
    assert_eq!(lecture["views"], 1);
    assert_eq!(lecture["startRate"], 0.0, "no start over one view");
    assert_eq!(
        lecture["attendanceRate"], 0.0,
        "zero check-ins of one registration"
    );
    let odd = &answers[4];
    assert_eq!(
        (
            odd["totalViews"].clone(),
            odd["totalRegistrations"].clone(),
            odd["checkedIn"].clone()
        ),
        (json!(1), json!(1), json!(2)),
        "day 1's records are all at 10:00:00, so only day 2's count: {odd}"
    );
    assert_eq!(
        answers[6],
        json!({"checkin.completed": 2, "page.view": 9, "payment.completed": 1, "registration.cancelled": 1,
               "registration.completed": 5, "registration.started": 4}),
        "the export holds every record of the two days once"
    );
    let report = &answers[5];
    assert_eq!(report["totalRegistrations"], 5);
    assert_eq!(report["events"][0]["eventId"], seed.concert.to_string());
    assert_eq!(report["events"][1]["eventId"], seed.lecture.to_string());
    assert_eq!(report["events"][1]["totalRegistrations"], 1);
}

#[tokio::test]
async fn both_stores_give_identical_figures() {
    let seed = Seed::new();
    let postgres = context(false).await;
    let from_postgres = seed_and_read(&postgres, &seed).await;
    check_figures(&seed, &from_postgres);
    let clickhouse = context(true).await;
    let from_clickhouse = seed_and_read(&clickhouse, &seed).await;
    check_figures(&seed, &from_clickhouse);
    assert_eq!(from_postgres, from_clickhouse);
}

#[tokio::test]
async fn tracking_refuses_bad_input_and_only_members_read() {
    let seed = Seed::new();
    let ctx = context(false).await;
    ctx.broker()
        .publish(&[envelope(
            &seed,
            "event.published",
            Utc::now(),
            json!({"eventId": seed.concert}),
        )])
        .await
        .unwrap();
    eventually(3, || async {
        track(
            &ctx,
            None,
            json!({"eventType": "page.view", "eventId": seed.concert}),
        )
        .await
        .status
            == 202
    })
    .await;
    let probe = track(
        &ctx,
        None,
        json!({"eventType": "page.view", "eventId": seed.concert}),
    )
    .await;
    assert_eq!(probe.status, 202, "{}", probe.body);
    let r = track(
        &ctx,
        None,
        json!({"eventType": "checkin.completed", "eventId": seed.concert}),
    )
    .await;
    assert_eq!(
        r.status, 400,
        "services report check-ins, clients do not: {}",
        r.body
    );
    assert!(r.body["details"]["eventType"].is_string());
    let r = track(&ctx, None, json!({"eventType": "page.view"})).await;
    assert_eq!(r.status, 400);
    assert!(r.body["details"]["eventId"].is_string());
    let r = track(
        &ctx,
        None,
        json!({"eventType": "page.view", "eventId": "nope"}),
    )
    .await;
    assert_eq!(r.status, 400);
    let r = track(
        &ctx,
        None,
        json!({"eventType": "page.view", "eventId": seed.concert, "properties": [1]}),
    )
    .await;
    assert_eq!(r.status, 400);
    let big = "x".repeat(5000);
    let r = track(
        &ctx,
        None,
        json!({"eventType": "page.view", "eventId": seed.concert, "properties": {"note": big}}),
    )
    .await;
    assert_eq!(r.status, 400);
    let r = track(
        &ctx,
        None,
        json!({"eventType": "page.view", "eventId": Uuid::now_v7()}),
    )
    .await;
    assert_eq!(
        r.status, 404,
        "events that were never published are not tracked"
    );

    let dashboard = format!("/api/v1/analytics/events/{}/dashboard", seed.concert);
    assert_eq!(ctx.get(&dashboard, Some(&seed.member())).await.status, 200);
    let outsider = seed.token(Some(TenantId::new()), vec![Role::Owner]);
    assert_eq!(ctx.get(&dashboard, Some(&outsider)).await.status, 404);
    assert_eq!(
        ctx.get(&dashboard, Some(&seed.token(None, vec![])))
            .await
            .status,
        404
    );
    assert_eq!(ctx.get(&dashboard, None).await.status, 401);
    let report = format!(
        "/api/v1/analytics/organizations/{}/report",
        seed.tenant.as_uuid()
    );
    assert_eq!(ctx.get(&report, Some(&outsider)).await.status, 403);
    assert_eq!(ctx.get(&report, Some(&seed.member())).await.status, 200);
    let r = ctx
        .get(
            &format!("{dashboard}?from=2026-11-22T00:00:00Z&to=2026-11-21T00:00:00Z"),
            Some(&seed.member()),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = ctx
        .get(&format!("{dashboard}?from=yesterday"), Some(&seed.member()))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);

    let export = |token: String, body: Value| {
        let ctx = &ctx;
        async move {
            send(
                ctx.http
                    .post(format!("{}/api/v1/analytics/export", ctx.base))
                    .bearer_auth(token)
                    .header("Accept-Language", "en")
                    .json(&body),
            )
            .await
        }
    };
    let org = seed.tenant.as_uuid();
    let ok = json!({"organizationId": org, "dateFrom": "2026-01-01T00:00:00Z", "dateTo": "2026-02-01T00:00:00Z", "format": "csv"});
    let mut bad_format = ok.clone();
    bad_format["format"] = json!("pdf");
    assert_eq!(export(seed.member(), bad_format).await.status, 400);
    let mut backwards = ok.clone();
    backwards["dateTo"] = json!("2025-12-01T00:00:00Z");
    let r = export(seed.member(), backwards).await;
    assert_eq!(r.status, 400);
    assert!(r.body["details"]["dateTo"].is_string());
    let mut too_long = ok.clone();
    too_long["dateTo"] = json!("2027-06-01T00:00:00Z");
    assert_eq!(export(seed.member(), too_long).await.status, 400);
    let mut missing = ok.clone();
    missing.as_object_mut().unwrap().remove("organizationId");
    assert_eq!(export(seed.member(), missing).await.status, 400);
    assert_eq!(export(outsider.clone(), ok.clone()).await.status, 403);
    let mut foreign_event = ok.clone();
    foreign_event["eventId"] = json!(Uuid::now_v7());
    assert_eq!(export(seed.member(), foreign_event).await.status, 404);
}

#[tokio::test]
async fn a_clean_shutdown_writes_every_accepted_record() {
    let seed = Seed::new();
    let ctx = context(false).await;
    ctx.broker()
        .publish(&[envelope(
            &seed,
            "event.published",
            Utc::now(),
            json!({"eventId": seed.concert}),
        )])
        .await
        .unwrap();
    assert!(
        eventually(10, || async {
            analytics::tracked::tenant_of(&ctx.t.db, seed.concert)
                .await
                .unwrap()
                .is_some()
        })
        .await
    );
    for _ in 0..50 {
        let r = track(
            &ctx,
            None,
            json!({"eventType": "page.view", "eventId": seed.concert}),
        )
        .await;
        assert_eq!(r.status, 202);
    }
    // Stopped at once, inside the 200 ms the records wait for their batch.
    let t = ctx.stop().await;
    let rows: i64 = t
        .owner()
        .await
        .query_one(
            "SELECT count(*) FROM analytics_service.analytics_events",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 50);
}

#[tokio::test]
async fn records_older_than_a_year_are_removed_from_both_stores() {
    use analytics::figures::Period;
    use analytics::record::Record;
    use domain::analytics::TrackType;
    for clickhouse in [false, true] {
        let ctx = context(clickhouse).await;
        let store = ctx.analytics_store();
        let tenant = TenantId::new();
        let event = Uuid::now_v7();
        let now = Utc::now();
        let record = |days: i64| {
            Record::new(
                Uuid::now_v7(),
                tenant,
                TrackType::PageView,
                Some(event),
                None,
                json!({}),
                now - Duration::days(days),
            )
        };
        store
            .insert(&[record(400), record(366), record(300), record(1)])
            .await
            .unwrap();
        store.purge(now - Duration::days(365)).await.unwrap();
        let left = || async {
            store
                .funnel(tenant, event, Period::default())
                .await
                .unwrap()
                .views
        };
        // ClickHouse deletes in the background (a mutation).
        assert!(
            eventually(15, || async { left().await == 2 }).await,
            "clickhouse={clickhouse}: {}",
            left().await
        );
    }
}

#[tokio::test]
async fn a_crash_between_the_clickhouse_write_and_the_inbox_records_nothing_twice() {
    use analytics::consumers::{Recorder, record_of};
    use analytics::figures::Period;
    use storage::broker::Handler;
    use storage::inbox::Inbox;
    let ctx = context(true).await;
    let store = ctx.analytics_store();
    let recorder = Inbox::new(
        ctx.t.db.clone(),
        Recorder::new(ctx.t.db.clone(), store.clone()),
    );
    let tenant = TenantId::new();
    let event = Uuid::now_v7();
    let created = |n: u8| Envelope {
        id: domain::ids::EventId::new(),
        event_type: "registration.created".into(),
        occurred_at: Utc::now(),
        tenant_id: Some(tenant),
        actor_id: None,
        data: crate::support::event_data(
            "registration.created",
            json!({"eventId": event, "registrationId": Uuid::now_v7(), "userId": Uuid::now_v7(),
                   "status": "CONFIRMED", "n": n}),
        ),
    };
    let owner = ctx.t.owner().await;
    let interrupted = |e: &Envelope| {
        let id = e.id.as_uuid();
        let owner = &owner;
        async move {
            owner
                .execute(
                    "INSERT INTO analytics_service.recording (event_id, started_at) VALUES ($1, now())",
                    &[&id],
                )
                .await
                .unwrap();
        }
    };
    // The first delivery wrote the record and died before its inbox entry.
    let written = created(1);
    store
        .insert(&[record_of(&written, &written.decode().unwrap()).unwrap()])
        .await
        .unwrap();
    interrupted(&written).await;
    // The second died after marking, before writing.
    let unwritten = created(2);
    interrupted(&unwritten).await;
    for e in [&written, &unwritten, &written, &unwritten] {
        recorder.handle(e).await.unwrap();
    }
    let funnel = store
        .funnel(tenant, event, Period::default())
        .await
        .unwrap();
    assert_eq!(funnel.completed, 2, "each registration once");
    let marks = || async {
        owner
            .query_one("SELECT count(*) FROM analytics_service.recording", &[])
            .await
            .unwrap()
            .get::<_, i64>(0)
    };
    assert_eq!(marks().await, 0, "finished recordings leave no mark");

    // The same when the broker hands them over as one run (a sale's), a repeat included.
    let written = created(3);
    store
        .insert(&[record_of(&written, &written.decode().unwrap()).unwrap()])
        .await
        .unwrap();
    interrupted(&written).await;
    let unwritten = created(4);
    interrupted(&unwritten).await;
    let run = [written.clone(), unwritten, created(5), written];
    recorder.handle_batch(&run).await.unwrap();
    recorder.handle_batch(&run).await.unwrap();
    let funnel = store
        .funnel(tenant, event, Period::default())
        .await
        .unwrap();
    assert_eq!(funnel.completed, 5, "each registration of the run once");
    assert_eq!(marks().await, 0);
}

/// Views and registrations from three sources (a registration's source comes from
/// registration.created), read back from one store: the dashboard and the same dashboard over
/// a period that does not fall on midnight (ClickHouse then reads the records, not the daily
/// counts).
async fn sources_on(ctx: &Ctx, seed: &Seed) -> Vec<Value> {
    ctx.clock.advance(seed.start - ctx.clock.now());
    ctx.broker()
        .publish(&[envelope(
            seed,
            "event.published",
            seed.start,
            json!({"eventId": seed.concert}),
        )])
        .await
        .unwrap();
    assert!(
        eventually(10, || async {
            analytics::tracked::tenant_of(&ctx.t.db, seed.concert)
                .await
                .unwrap()
                .is_some()
        })
        .await
    );
    // Views: vk twice (spelled two ways), the newsletter once, no source once.
    for properties in [
        json!({"source": "vk"}),
        json!({"source": " VK "}),
        json!({"source": "newsletter"}),
        json!({}),
    ] {
        let r = track(
            ctx,
            None,
            json!({"eventType": "page.view", "eventId": seed.concert, "properties": properties}),
        )
        .await;
        assert_eq!(r.status, 202, "{}", r.body);
    }
    // Registrations: vk twice, none once (the event service sends null for none).
    let registration = |user: usize, source: Value| {
        let data = json!({"registrationId": Uuid::now_v7(), "eventId": seed.concert,
            "ticketTypeId": seed.standard, "userId": seed.users[user], "status": "CONFIRMED",
            "source": source});
        envelope(seed, "registration.created", seed.start, data)
    };
    for event in [
        registration(0, json!("vk")),
        registration(1, json!("vk")),
        registration(2, Value::Null),
    ] {
        ctx.broker()
            .publish(std::slice::from_ref(&event))
            .await
            .unwrap();
    }
    let member = seed.member();
    let dashboard = format!("/api/v1/analytics/events/{}/dashboard", seed.concert);
    assert!(
        eventually(15, || async {
            let d = ctx.get(&dashboard, Some(&member)).await.body;
            d["totalViews"] == 4 && d["totalRegistrations"] == 3
        })
        .await,
        "tracked and recorded: {}",
        ctx.get(&dashboard, Some(&member)).await.body
    );
    let odd = format!("{dashboard}?from=2026-11-20T09:30:00Z&to=2026-11-20T10:30:00Z");
    let mut answers = Vec::new();
    for path in [dashboard, odd] {
        let r = ctx.get(&path, Some(&member)).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        answers.push(r.body);
    }
    answers
}

fn check_sources(answers: &[Value]) {
    for dashboard in answers {
        assert_eq!(
            dashboard["bySource"],
            json!([
                {"source": "direct", "views": 1, "registrations": 1},
                {"source": "newsletter", "views": 1, "registrations": 0},
                {"source": "vk", "views": 2, "registrations": 2}
            ]),
            "one row per source, views and registrations side by side: {dashboard}"
        );
        let rows = dashboard["bySource"].as_array().unwrap();
        let sum = |field: &str| rows.iter().map(|r| r[field].as_u64().unwrap()).sum::<u64>();
        assert_eq!(sum("views"), dashboard["totalViews"].as_u64().unwrap());
        assert_eq!(
            sum("registrations"),
            dashboard["totalRegistrations"].as_u64().unwrap()
        );
    }
}

#[tokio::test]
async fn registrations_count_per_source_on_both_stores() {
    let seed = Seed::new();
    let postgres = context(false).await;
    let from_postgres = sources_on(&postgres, &seed).await;
    check_sources(&from_postgres);
    let clickhouse = context(true).await;
    let from_clickhouse = sources_on(&clickhouse, &seed).await;
    check_sources(&from_clickhouse);
    assert_eq!(from_postgres, from_clickhouse);
}

#[tokio::test]
async fn a_draft_is_tracked_by_its_members_and_shown_to_them() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (other, _) = ctx.owner(&admin).await;
    let created = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "Not yet", "startsAt": (Utc::now() + Duration::days(5)).to_rfc3339()}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let event = created.body["id"].as_str().unwrap().to_string();
    let dashboard = format!("/api/v1/analytics/events/{event}/dashboard");
    assert!(
        eventually(15, || async {
            ctx.get(&dashboard, Some(&owner.access)).await.status == 200
        })
        .await,
        "event.created makes the draft known"
    );
    let zeros = ctx.get(&dashboard, Some(&owner.access)).await.body;
    assert_eq!(
        zeros,
        json!({"eventId": event, "totalViews": 0, "uniqueViews": 0, "totalRegistrations": 0,
               "confirmedRegistrations": 0, "checkedIn": 0, "viewToRegistrationRate": 0.0,
               "registrationToCheckinRate": 0.0, "byDay": [], "byTicketType": [], "bySource": [],
               "queue": {"joined": 0, "admitted": 0, "left": 0, "waiting": 0, "registered": 0,
                   "gaveUp": 0, "admissionToRegistrationRate": 0.0, "averageWaitSeconds": 0.0}})
    );
    let funnel = format!("/api/v1/analytics/events/{event}/funnel");
    assert_eq!(ctx.get(&funnel, Some(&owner.access)).await.body["views"], 0);
    for stranger in [other.access.clone(), ctx.user().await.access] {
        assert_eq!(ctx.get(&dashboard, Some(&stranger)).await.status, 404);
        assert_eq!(ctx.get(&funnel, Some(&stranger)).await.status, 404);
    }

    // A draft is not public: only its organization's members may track it (a preview).
    let view =
        json!({"eventType": "page.view", "eventId": event, "properties": {"source": "preview"}});
    assert_eq!(track(&ctx, None, view.clone()).await.status, 404);
    assert_eq!(
        track(&ctx, Some(&other.access), view.clone()).await.status,
        404
    );
    let preview = track(&ctx, Some(&owner.access), view.clone()).await;
    assert_eq!(preview.status, 202, "{}", preview.body);

    // Published: anyone tracks it, and the preview counts with the rest.
    let published = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/publish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(published.status, 200, "{}", published.body);
    let public_view = json!({"eventType": "page.view", "eventId": event});
    assert!(
        eventually(15, || async {
            track(&ctx, None, public_view.clone()).await.status == 202
        })
        .await,
        "event.published makes it public"
    );
    assert!(
        eventually(15, || async {
            ctx.get(&dashboard, Some(&owner.access)).await.body["totalViews"] == 2
        })
        .await,
        "{}",
        ctx.get(&dashboard, Some(&owner.access)).await.body
    );
    assert_eq!(
        ctx.get(&dashboard, Some(&owner.access)).await.body["bySource"],
        json!([
            {"source": "direct", "views": 1, "registrations": 0},
            {"source": "preview", "views": 1, "registrations": 0}
        ])
    );

    // Unpublished: a draft again.
    let unpublished = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/unpublish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(unpublished.status, 200, "{}", unpublished.body);
    assert!(
        eventually(15, || async {
            track(&ctx, None, public_view.clone()).await.status == 404
        })
        .await,
        "event.unpublished hides it again"
    );
    assert_eq!(track(&ctx, Some(&owner.access), view).await.status, 202);
    assert_eq!(ctx.get(&dashboard, Some(&owner.access)).await.status, 200);
}

#[tokio::test]
async fn a_publication_overtaking_the_creation_is_kept() {
    use analytics::consumers::Recorder;
    use analytics::tracked::{TrackedEvent, find};
    use storage::broker::Handler;
    use storage::inbox::Inbox;
    let ctx = context(false).await;
    let recorder = Inbox::new(
        ctx.t.db.clone(),
        Recorder::new(ctx.t.db.clone(), ctx.analytics_store()),
    );
    let seed = Seed::new();
    let t0 = Utc::now();
    let at = |kind: &str, seconds: i64| {
        envelope(
            &seed,
            kind,
            t0 + Duration::seconds(seconds),
            json!({"eventId": seed.concert, "status": "DRAFT"}),
        )
    };
    let state = || async { find(&ctx.t.db, seed.concert).await.unwrap() };
    let public = Some(TrackedEvent {
        tenant: seed.tenant,
        draft: false,
    });
    let draft = Some(TrackedEvent {
        tenant: seed.tenant,
        draft: true,
    });
    // The broker delivered the publication first.
    recorder.handle(&at("event.published", 10)).await.unwrap();
    assert_eq!(state().await, public);
    recorder.handle(&at("event.created", 0)).await.unwrap();
    assert_eq!(state().await, public, "the older creation changes nothing");
    // Unpublished later; a publication from before that, arriving late, does not undo it.
    recorder.handle(&at("event.unpublished", 20)).await.unwrap();
    assert_eq!(state().await, draft);
    recorder.handle(&at("event.published", 15)).await.unwrap();
    assert_eq!(state().await, draft);
    recorder.handle(&at("event.published", 30)).await.unwrap();
    assert_eq!(state().await, public);
    // A creation alone makes a draft.
    let fresh = Uuid::now_v7();
    let mut created = at("event.created", 0);
    let mut data = created.data.value();
    data["eventId"] = json!(fresh);
    created.data = data.into();
    recorder.handle(&created).await.unwrap();
    assert_eq!(find(&ctx.t.db, fresh).await.unwrap(), draft);
}

/// Creates an event of `owner`'s organization starting in five days; its id.
async fn new_event(ctx: &Ctx, owner: &crate::identity::Session) -> String {
    let created = ctx
        .post(
            "/api/v1/events",
            Some(&owner.access),
            json!({"title": "On sale", "startsAt": (Utc::now() + Duration::days(5)).to_rfc3339()}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    created.body["id"].as_str().unwrap().to_string()
}

async fn publish(ctx: &Ctx, owner: &crate::identity::Session, event: &str) {
    let r = ctx
        .post_empty(
            &format!("/api/v1/events/{event}/publish"),
            Some(&owner.access),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Waits until analytics has applied every `kinds` event the events service published about
/// `event`, so nothing still in flight rewrites its projection row after the test changes it.
async fn settled(ctx: &Ctx, event: &str, kinds: &[&str]) {
    let owner = ctx.t.owner().await;
    let applied = eventually(15, || async {
        let ids: Vec<Uuid> = kinds
            .iter()
            .flat_map(|k| ctx.events.of(k))
            .filter(|e| e.data.value()["eventId"] == event)
            .map(|e| e.id.as_uuid())
            .collect();
        if ids.len() < kinds.len() {
            return false;
        }
        let done: i64 = owner
            .query_one(
                "SELECT count(DISTINCT event_id) FROM analytics_service.processed_events WHERE event_id = ANY($1)",
                &[&ids],
            )
            .await
            .unwrap()
            .get(0);
        done == ids.len() as i64
    })
    .await;
    assert!(applied, "analytics applied {kinds:?} of {event}");
}

async fn views_of(owner: &tokio_postgres::Client, event: &str) -> i64 {
    let event = Uuid::parse_str(event).unwrap();
    owner
        .query_one(
            "SELECT count(*) FROM analytics_service.analytics_events WHERE event_id = $1",
            &[&event],
        )
        .await
        .unwrap()
        .get(0)
}

fn view_of(event: &str) -> Value {
    json!({"eventType": "page.view", "eventId": event})
}

#[tokio::test]
async fn a_view_is_not_lost_while_the_projection_lags() {
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (other, _) = ctx.owner(&admin).await;
    let visitor = ctx.user().await;
    let db = ctx.t.owner().await;

    // Published, but analytics has not heard of it at all (the row is taken away once every
    // event about it was applied, which is where a lagging consumer would leave it).
    let fresh = new_event(&ctx, &owner).await;
    publish(&ctx, &owner, &fresh).await;
    settled(&ctx, &fresh, &["event.created", "event.published"]).await;
    let fresh_id = Uuid::parse_str(&fresh).unwrap();
    let removed = db
        .execute(
            "DELETE FROM analytics_service.tracked_events WHERE event_id = $1",
            &[&fresh_id],
        )
        .await
        .unwrap();
    assert_eq!(removed, 1);
    for token in [None, Some(visitor.access.as_str())] {
        let r = track(&ctx, token, view_of(&fresh)).await;
        assert_eq!(r.status, 202, "{}", r.body);
    }
    assert!(
        eventually(10, || async { views_of(&db, &fresh).await == 2 }).await,
        "both views written: {}",
        views_of(&db, &fresh).await
    );

    // Known as a draft, though published since: event.published is the one that lags.
    let overtaken = new_event(&ctx, &owner).await;
    publish(&ctx, &owner, &overtaken).await;
    settled(&ctx, &overtaken, &["event.created", "event.published"]).await;
    let overtaken_id = Uuid::parse_str(&overtaken).unwrap();
    db.execute(
        "UPDATE analytics_service.tracked_events SET draft = true WHERE event_id = $1",
        &[&overtaken_id],
    )
    .await
    .unwrap();
    let r = track(&ctx, None, view_of(&overtaken)).await;
    assert_eq!(r.status, 202, "{}", r.body);

    // A draft unknown to analytics is still its organization's own.
    let draft = new_event(&ctx, &owner).await;
    settled(&ctx, &draft, &["event.created"]).await;
    let draft_id = Uuid::parse_str(&draft).unwrap();
    db.execute(
        "DELETE FROM analytics_service.tracked_events WHERE event_id = $1",
        &[&draft_id],
    )
    .await
    .unwrap();
    assert_eq!(track(&ctx, None, view_of(&draft)).await.status, 404);
    for stranger in [&visitor, &other] {
        let r = track(&ctx, Some(&stranger.access), view_of(&draft)).await;
        assert_eq!(r.status, 404, "{}", r.body);
    }
    let preview = track(&ctx, Some(&owner.access), view_of(&draft)).await;
    assert_eq!(preview.status, 202, "{}", preview.body);
    assert!(eventually(10, || async { views_of(&db, &draft).await == 1 }).await);

    // Unknown and deleted events stay unknown, to members too.
    let unknown = Uuid::now_v7().to_string();
    for token in [None, Some(owner.access.as_str())] {
        assert_eq!(track(&ctx, token, view_of(&unknown)).await.status, 404);
    }
    let deleted = ctx
        .delete(&format!("/api/v1/events/{draft}"), Some(&owner.access))
        .await;
    assert!(deleted.status < 300, "{}", deleted.body);
    let r = track(&ctx, Some(&owner.access), view_of(&draft)).await;
    assert_eq!(r.status, 404, "{}", r.body);
}

#[tokio::test]
async fn the_tracking_route_answers_services_only() {
    use crate::support::signed;
    use domain::config::Service;
    let ctx = Ctx::new().await;
    let admin = ctx.admin().await;
    let (owner, org) = ctx.owner(&admin).await;
    let event = new_event(&ctx, &owner).await;
    let path = format!("/internal/events/{event}/tracking");
    let url = format!("{}{path}", ctx.service_url(Service::Events));
    let http = reqwest::Client::new();
    let ask = |url: String| {
        let http = http.clone();
        async move {
            send(signed(
                &http,
                reqwest::Method::GET,
                &url,
                Service::Analytics,
                &[],
            ))
            .await
        }
    };

    assert_eq!(send(http.get(&url)).await.status, 401, "unsigned");
    let by_gateway = send(signed(
        &http,
        reqwest::Method::GET,
        &url,
        Service::Gateway,
        &[],
    ))
    .await;
    assert_eq!(by_gateway.status, 403, "{}", by_gateway.body);
    assert_eq!(
        ctx.get(&path, Some(&owner.access)).await.status,
        404,
        "the gateway hides it"
    );

    let draft = ask(url.clone()).await;
    assert_eq!(draft.status, 200, "{}", draft.body);
    assert_eq!(draft.body, json!({"tenantId": org, "draft": true}));
    publish(&ctx, &owner, &event).await;
    assert_eq!(
        ask(url.clone()).await.body,
        json!({"tenantId": org, "draft": false})
    );
    let unknown = format!(
        "{}/internal/events/{}/tracking",
        ctx.service_url(Service::Events),
        Uuid::now_v7()
    );
    assert_eq!(ask(unknown).await.status, 404);
}

#[tokio::test]
async fn analytics_in_another_process_asks_the_events_service() {
    use crate::support::free_port;
    use domain::config::{NodeConfig, Service, ServiceAddr};
    // Node "rest" runs everything but analytics; node "analytics" runs analytics alone. Each
    // has its own in-process broker, so analytics never hears of an event: a projection that
    // lags for ever, and every view is placed by asking the events service over HTTP.
    let events_port = free_port();
    let analytics_port = free_port();
    let at = |port: u16| ServiceAddr {
        listen: format!("127.0.0.1:{port}"),
        url: format!("http://127.0.0.1:{port}"),
    };
    let ctx = Ctx::with_config(|c| {
        c.services.insert(Service::Events, at(events_port));
        c.services.insert(Service::Analytics, at(analytics_port));
        c.nodes = vec![
            NodeConfig {
                name: "rest".into(),
                services: Service::ALL
                    .into_iter()
                    .filter(|s| *s != Service::Analytics)
                    .collect(),
                addresses: Default::default(),
            },
            NodeConfig {
                name: "analytics".into(),
                services: vec![Service::Analytics],
                addresses: Default::default(),
            },
        ];
        c.node = "rest".into();
    })
    .await;
    let mut config = ctx.config();
    config.node = "analytics".into();
    let analytics = bilet::node::start(config.clone()).await.unwrap();

    let admin = ctx.admin().await;
    let (owner, _) = ctx.owner(&admin).await;
    let (other, _) = ctx.owner(&admin).await;
    let db = ctx.t.owner().await;
    let public = new_event(&ctx, &owner).await;
    publish(&ctx, &owner, &public).await;
    let draft = new_event(&ctx, &owner).await;

    let r = track(&ctx, None, view_of(&public)).await;
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(track(&ctx, None, view_of(&draft)).await.status, 404);
    assert_eq!(
        track(&ctx, Some(&other.access), view_of(&draft))
            .await
            .status,
        404
    );
    let preview = track(&ctx, Some(&owner.access), view_of(&draft)).await;
    assert_eq!(preview.status, 202, "{}", preview.body);
    let unknown = Uuid::now_v7().to_string();
    assert_eq!(track(&ctx, None, view_of(&unknown)).await.status, 404);
    let projected: i64 = db
        .query_one("SELECT count(*) FROM analytics_service.tracked_events", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(projected, 0, "every answer came from the events service");
    assert!(
        eventually(10, || async {
            views_of(&db, &public).await == 1 && views_of(&db, &draft).await == 1
        })
        .await
    );

    // The events service out of reach: the view is not refused as unknown, it is to be sent
    // again.
    analytics.stop().await;
    config.services.insert(Service::Events, at(free_port()));
    let analytics = bilet::node::start(config).await.unwrap();
    let r = track(&ctx, None, view_of(&public)).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert_eq!(r.body["details"]["service"], "events", "{}", r.body);
    assert_eq!(r.headers["retry-after"], "1");
    analytics.stop().await;
}
