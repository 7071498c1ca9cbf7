//! A whole node started as `bilet serve` starts it: health, readiness, metrics, the OpenAPI
//! document and the error format on every port.

use crate::support::{TestDb, get};
use bilet::node;
use domain::config::Service;
use std::time::Duration;

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

/// Reads from `stream` until the peer closes it or `within` passes; what was read, and whether
/// it closed.
async fn read_until_closed(
    stream: &mut tokio::net::TcpStream,
    within: Duration,
) -> (Vec<u8>, bool) {
    use tokio::io::AsyncReadExt;
    let mut read = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (read, true),
            Ok(Ok(n)) => read.extend_from_slice(&buf[..n]),
            Err(_) => return (read, false),
        }
    }
}

/// Sends one keep-alive request for the liveness check and reads its answer.
async fn live_on(stream: &mut tokio::net::TcpStream) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    stream
        .write_all(b"GET /health/live HTTP/1.1\r\nHost: bilet\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\"UP\"}") {
        let mut buf = [0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("an answer within 5 s")
            .unwrap();
        assert!(
            n > 0,
            "closed before answering: {}",
            String::from_utf8_lossy(&answer)
        );
        answer.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_connection_that_sends_no_request_in_time_is_closed() {
    use tokio::io::AsyncWriteExt;
    use tokio::net::TcpStream;
    let t = TestDb::new().await;
    let mut config = t.config.clone();
    config.http.idle_connection_seconds = 1;
    let node = node::start(config).await.unwrap();
    let gateway = node.addrs[&Service::Gateway];

    let mut silent = TcpStream::connect(gateway).await.unwrap();
    // Half a request head, the rest never sent (a slow client, or one holding connections).
    let mut trickling = TcpStream::connect(gateway).await.unwrap();
    trickling
        .write_all(b"GET /health/live HTTP/1.1\r\nHost: bilet\r\n")
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    // A connection that keeps sending within the deadline is served every time.
    let mut kept = TcpStream::connect(gateway).await.unwrap();
    for _ in 0..3 {
        let answer = live_on(&mut kept).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    let (said, closed) = read_until_closed(&mut silent, Duration::from_secs(5)).await;
    assert!(closed, "a silent connection stays open");
    assert!(said.is_empty(), "{}", String::from_utf8_lossy(&said));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "closed before its deadline"
    );
    let (said, closed) = read_until_closed(&mut trickling, Duration::from_secs(5)).await;
    assert!(
        closed,
        "a connection that never finishes its request head stays open"
    );
    let said = String::from_utf8_lossy(&said);
    assert!(
        !said.contains(" 200 "),
        "an unfinished request was answered: {said}"
    );
    // Idle past the deadline after its last answer, the served one is closed too.
    let (_, closed) = read_until_closed(&mut kept, Duration::from_secs(5)).await;
    assert!(closed, "an idle keep-alive connection stays open");
    node.stop().await;
}
