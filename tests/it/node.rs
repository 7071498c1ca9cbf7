//! A whole node started as `bilet serve` starts it: health, readiness, metrics, the OpenAPI
//! document and the error format on every port.

use crate::support::{TestDb, get};
use bilet::node;
use domain::config::Service;

#[tokio::test]
async fn node_serves_health_metrics_and_openapi_on_every_port() {
    let t = TestDb::new().await;
    let node = node::start(t.config.clone()).await.unwrap();
    let gateway = format!("http://{}", node.addrs[&Service::Gateway]);
    let http = reqwest::Client::new();

    let live = get(&format!("{gateway}/health/live"), None).await;
    assert_eq!(live.status, 200);
    assert_eq!(live.body, serde_json::json!({"status": "UP"}));

    let ready = get(&format!("{gateway}/health/ready"), None).await;
    assert_eq!(ready.status, 200);
    assert!(ready.headers.contains_key("x-correlation-id"));
    assert_eq!(
        ready.body,
        serde_json::json!({"status": "UP", "checks": {"database": "UP", "broker": "UP", "shards": "UP", "peers": "UP"}})
    );

    let doc = get(&format!("{gateway}/api/v1/openapi.json"), None)
        .await
        .body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    assert!(doc["paths"]["/health/ready"]["get"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());

    // Through the gateway an unknown route is closed like any other non-public one; on a
    // service's own port it is a plain 404.
    let closed = get(&format!("{gateway}/api/v1/nothing-here"), None).await;
    assert_eq!(closed.status, 401);
    assert_eq!(closed.body["code"], "unauthorized");
    // A service's own port answers only signed requests: unsigned, even a missing route is
    // 401; signed by the gateway, it is a plain 404.
    let identity = format!("http://{}", node.addrs[&Service::Identity]);
    let unsigned = get(&format!("{identity}/api/v1/nothing-here"), None).await;
    assert_eq!(unsigned.status, 401);
    assert_eq!(unsigned.body["code"], "unauthorized");
    let missing = crate::support::send(crate::support::signed(
        &http,
        reqwest::Method::GET,
        &format!("{identity}/api/v1/nothing-here"),
        Service::Gateway,
        &[],
    ))
    .await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.body["code"], "not_found");

    let metrics = http
        .get(format!("{gateway}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("bilet_http_requests_total{method=\"GET\",route=\"/health/ready\",service=\"gateway\",status=\"200\"} 1"), "{metrics}");
    assert!(metrics.contains("bilet_http_request_duration_seconds_bucket"));

    for service in [
        Service::Identity,
        Service::Events,
        Service::Notifications,
        Service::Media,
        Service::Analytics,
    ] {
        let url = format!("http://{}/health/ready", node.addrs[&service]);
        let resp = http.get(url).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{service:?}");
    }
    node.stop().await;
}

#[tokio::test]
async fn readiness_reports_a_broker_that_does_not_answer() {
    let t = TestDb::new().await;
    let mut config = t.config.clone();
    config.broker.url = "amqp://guest:guest@127.0.0.1:1/%2f".into();
    let node = node::start(config).await.unwrap();
    let gateway = format!("http://{}", node.addrs[&Service::Gateway]);
    let live = get(&format!("{gateway}/health/live"), None).await;
    assert_eq!(live.status, 200, "alive even when not ready");
    let ready = get(&format!("{gateway}/health/ready"), None).await;
    assert_eq!(ready.status, 503);
    assert_eq!(
        ready.body,
        serde_json::json!({"status": "DOWN", "checks": {"database": "UP", "broker": "DOWN", "shards": "UP", "peers": "UP"}})
    );
    node.stop().await;
}

#[tokio::test]
async fn a_node_runs_only_the_services_it_is_given() {
    let t = TestDb::new().await;
    let mut config = t.config.clone();
    config.nodes.push(domain::config::NodeConfig {
        name: "events-only".into(),
        services: vec![Service::Events],
        addresses: Default::default(),
    });
    config.node = "events-only".into();
    let node = node::start(config).await.unwrap();
    assert_eq!(
        node.addrs.keys().copied().collect::<Vec<_>>(),
        vec![Service::Events]
    );
    node.stop().await;
}

#[tokio::test]
async fn the_outbox_backlog_shows_events_the_broker_has_not_taken() {
    // A broker nobody answers at: events wait in the outbox.
    let ctx = crate::identity::Ctx::with_config(|c| {
        c.broker.url = "amqp://guest:guest@127.0.0.1:1/%2f".into();
        c.broker.exchange = format!("bilet.test-{}", uuid::Uuid::now_v7().simple());
    })
    .await;
    let email = format!("b{}@example.com", uuid::Uuid::now_v7().simple());
    assert_eq!(ctx.register(&email).await.status, 201);
    let metrics = format!("{}/metrics", ctx.base);
    let backlog = || async {
        let text = reqwest::get(&metrics).await.unwrap().text().await.unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("bilet_outbox_backlog "))
            .and_then(|v| v.trim().parse::<i64>().ok())
            .unwrap_or(0)
    };
    assert!(
        crate::support::eventually(20, || async { backlog().await >= 1 }).await,
        "user.registered waits: backlog {}",
        backlog().await
    );
}
