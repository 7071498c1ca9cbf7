//! The HTTP conventions every endpoint inherits, exercised through a small router built from
//! the same extractors and layers the services use, served over real HTTP.

use crate::support::{self, TestDb, send};
use axum::Router;
use axum::http::StatusCode;
use axum::middleware;
use axum::routing::{get, post};
use domain::paging::{Page, SortDir, SortField, SortWhitelist};
use domain::validation::FieldErrors;
use http::context::Caller;
use http::extract::{Json, Path};
use http::idempotency::Idempotency;
use http::paging::PageParams;
use http::{ApiError, conventions};
use reqwest::header::CONTENT_TYPE;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use storage::Schema;
use uuid::Uuid;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CreateThingRequest {
    name: String,
    seats: u32,
}

async fn create(
    caller: Caller,
    Json(body): Json<CreateThingRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let mut errors = FieldErrors::new();
    errors.check_length("name", &body.name, 1, 10);
    errors.into_result()?;
    Ok((
        StatusCode::CREATED,
        Json(
            json!({"id": Uuid::now_v7(), "name": body.name, "seats": body.seats, "by": caller.user}),
        ),
    ))
}

async fn show(Path(id): Path<Uuid>) -> Result<Json<Value>, ApiError> {
    Err(ApiError::not_found().with_details(json!({"id": id})))
}

const WL: SortWhitelist = SortWhitelist {
    fields: &[SortField {
        api: "createdAt",
        column: "created_at",
    }],
    default: ("createdAt", SortDir::Desc),
};

async fn list(params: PageParams) -> Result<Json<Page<u32>>, ApiError> {
    let request = params.resolve(&WL)?;
    let total = 45u32;
    let first = request.page * request.size;
    let data = (first..total.min(first + request.size)).collect();
    Ok(Json(Page::new(data, &request, total.into())))
}

/// A failure whose outcome is unknown (a bug, or the connection lost during the COMMIT).
async fn unknown() -> Result<StatusCode, ApiError> {
    Err(ApiError::internal(&"after the commit, perhaps"))
}

async fn boom() -> &'static str {
    panic!("handler bug")
}

