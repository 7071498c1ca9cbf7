//! Test harness: a fresh database per test (migrated like production), nodes started inside
//! the test process on OS-chosen ports, and the URLs of the provisioned services.

use domain::config::{Config, Service, ServiceAddr};
use std::collections::BTreeMap;
use storage::Database;
use tokio_postgres::NoTls;

/// The server the test databases are created on (owner credentials).
pub fn admin_url() -> String {
    std::env::var("TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// The RabbitMQ of the tests.
pub fn amqp_url() -> String {
    std::env::var("TEST_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into())
}

/// A migrated database of its own.
pub struct TestDb {
    /// Owner connection URL of this database.
    pub url: String,
    /// The pool services use (the application role, `bilet_app_<database>`).
    pub db: Database,
    /// The configuration pointing at it.
    pub config: Config,
}

impl TestDb {
    pub async fn new() -> TestDb {
        bilet::logging::init(&std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()));
        let name = format!("bilet_test_{}", uuid::Uuid::new_v4().simple());
        let pg: tokio_postgres::Config = admin_url().parse().unwrap();
        let (client, conn) = pg.connect(NoTls).await.expect("test PostgreSQL reachable");
        tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        let url = with_dbname(&admin_url(), &name);
        let mut config = test_config();
        config.database.url = url.clone();
        config.database.pool_size = 8;
        storage::db::migrate(&config.database)
            .await
            .expect("migrations apply");
        let db = Database::connect(&config.database).unwrap();
        TestDb { url, db, config }
    }

    /// A client connected as the owner, for checks the application role may not make.
    pub async fn owner(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls).await.unwrap();
        tokio::spawn(conn);
        client
    }
}

/// `url` naming the database `db` instead.
pub fn with_dbname(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map(|i| i + 3).unwrap_or(0);
    let base = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

/// Every service on 127.0.0.1 with an OS-chosen port, a fixed JWT secret, fast retries.
pub fn test_config() -> Config {
    let services = Service::ALL
        .into_iter()
        .map(|s| {
            (
                s,
                ServiceAddr {
                    listen: "127.0.0.1:0".into(),
                    url: "http://127.0.0.1:0".into(),
                },
            )
        })
        .collect::<BTreeMap<_, _>>();
    let mut config = Config {
        services,
        data_dir: std::env::temp_dir()
            .join(format!("bilet-test-{}", uuid::Uuid::new_v4().simple())),
        ..Config::default()
    };
    config.auth.jwt_secret = Some(domain::config::Secret::new(
        "test-secret-test-secret-test-secret",
    ));
    config.auth.service_secret = Some(domain::config::Secret::new(SERVICE_SECRET));
    config.broker.retry_base_ms = 50;
    config.broker.relay_poll_ms = 200;
    // Tests run side by side on one server and several count its sessions: none kept open
    // unless a test asks (`installation::a_pool_keeps_its_warm_connections_open_while_quiet`).
    config.database.warm_connections = 0;
    config
}

/// Serves `app` on an OS-chosen port of 127.0.0.1 for the rest of the test: its base URL
/// (`http://127.0.0.1:port`). The fakes of outside services the tests serve start this way.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

/// A port no one listens on right now, for processes started by a test.
///
/// Picked below Linux's ephemeral range (32768–60999): a port the kernel handed out for `:0`
/// can go to any outgoing connection (the tests running beside open them all the time) before
/// the node binds it, and a node failed to start with `Address already in use` on one. Below
/// the range only another test's pick can collide.
pub fn free_port() -> u16 {
    for _ in 0..1000 {
        let port = 20_000 + (uuid::Uuid::new_v4().as_u128() % 12_000) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The service secret of every test node and cluster.
pub const SERVICE_SECRET: &str = "test-service-secret-test-service-secret";

/// Signs a request to a service's own port as `signer` would (the gateway for client requests,
/// another service for internal routes), with the identity headers given.
pub fn signed(
    client: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    signer: domain::config::Service,
    identity: &[(&str, &str)],
) -> reqwest::RequestBuilder {
    let mut headers = reqwest::header::HeaderMap::new();
    for (name, value) in identity {
        headers.insert(
            reqwest::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    let parsed = reqwest::Url::parse(url).unwrap();
    http::trust::Trust::new(SERVICE_SECRET.as_bytes()).sign(signer, &method, &parsed, &mut headers);
    client.request(method, parsed).headers(headers)
}

/// Polls `check` until it returns true or `seconds` pass.
pub async fn eventually<F, Fut>(seconds: u64, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while tokio::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

#[test]
fn dbname_is_replaced() {
    assert_eq!(
        with_dbname("postgres://u@h:5432/postgres", "x"),
        "postgres://u@h:5432/x"
    );
    assert_eq!(
        with_dbname("postgres://u@h:5432/postgres?sslmode=disable", "x"),
        "postgres://u@h:5432/x?sslmode=disable"
    );
    assert_eq!(with_dbname("postgres://u@h", "x"), "postgres://u@h/x");
}

/// A response reduced to what tests look at.
pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: serde_json::Value,
}

/// Sends a request and reads the JSON body (Null when the body is not JSON).
pub async fn send(request: reqwest::RequestBuilder) -> Reply {
    let resp = request.send().await.expect("request sent");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.json().await.unwrap_or(serde_json::Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

/// `GET url`, optionally in a language.
pub async fn get(url: &str, lang: Option<&str>) -> Reply {
    let mut request = reqwest::Client::new().get(url);
    if let Some(lang) = lang {
        request = request.header("Accept-Language", lang);
    }
    send(request).await
}

/// The Redis of the tests.
pub fn redis_url() -> String {
    std::env::var("TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A valid payload of domain event `kind` with `fields` written over the contract's example
/// (tests name only the fields they are about; the rest must still read).
pub fn event_data(kind: &str, fields: serde_json::Value) -> domain::envelope::Payload {
    let kind = domain::contract::Kind::parse(kind).unwrap_or_else(|| panic!("no event {kind}"));
    let mut data = domain::contract::samples::of(kind).to_data().value();
    if let (Some(data), Some(fields)) = (data.as_object_mut(), fields.as_object()) {
        for (k, v) in fields {
            data.insert(k.clone(), v.clone());
        }
    }
    data.into()
}

/// The first column of every row `sql` returns.
pub async fn column<T>(client: &tokio_postgres::Client, sql: &str) -> Vec<T>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    client
        .query(sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}
