//! Installations that cannot collide (issue 28): each has an application role of its own that
//! no other installation's `migrate` touches, a production `serve` migrates only when told to,
//! and a process given another SERVICE_SECRET than its peers says so at /health/ready (and its
//! log says a request was signed with another secret, not that it was unsigned).

use crate::support::{
    TestDb, admin_url, column, eventually, free_port, get, test_config, with_dbname,
};
use domain::config::{DatabaseConfig, Secret, Service};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use tokio_postgres::NoTls;

fn fresh_url() -> String {
    with_dbname(
        &admin_url(),
        &format!("bilet_test_{}", uuid::Uuid::new_v4().simple()),
    )
}

fn database(url: &str, password: Option<&str>, role: Option<&str>) -> DatabaseConfig {
    DatabaseConfig {
        url: url.into(),
        app_password: password.map(Secret::new),
        app_role: role.map(str::to_string),
        ..DatabaseConfig::default()
    }
}

async fn server() -> tokio_postgres::Client {
    let (client, conn) = tokio_postgres::connect(&admin_url(), NoTls).await.unwrap();
    tokio::spawn(conn);
    client
}

/// The role's comment and stored password (the test server's owner is a superuser).
async fn role(server: &tokio_postgres::Client, name: &str) -> (Option<String>, Option<String>) {
    let row = server
        .query_one(
            "SELECT shobj_description(oid, 'pg_authid'), rolpassword FROM pg_authid WHERE rolname = $1",
            &[&name],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

#[tokio::test]
async fn two_installations_on_one_server_keep_their_own_role_and_password() {
    let server = server().await;
    let a = database(&fresh_url(), Some("password-of-installation-a"), None);
    let b = database(&fresh_url(), Some("password-of-installation-b"), None);
    storage::db::migrate(&a).await.unwrap();
    let role_a = a.app_role_name();
    let (comment, password_a) = role(&server, &role_a).await;
    assert_eq!(
        comment.as_deref(),
        Some(format!("bilet application role of database {}", a.database_name()).as_str())
    );
    assert!(password_a.is_some());

    storage::db::migrate(&b).await.unwrap();
    let role_b = b.app_role_name();
    assert_ne!(role_a, role_b);
    assert_eq!(
        role(&server, &role_a).await.1,
        password_a,
        "b left a's password alone"
    );
    assert_ne!(role(&server, &role_b).await.1, password_a);

    // B configured with A's role: refused, and A's password is still A's.
    let intruder = database(&b.url, Some("intruder"), Some(&role_a));
    let refused = storage::db::migrate(&intruder)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains(&format!(
            "role {role_a} exists and is not this installation's"
        )) && refused.contains(&format!("database {}", a.database_name()))
            && refused.contains("DATABASE_APP_ROLE"),
        "{refused}"
    );
    assert_eq!(role(&server, &role_a).await.1, password_a);

    // A role made by hand (no mark) is not taken over either.
    let hand = format!("bilet_hand_{}", uuid::Uuid::new_v4().simple());
    server
        .batch_execute(&format!("CREATE ROLE {hand} LOGIN PASSWORD 'by-hand'"))
        .await
        .unwrap();
    let before = role(&server, &hand).await.1;
    let refused = storage::db::migrate(&database(&b.url, Some("x"), Some(&hand)))
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("has no comment"), "{refused}");
    assert_eq!(role(&server, &hand).await.1, before);
    server
        .batch_execute(&format!("DROP ROLE {hand}"))
        .await
        .unwrap();

    // Its own role's password follows DATABASE_APP_PASSWORD.
    let rotated = database(&a.url, Some("a-new-password-for-a"), None);
    storage::db::migrate(&rotated).await.unwrap();
    assert_ne!(role(&server, &role_a).await.1, password_a);

    // The services connect as that role.
    let db = storage::Database::connect(&rotated).unwrap();
    let user: String = db
        .client()
        .await
        .unwrap()
        .query_one("SELECT current_user::text", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(user, role_a);
}

#[tokio::test]
async fn an_installation_migrated_before_the_role_was_configurable_migrates_again() {
    // Its V1 migrations were recorded with the grants to `bilet_app` in their text; the grants
    // now follow the migrations, and the recorded checksums are taken over.
    let t = TestDb::new().await;
    let owner = t.owner().await;
    for (schema, legacy) in storage::db::LEGACY_V1_CHECKSUMS {
        owner
            .execute(
                &format!(
                    "UPDATE {schema}.refinery_schema_history SET checksum = $1 WHERE version = 1"
                ),
                &[&legacy.to_string()],
            )
            .await
            .unwrap();
    }
    storage::db::migrate(&t.config.database).await.unwrap();
    for (schema, legacy) in storage::db::LEGACY_V1_CHECKSUMS {
        let recorded: String = owner
            .query_one(
                &format!("SELECT checksum FROM {schema}.refinery_schema_history WHERE version = 1"),
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_ne!(recorded, legacy.to_string(), "{schema}");
    }
    assert!(
        storage::db::pending(&t.config.database)
            .await
            .unwrap()
            .is_empty()
    );
    // Any other divergence is still refused.
    owner
        .execute(
            "UPDATE user_service.refinery_schema_history SET checksum = '1' WHERE version = 2",
            &[],
        )
        .await
        .unwrap();
    let refused = storage::db::migrate(&t.config.database).await.unwrap_err();
    assert!(refused.to_string().contains("user_service"), "{refused}");
}

/// Connections of the installation's role open on the server now.
async fn backends(t: &TestDb, role: &str) -> i64 {
    t.owner()
        .await
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND datname = current_database()",
            &[&role],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_process_gives_back_the_connections_a_burst_made_it_open() {
    // Processes share the role's connection limit: one that kept every connection a burst
    // opened would starve the others (a node restarted next to it would never be ready).
    let t = TestDb::new().await;
    let role = t.config.database.app_role_name();
    let config = DatabaseConfig {
        idle_connection_ms: 600,
        ..t.config.database.clone()
    };
    let db = storage::Database::connect(&config).unwrap();
    let before = backends(&t, &role).await;
    let burst = futures_util::future::join_all((0..6).map(|_| db.client())).await;
    let burst: Vec<_> = burst.into_iter().map(Result::unwrap).collect();
    drop(burst);
    assert_eq!(db.open_connections(), 6);
    assert_eq!(backends(&t, &role).await, before + 6);

    // One request at a time afterwards keeps taking the connection returned last; the five
    // others go unused and are closed, on the server too.
    let quiet = tokio::time::Instant::now() + Duration::from_millis(2_500);
    while tokio::time::Instant::now() < quiet {
        db.client()
            .await
            .unwrap()
            .simple_query("SELECT 1")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(db.open_connections(), 1, "the one in use is kept");
    assert!(
        eventually(5, || async { backends(&t, &role).await == before + 1 }).await,
        "the server ends the closed sessions: {} against {before} + 1",
        backends(&t, &role).await
    );
}

#[tokio::test]
async fn a_pooled_connection_in_constant_use_is_replaced_once_it_has_lived_its_lifetime() {
    // The few connections a quiet process keeps using would otherwise keep, for good, the
    // buffers a burst grew in them.
    let t = TestDb::new().await;
    let config = DatabaseConfig {
        connection_lifetime_ms: 600,
        ..t.config.database.clone()
    };
    let db = storage::Database::connect(&config).unwrap();
    let backend = || async {
        let client = db.client().await.unwrap();
        let pid: i32 = client
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        pid
    };
    let first = backend().await;
    let mut seen = vec![first];
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < until && seen.len() < 3 {
        // Never idle for the pool's idle time (30 s): only its age can close it.
        let pid = backend().await;
        if seen.last() != Some(&pid) {
            seen.push(pid);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        seen.len() >= 3,
        "one connection in use all along is replaced about every 600 ms: backends {seen:?}"
    );
    assert_eq!(db.open_connections(), 1, "one at a time is all it needed");
}

#[tokio::test]
async fn a_pool_keeps_its_warm_connections_open_while_quiet() {
    // An on-sale's first second comes after a quiet spell: a pool that had closed everything
    // made its first requests wait for PostgreSQL to start a backend each.
    let t = TestDb::new().await;
    let role = t.config.database.app_role_name();
    let before = backends(&t, &role).await;
    let config = DatabaseConfig {
        warm_connections: 2,
        idle_connection_ms: 300,
        connection_lifetime_ms: 900,
        ..t.config.database.clone()
    };
    let db = storage::Database::connect(&config).unwrap();
    assert!(
        eventually(5, || async { backends(&t, &role).await == before + 2 }).await,
        "opened before anyone asked: {} against {before} + 2",
        backends(&t, &role).await
    );

    // A burst opens more; afterwards the pool goes back to its warm two, not to none.
    let burst = futures_util::future::join_all((0..6).map(|_| db.client())).await;
    let burst: Vec<_> = burst.into_iter().map(Result::unwrap).collect();
    drop(burst);
    assert_eq!(db.open_connections(), 6);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    // Past their lifetime by now, so a look may fall inside a renewal (see below).
    assert!(
        eventually(2, || async { db.open_connections() == 2 }).await,
        "the warm ones stay: {}",
        db.open_connections()
    );

    // They still live no longer than a connection's lifetime: renewed one at a time (closed,
    // then opened again in the same round), so never all closed at once.
    let pids = || async {
        let client = t.owner().await;
        let rows = client
            .query(
                "SELECT pid FROM pg_stat_activity WHERE usename = $1 AND datname = current_database()",
                &[&role],
            )
            .await
            .unwrap();
        rows.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>()
    };
    let first = pids().await;
    let mut seen: std::collections::HashSet<i32> = first.iter().copied().collect();
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(db.open_connections() >= 1, "never all closed at once");
        seen.extend(pids().await);
    }
    assert!(
        seen.len() >= first.len() + 2,
        "renewed as they reach their lifetime: {first:?}, then {seen:?}"
    );
    // A look may fall between a renewal's close and its open.
    assert!(
        eventually(2, || async { db.open_connections() == 2 }).await,
        "back to the warm two: {}",
        db.open_connections()
    );
}

#[tokio::test]
async fn a_pool_the_server_has_no_more_room_for_waits_for_a_connection_of_its_own() {
    // Processes whose pools together exceed the role's limit: a request that finds none of
    // its pool's connections idle waits for one rather than answering 503 at once.
    let t = TestDb::new().await;
    let role = t.config.database.app_role_name();
    let before = backends(&t, &role).await;
    t.owner()
        .await
        .batch_execute(&format!(
            "ALTER ROLE \"{role}\" CONNECTION LIMIT {}",
            before + 2
        ))
        .await
        .unwrap();
    let db = storage::Database::connect(&t.config.database).unwrap();
    let first = db.client().await.unwrap();
    let second = db.client().await.unwrap();
    let second_pid: i32 = second
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let third = tokio::spawn({
        let db = db.clone();
        async move {
            let c = db.client().await?;
            let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).await?.get(0);
            Ok::<_, storage::DbError>(pid)
        }
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !third.is_finished(),
        "it waits while the server has no room"
    );
    drop(second);
    let third = third.await.unwrap().expect("the connection given back");
    assert_eq!(
        third, second_pid,
        "the pool's own connection, not a new one"
    );
    assert_eq!(db.open_connections(), 2);
    assert_eq!(backends(&t, &role).await, before + 2);

    // A pool with none of its own to wait for still answers at once: 503, not a wait.
    let other = storage::Database::connect(&t.config.database).unwrap();
    let started = std::time::Instant::now();
    let refused = other.client().await.err().expect("no room for it");
    assert!(refused.is_unavailable(), "{refused}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    drop(first);
}

fn bilet() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bilet"));
    for var in [
        "DATABASE_URL",
        "JWT_SECRET",
        "SERVICE_SECRET",
        "DATABASE_APP_PASSWORD",
        "DATABASE_APP_ROLE",
        "BILET_MODE",
        "BILET_NODE",
        "BROKER_URL",
        "BILET_DATA_DIR",
        "BILET_CONFIG",
        "CLICKHOUSE_URL",
        "REDIS_URL",
        "SMTP_URL",
        "STORAGE_ENDPOINT",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn random_text(bytes: usize) -> String {
    (0..bytes)
        .map(|_| {
            let n: u8 = rand::random::<u8>() % 62;
            (match n {
                0..=9 => b'0' + n,
                10..=35 => b'a' + n - 10,
                _ => b'A' + n - 36,
            }) as char
        })
        .collect()
}

/// `[services.*]` sections putting `services` on free loopback ports, and their URLs.
fn services_on_loopback(services: &[Service]) -> (String, Vec<String>) {
    let mut sections = String::new();
    let mut urls = Vec::new();
    for service in services {
        let url = format!("http://127.0.0.1:{}", free_port());
        sections.push_str(&format!(
            "[services.{name}]\nlisten = \"{listen}\"\nurl = \"{url}\"\n",
            name = service.name(),
            listen = url.trim_start_matches("http://"),
        ));
        urls.push(url);
    }
    (sections, urls)
}

/// A production cluster.toml: one node running everything on free loopback ports.
fn production_file(url: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("bilet-prod-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (services, urls) = services_on_loopback(&Service::ALL);
    let gateway = urls[0].clone();
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        format!(
            "mode = \"production\"\ndata_dir = \"{dir}\"\n[database]\nurl = \"{url}\"\n[http]\npublic_url = \"https://tickets.example.org\"\n[smtp]\nurl = \"smtp://127.0.0.1:2525\"\n[auth]\nbcrypt_cost = 12\n{services}",
            dir = dir.display()
        ),
    )
    .unwrap();
    (file, gateway)
}

fn production(cmd: &mut Command, file: &std::path::Path) {
    cmd.args(["--config", file.to_str().unwrap()])
        .env("JWT_SECRET", random_text(48))
        .env("SERVICE_SECRET", random_text(48))
        .env("DATABASE_APP_PASSWORD", random_text(40))
        .env("RUST_LOG", "error");
}

/// Waits for `child` to end within `seconds`; answers its exit and stderr, or kills it.
fn finishes(mut child: Child, seconds: u64) -> Option<(bool, String)> {
    let deadline = std::time::Instant::now() + Duration::from_secs(seconds);
    while std::time::Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut stderr) = child.stderr.take() {
                use std::io::Read;
                let _ = stderr.read_to_string(&mut err);
            }
            return Some((status.success(), err));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

async fn becomes_ready(gateway: &str) -> bool {
    let url = format!("{gateway}/health/ready");
    eventually(90, || async {
        reqwest::get(&url)
            .await
            .is_ok_and(|r| r.status().is_success())
    })
    .await
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn production_serve_migrates_only_when_told_to() {
    // A database that exists and was never migrated.
    let url = fresh_url();
    let name = url.rsplit('/').next().unwrap().to_string();
    server()
        .await
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let (file, gateway) = production_file(&url);
    let mut serve = bilet();
    production(&mut serve, &file);
    let child = serve
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (ok, err) = finishes(child, 60).expect("serve refuses at once instead of starting");
    assert!(!ok);
    assert!(
        err.contains("the database is not at the latest migration")
            && err.contains("run `bilet migrate` first, or start with `bilet serve --migrate`"),
        "{err}"
    );
    let tables: i64 = {
        let (client, conn) = tokio_postgres::connect(&url, NoTls).await.unwrap();
        tokio::spawn(conn);
        client
            .query_one(
                "SELECT count(*) FROM pg_tables WHERE schemaname LIKE '%\\_service'",
                &[],
            )
            .await
            .unwrap()
            .get(0)
    };
    assert_eq!(tables, 0, "nothing was migrated");

    let mut migrate = bilet();
    production(&mut migrate, &file);
    let out = migrate.arg("migrate").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains(&format!("services connect as the role bilet_app_{name}")),
        "{said}"
    );

    let mut serve = bilet();
    production(&mut serve, &file);
    let child = Killed(
        serve
            .arg("serve")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(becomes_ready(&gateway).await, "a migrated database serves");
    drop(child);

    // `--migrate` on a new database: migrates and serves.
    let url = fresh_url();
    let (file, gateway) = production_file(&url);
    let mut serve = bilet();
    production(&mut serve, &file);
    let _child = Killed(
        serve
            .args(["serve", "--migrate"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(becomes_ready(&gateway).await, "serve --migrate migrates");
}

/// A node of the test database running only identity, with `secret`.
async fn identity_node(t: &TestDb, name: &str, secret: &str) -> bilet::node::Node {
    let mut config = test_config();
    config.database = t.config.database.clone();
    config.node = name.into();
    config.nodes = vec![domain::config::NodeConfig {
        name: name.into(),
        services: vec![Service::Identity],
        addresses: Default::default(),
    }];
    config.auth.service_secret = Some(Secret::new(secret));
    bilet::node::start(config).await.unwrap()
}

async fn readiness(node: &bilet::node::Node) -> crate::support::Reply {
    get(
        &format!("http://{}/health/ready", node.addrs[&Service::Identity]),
        None,
    )
    .await
}

#[tokio::test]
async fn readiness_says_down_when_peers_hold_another_service_secret() {
    let t = TestDb::new().await;
    let right = crate::support::SERVICE_SECRET;
    let wrong = "another-service-secret-another-service";
    let a = identity_node(&t, "first", right).await;
    let alone = readiness(&a).await;
    assert_eq!(alone.status, 200, "{}", alone.body);
    assert_eq!(alone.body["checks"]["peers"], "UP");
    assert!(alone.body.get("reasons").is_none(), "{}", alone.body);

    // Two processes that disagree: neither can tell which secret is right, both are DOWN.
    let b = identity_node(&t, "odd", wrong).await;
    for (node, other) in [(&a, "odd (identity)"), (&b, "first (identity)")] {
        let ready = readiness(node).await;
        assert_eq!(ready.status, 503, "{}", ready.body);
        assert_eq!(ready.body["status"], "DOWN");
        assert_eq!(ready.body["checks"]["peers"], "DOWN");
        assert_eq!(ready.body["checks"]["database"], "UP");
        let why = ready.body["reasons"]["peers"].as_str().unwrap_or_default();
        assert!(
            why.contains("SERVICE_SECRET differs from that of 1 of the 1 other live processes")
                && why.contains(other),
            "{why}"
        );
        assert!(!why.contains(right) && !why.contains(wrong), "{why}");
    }
    // The fingerprints in the database show neither secret.
    let stored: Vec<String> = t
        .owner()
        .await
        .query("SELECT fingerprint FROM platform.peers", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(stored.len(), 2);
    assert!(
        stored
            .iter()
            .all(|f| !f.contains(right) && !f.contains(wrong))
    );

    // A third process with the right secret: the odd one out stays DOWN, the others are UP.
    let c = identity_node(&t, "third", right).await;
    assert_eq!(readiness(&a).await.status, 200);
    assert_eq!(readiness(&c).await.status, 200);
    let odd = readiness(&b).await;
    assert_eq!(odd.status, 503);
    let why = odd.body["reasons"]["peers"].as_str().unwrap_or_default();
    assert!(why.contains("2 of the 2"), "{why}");

    // A process that stops leaves at once.
    b.stop().await;
    let left: i64 = t
        .owner()
        .await
        .query_one("SELECT count(*) FROM platform.peers", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 2);
    a.stop().await;
    c.stop().await;
}

/// The cluster file of a gateway process and an identity process.
fn two_process_file(t: &TestDb) -> (std::path::PathBuf, String, String) {
    let dir = std::env::temp_dir().join(format!("bilet-peers-{}", uuid::Uuid::now_v7().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let (services, urls) = services_on_loopback(&[Service::Gateway, Service::Identity]);
    let file = dir.join("cluster.toml");
    std::fs::write(
        &file,
        format!(
            "data_dir = \"{dir}\"\n[database]\nurl = \"{url}\"\n[auth]\njwt_secret = \"test-secret-test-secret-test-secret\"\nservice_secret = \"{secret}\"\nbcrypt_cost = 4\n{services}[[nodes]]\nname = \"gateway\"\nservices = [\"gateway\"]\n[[nodes]]\nname = \"identity\"\nservices = [\"identity\"]\n",
            dir = dir.display(),
            url = t.url,
            secret = crate::support::SERVICE_SECRET,
        ),
    )
    .unwrap();
    (file, urls[0].clone(), urls[1].clone())
}

fn spawn(
    file: &std::path::Path,
    node: &str,
    secret: Option<&str>,
    log: &std::path::Path,
) -> Killed {
    let mut cmd = bilet();
    cmd.args(["--config", file.to_str().unwrap(), "serve"])
        .env("BILET_NODE", node)
        .env("RUST_LOG", "warn")
        .stdout(std::fs::File::create(log).unwrap())
        .stderr(Stdio::null());
    if let Some(secret) = secret {
        cmd.env("SERVICE_SECRET", secret);
    }
    Killed(cmd.spawn().unwrap())
}

async fn answers(url: &str) -> bool {
    eventually(90, || async { reqwest::get(url).await.is_ok() }).await
}

#[tokio::test]
async fn a_process_with_another_secret_is_not_ready_and_says_why() {
    let t = TestDb::new().await;
    let (file, gateway, identity) = two_process_file(&t);
    let logs = file.parent().unwrap().to_path_buf();
    let _gateway = spawn(&file, "gateway", None, &logs.join("gateway.log"));
    let odd = spawn(
        &file,
        "identity",
        Some("another-service-secret-another-service"),
        &logs.join("identity.log"),
    );
    assert!(answers(&format!("{gateway}/health/live")).await);
    assert!(answers(&format!("{identity}/health/live")).await);

    for base in [&gateway, &identity] {
        let url = format!("{base}/health/ready");
        let down = eventually(30, || async {
            get(&url, None).await.body["checks"]["peers"] == "DOWN"
        })
        .await;
        assert!(down, "{base} says DOWN");
        let ready = get(&url, None).await;
        assert_eq!(ready.status, 503);
        assert!(
            ready.body["reasons"]["peers"]
                .as_str()
                .unwrap_or_default()
                .contains("SERVICE_SECRET differs"),
            "{}",
            ready.body
        );
    }

    // Every call through the gateway is refused by identity, which says why in its log.
    let login = serde_json::json!({"email": "nobody@example.com", "password": "whatever-1"});
    let refused = crate::support::send(
        reqwest::Client::new()
            .post(format!("{gateway}/api/v1/auth/login"))
            .json(&login),
    )
    .await;
    assert_eq!(refused.status, 401, "{}", refused.body);
    assert_eq!(
        refused.body["details"]["reason"],
        "service assertion does not match the request"
    );
    let logged = eventually(10, || async {
        std::fs::read_to_string(logs.join("identity.log"))
            .is_ok_and(|l| l.contains("request signed with another secret refused"))
    })
    .await;
    let log = std::fs::read_to_string(logs.join("identity.log")).unwrap_or_default();
    assert!(logged, "{log}");
    assert!(!log.contains("unsigned request refused"), "{log}");

    // Given the same secret again, both are ready and the call reaches identity's own answer.
    drop(odd);
    let _identity = spawn(&file, "identity", None, &logs.join("identity-2.log"));
    // The new process listens only once it has started; until then its port refuses.
    assert!(answers(&format!("{identity}/health/live")).await);
    for base in [&gateway, &identity] {
        let url = format!("{base}/health/ready");
        let up = eventually(60, || async { get(&url, None).await.status == 200 }).await;
        assert!(up, "{base} is ready: {}", get(&url, None).await.body);
    }
    let answered = crate::support::send(
        reqwest::Client::new()
            .post(format!("{gateway}/api/v1/auth/login"))
            .json(&login),
    )
    .await;
    assert!(
        answered.body["details"]["reason"].is_null(),
        "{}",
        answered.body
    );
    assert_ne!(answered.body["code"], "unauthorized", "{}", answered.body);
}

/// The outbox as every schema had it before it was partitioned by day (V1 of then).
const OUTBOX_BEFORE_DAYS: &str = "
CREATE TABLE upgrading.outbox (
    seq          BIGSERIAL PRIMARY KEY,
    id           UUID NOT NULL UNIQUE,
    event_type   TEXT NOT NULL,
    tenant_id    UUID,
    actor_id     UUID,
    occurred_at  TIMESTAMPTZ NOT NULL,
    data         JSONB NOT NULL,
    published_at TIMESTAMPTZ
);
CREATE INDEX outbox_pending ON upgrading.outbox (seq) WHERE published_at IS NULL;";

#[tokio::test]
async fn an_outbox_written_before_the_days_keeps_its_events_their_order_and_what_is_unpublished() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    owner
        .batch_execute(&format!("CREATE SCHEMA upgrading; {OUTBOX_BEFORE_DAYS}"))
        .await
        .unwrap();
    // Published three days ago; waiting for the relay; an id that is no v7 of now (far ahead).
    owner
        .batch_execute(
            "INSERT INTO upgrading.outbox (id, event_type, occurred_at, data, published_at) VALUES
               ((lpad(to_hex((extract(epoch FROM now() - interval '3 days') * 1000)::bigint), 12, '0')
                 || '70008000000000000001')::uuid, 'old', now(), '{}', now()),
               ((lpad(to_hex((extract(epoch FROM now()) * 1000)::bigint), 12, '0')
                 || '70008000000000000002')::uuid, 'waiting', now(), '{}', NULL),
               ('f185f000-0000-4000-8000-000000000003', 'stray', now(), '{}', now());",
        )
        .await
        .unwrap();
    owner
        .batch_execute(&format!(
            "BEGIN; {} COMMIT;",
            storage::db::outbox_by_day_sql("upgrading")
        ))
        .await
        .unwrap();

    let rows: Vec<(i64, String, String)> = owner
        .query(
            "SELECT seq, event_type, tableoid::regclass::text FROM upgrading.outbox ORDER BY seq",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        rows,
        vec![
            (1, "old".into(), "upgrading.outbox_before_days".into()),
            (2, "waiting".into(), "upgrading.outbox_before_days".into()),
            (3, "stray".into(), "upgrading.outbox_default".into()),
        ]
    );
    // The relay's read finds what waits, and the numbering goes on where it was.
    let waiting: Vec<String> = column(
        &owner,
        "SELECT event_type FROM upgrading.outbox WHERE published_at IS NULL ORDER BY seq LIMIT 200",
    )
    .await;
    assert_eq!(waiting, vec!["waiting".to_string()]);
    let next: i64 = owner
        .query_one(
            "INSERT INTO upgrading.outbox (id, event_type, occurred_at, data)
             VALUES (gen_random_uuid(), 'new', now(), '{}') RETURNING seq",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(next, 4);
    // Today stays in the table from before (it covers up to tomorrow); the days after it
    // have tables of their own.
    let days: Vec<String> = column(
        &owner,
        "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
          WHERE i.inhparent = 'upgrading.outbox'::regclass ORDER BY 1",
    )
    .await;
    assert_eq!(days.len(), 4, "{days:?}");
    assert_eq!(&days[2..], ["outbox_before_days", "outbox_default"]);
    assert!(
        days[..2].iter().all(|d| d.starts_with("outbox_20")),
        "{days:?}"
    );
}