async fn serve(t: &TestDb) -> String {
    let failed_once = Arc::new(AtomicBool::new(false));
    let flaky = move || {
        let failed_once = failed_once.clone();
        async move {
            if !failed_once.swap(true, Ordering::SeqCst) {
                // Failed before anything could commit (the shard moved, say).
                Err(ApiError::moved(&"transient"))
            } else {
                Ok((StatusCode::CREATED, Json(json!({"id": Uuid::now_v7()}))))
            }
        }
    };
    let router = Router::new()
        .route("/things", post(create).get(list))
        .route("/things/{id}", get(show))
        .route("/flaky", post(flaky))
        .route("/boom", get(boom))
        .route("/unknown", post(unknown))
        .layer(middleware::from_fn_with_state(
            Idempotency {
                db: t.db.clone(),
                schema: Schema::EventService,
                body_limit: 1024,
                holder: storage::liveness::LifeLine::new(),
            },
            http::idempotency::layer,
        ));
    let app = conventions::apply(router, 1024);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

async fn post_raw(base: &str, path: &str, body: &str, lang: Option<&str>) -> (StatusCode, Value) {
    let mut req = client()
        .post(format!("{base}{path}"))
        .header(CONTENT_TYPE, "application/json")
        .body(body.to_string());
    if let Some(lang) = lang {
        req = req.header("Accept-Language", lang);
    }
    let resp = req.send().await.unwrap();
    let status = StatusCode::from_u16(resp.status().as_u16()).unwrap();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn bad_bodies_become_validation_errors_per_field_in_both_languages() {
    let t = TestDb::new().await;
    let base = serve(&t).await;

    let (status, body) =
        post_raw(&base, "/things", r#"{"name": "x", "seats": "many"}"#, None).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["code"], "validation_error");
    assert_eq!(body["message"], "Ошибка проверки данных");
    assert!(
        body["details"]["seats"]
            .as_str()
            .unwrap()
            .starts_with("Неверный тип")
    );

    let (_, body) = post_raw(&base, "/things", r#"{"seats": 2}"#, Some("en")).await;
    assert_eq!(body["message"], "Validation failed");
    assert_eq!(body["details"], json!({"name": "This field is required"}));

    let (status, body) = post_raw(
        &base,
        "/things",
        r#"{"name": "x", "seats": 1"#,
        Some("en-GB,en;q=0.9"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["details"]["body"]
            .as_str()
            .unwrap()
            .starts_with("Malformed JSON")
    );

    let (_, body) = post_raw(
        &base,
        "/things",
        r#"{"name": "x", "seats": 1, "admin": true}"#,
        Some("en"),
    )
    .await;
    assert_eq!(body["details"]["admin"], "Unknown field");

    let (_, body) = post_raw(
        &base,
        "/things",
        r#"{"name": "far too long a name", "seats": -1}"#,
        Some("en"),
    )
    .await;
    assert_eq!(body["details"]["seats"], "Wrong value type, expected u32");

    let (status, body) = post_raw(
        &base,
        "/things",
        r#"{"name": "far too long", "seats": 1}"#,
        Some("en"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(body["details"]["name"], "Maximum length is 10");

    let (status, body) = post_raw(&base, "/things", "42", Some("en")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["details"]["body"]
            .as_str()
            .unwrap()
            .starts_with("Wrong value type")
    );
}

#[tokio::test]
async fn oversize_and_wrong_content_type_are_refused() {
    let t = TestDb::new().await;
    let base = serve(&t).await;
    let big = format!(r#"{{"name": "{}", "seats": 1}}"#, "x".repeat(4096));
    let (status, body) = post_raw(&base, "/things", &big, Some("en")).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["code"], "payload_too_large");

    let resp = client()
        .post(format!("{base}/things"))
        .header(CONTENT_TYPE, "text/plain")
        .body(r#"{"name":"x","seats":1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 415);
    assert_eq!(
        resp.json::<Value>().await.unwrap()["code"],
        "unsupported_media_type"
    );

    // Deeply nested JSON is refused by the parser's depth limit, not by a crash.
    let nested = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
    let (status, body) = post_raw(&base, "/things", &nested, None).await;
    assert!(
        status == StatusCode::BAD_REQUEST || status == StatusCode::PAYLOAD_TOO_LARGE,
        "{status} {body}"
    );
}

#[tokio::test]
async fn paths_routes_and_methods_answer_in_the_error_format() {
    let t = TestDb::new().await;
    let base = serve(&t).await;
    let resp = client()
        .get(format!("{base}/things/not-a-uuid"))
        .header("Accept-Language", "en")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_eq!(
        resp.json::<Value>().await.unwrap()["details"],
        json!({"id": "Invalid format"})
    );

    let id = Uuid::now_v7();
    let body = support::get(&format!("{base}/things/{id}"), None)
        .await
        .body;
    assert_eq!(body["code"], "not_found");
    assert_eq!(body["message"], "Ресурс не найден");
    assert_eq!(body["details"]["id"], id.to_string());

    let resp = support::get(&format!("{base}/nowhere"), None).await;
    assert_eq!(resp.status, 404);
    assert_eq!(resp.body["code"], "not_found");

    let resp = send(client().delete(format!("{base}/things"))).await;
    assert_eq!(resp.status, 405);
    assert_eq!(resp.body["code"], "method_not_allowed");
}

#[tokio::test]
async fn paging_object_and_sort_whitelist() {
    let t = TestDb::new().await;
    let base = serve(&t).await;
    let body = support::get(&format!("{base}/things?page=2&size=20"), None)
        .await
        .body;
    assert_eq!(body["data"].as_array().unwrap().len(), 5);
    assert_eq!(body["page"], 2);
    assert_eq!(body["size"], 20);
    assert_eq!(body["totalElements"], 45);
    assert_eq!(body["totalPages"], 3);
    assert_eq!(body["hasNext"], false);
    assert_eq!(body["hasPrevious"], true);

    let body = support::get(&format!("{base}/things"), None).await.body;
    assert_eq!(
        (
            body["page"].as_u64(),
            body["size"].as_u64(),
            body["hasNext"].as_bool()
        ),
        (Some(0), Some(20), Some(true))
    );

    for (query, field) in [
        ("size=101", "size"),
        ("size=abc", "size"),
        ("page=-1", "page"),
        ("sort=password,asc", "sort"),
        ("sort=createdAt,sideways", "sort"),
    ] {
        let resp = client()
            .get(format!("{base}/things?{query}"))
            .header("Accept-Language", "en")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 400, "{query}");
        let body: Value = resp.json().await.unwrap();
        assert!(body["details"][field].is_string(), "{query}: {body}");
    }
    let resp = client()
        .get(format!("{base}/things?sort=createdAt,asc"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test]
async fn correlation_id_is_echoed_or_made_and_panics_are_clean_500s() {
    let t = TestDb::new().await;
    let base = serve(&t).await;
    let resp = client()
        .get(format!("{base}/things"))
        .header("X-Correlation-ID", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-correlation-id"], "abc-123");
    let resp = client().get(format!("{base}/things")).send().await.unwrap();
    let made = resp.headers()["x-correlation-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(Uuid::parse_str(&made).is_ok());
    let resp = client()
        .get(format!("{base}/things"))
        .header("X-Correlation-ID", "bad id\twith junk")
        .send()
        .await
        .unwrap();
    assert_ne!(resp.headers()["x-correlation-id"], "bad id\twith junk");

    let resp = client()
        .get(format!("{base}/boom"))
        .header("Accept-Language", "en")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 500);
    assert!(resp.headers().contains_key("x-correlation-id"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "internal_error");
    assert_eq!(body["message"], "Internal server error");
}

async fn post_with_key(
    base: &str,
    path: &str,
    key: &str,
    user: Option<Uuid>,
    body: Value,
) -> reqwest::Response {
    let mut req = client()
        .post(format!("{base}{path}"))
        .header("X-Idempotency-Key", key)
        .json(&body);
    if let Some(user) = user {
        req = req.header("X-User-Id", user.to_string());
    }
    req.send().await.unwrap()
}

#[tokio::test]
async fn idempotency_key_replays_refuses_other_bodies_and_is_per_user() {
    let t = TestDb::new().await;
    let base = serve(&t).await;
    let key = Uuid::new_v4().to_string();
    let user = Uuid::now_v7();
    let body = json!({"name": "gala", "seats": 2});

    let first = post_with_key(&base, "/things", &key, Some(user), body.clone()).await;
    assert_eq!(first.status().as_u16(), 201);
    assert!(!first.headers().contains_key("idempotent-replayed"));
    let first: Value = first.json().await.unwrap();

    let again = post_with_key(&base, "/things", &key, Some(user), body.clone()).await;
    assert_eq!(again.status().as_u16(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(
        again.json::<Value>().await.unwrap(),
        first,
        "the first response, byte for byte"
    );

    let other = post_with_key(
        &base,
        "/things",
        &key,
        Some(user),
        json!({"name": "other", "seats": 2}),
    )
    .await;
    assert_eq!(other.status().as_u16(), 422);
    assert_eq!(
        other.json::<Value>().await.unwrap()["code"],
        "idempotency_key_reused"
    );

    let someone_else =
        post_with_key(&base, "/things", &key, Some(Uuid::now_v7()), body.clone()).await;
    assert_eq!(someone_else.status().as_u16(), 201);
    assert_ne!(
        someone_else.json::<Value>().await.unwrap()["id"],
        first["id"]
    );

    let bad = post_with_key(&base, "/things", "not-a-uuid", Some(user), body.clone()).await;
    assert_eq!(bad.status().as_u16(), 400);
    assert!(bad.json::<Value>().await.unwrap()["details"]["X-Idempotency-Key"].is_string());

    // A refused request is replayed as refused: the key is spent on it.
    let key2 = Uuid::new_v4().to_string();
    let refused = post_with_key(
        &base,
        "/things",
        &key2,
        Some(user),
        json!({"name": "", "seats": 1}),
    )
    .await;
    assert_eq!(refused.status().as_u16(), 400);
    let replay = post_with_key(
        &base,
        "/things",
        &key2,
        Some(user),
        json!({"name": "", "seats": 1}),
    )
    .await;
    assert_eq!(replay.status().as_u16(), 400);
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
}

#[tokio::test]
async fn a_failure_known_to_have_changed_nothing_releases_the_key_for_a_retry() {
    let t = TestDb::new().await;
    let base = serve(&t).await;
    let key = Uuid::new_v4().to_string();
    let first = post_with_key(&base, "/flaky", &key, None, json!({})).await;
    assert_eq!(first.status().as_u16(), 503);
    let retry = post_with_key(&base, "/flaky", &key, None, json!({})).await;
    assert_eq!(retry.status().as_u16(), 201);
    assert!(!retry.headers().contains_key("idempotent-replayed"));
    let replay = post_with_key(&base, "/flaky", &key, None, json!({})).await;
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
}

/// A failure whose outcome is unknown keeps its key: a retry is refused as in progress (409)
/// rather than risk applying the request twice.
#[tokio::test]
async fn a_failure_with_an_unknown_outcome_keeps_the_key() {
    let t = TestDb::new().await;
    let base = serve(&t).await;
    let key = Uuid::new_v4().to_string();
    let first = post_with_key(&base, "/unknown", &key, None, json!({})).await;
    assert_eq!(first.status().as_u16(), 500);
    let retry = post_with_key(&base, "/unknown", &key, None, json!({})).await;
    assert_eq!(retry.status().as_u16(), 409);
    let body: Value = retry.json().await.unwrap();
    assert_eq!(body["code"], "idempotency_in_progress", "{body}");
}

/// A claim records the life line of the process holding it: while that session holds its
/// advisory lock the key is in progress; the moment the session ends (the process killed) a
/// retry takes the key over, without waiting five minutes.
#[tokio::test]
async fn a_key_held_by_a_process_that_died_is_taken_over_at_once() {
    use storage::idempotency::{Claim, claim};
    let t = crate::support::TestDb::new().await;
    let (user, key) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
    let schema = storage::Schema::EventService;
    let life = storage::liveness::LifeLine::new();
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    let line = tokio::spawn(life.clone().run(t.db.login(), stop_rx));
    assert!(
        crate::support::eventually(5, || {
            let held = life.key().is_some();
            async move { held }
        })
        .await
    );
    let other = Some(12345_i64);
    assert!(matches!(
        claim(&t.db, schema, user, key, b"body", life.key())
            .await
            .unwrap(),
        Claim::Fresh
    ));
    assert!(matches!(
        claim(&t.db, schema, user, key, b"body", other)
            .await
            .unwrap(),
        Claim::InProgress
    ));
    // The holder's session ends, as when its process is killed.
    stop.send(true).unwrap();
    line.await.unwrap();
    assert!(matches!(
        claim(&t.db, schema, user, key, b"body", other)
            .await
            .unwrap(),
        Claim::Fresh
    ));
    let holder: Option<i64> = t
        .owner()
        .await
        .query_one(
            "SELECT holder FROM event_service.idempotency_keys WHERE owner_id = $1 AND key = $2",
            &[&user, &key],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(holder, other, "the claim is the new holder's");
}

/// A key in progress is taken over only once its claim is five minutes old on the database's
/// clock, the one that wrote it: the node's clock plays no part.
#[tokio::test]
async fn an_abandoned_key_is_judged_on_the_database_clock() {
    use storage::idempotency::{Claim, claim};
    let t = crate::support::TestDb::new().await;
    let owner = t.owner().await;
    let (user, key) = (uuid::Uuid::now_v7(), uuid::Uuid::now_v7());
    let schema = storage::Schema::EventService;
    assert!(matches!(
        claim(&t.db, schema, user, key, b"body", None)
            .await
            .unwrap(),
        Claim::Fresh
    ));
    let age = |minutes: i32| {
        let owner = &owner;
        async move {
            owner
                .execute(
                    "UPDATE event_service.idempotency_keys
                     SET created_at = clock_timestamp() - make_interval(mins => $3)
                     WHERE owner_id = $1 AND key = $2",
                    &[&user, &key, &minutes],
                )
                .await
                .unwrap();
        }
    };
    age(4).await;
    assert!(matches!(
        claim(&t.db, schema, user, key, b"body", None)
            .await
            .unwrap(),
        Claim::InProgress
    ));
    age(6).await;
    assert!(matches!(
        claim(&t.db, schema, user, key, b"body", None)
            .await
            .unwrap(),
        Claim::Fresh
    ));
    // Taken over: the new claim is fresh on the same clock, and in progress again.
    assert!(matches!(
        claim(&t.db, schema, user, key, b"body", None)
            .await
            .unwrap(),
        Claim::InProgress
    ));
}
