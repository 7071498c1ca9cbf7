//! The `bilet` command line: configuration printing and secret handling, administrator
//! grants, and the dead-letter tool on the in-process broker.

use crate::support::TestDb;
use std::process::{Command, Output};

fn bilet(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_bilet"));
    cmd.args(args);
    for var in [
        "DATABASE_URL",
        "JWT_SECRET",
        "SERVICE_SECRET",
        "DATABASE_APP_PASSWORD",
        "BILET_MODE",
        "BROKER_URL",
        "BILET_DATA_DIR",
        "BILET_CONFIG",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("bilet runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn temp_dir() -> String {
    std::env::temp_dir()
        .join(format!("bilet-cli-{}", uuid::Uuid::now_v7().simple()))
        .display()
        .to_string()
}

#[test]
fn config_prints_effective_settings_with_secrets_masked() {
    let data = temp_dir();
    let out = bilet(
        &["config"],
        &[
            ("BILET_DATA_DIR", &data),
            ("JWT_SECRET", "jwt-very-secret"),
            (
                "DATABASE_URL",
                "postgres://owner:pg-password@db.example:5432/bilet",
            ),
            ("STORAGE_SECRET_KEY", "s3-secret"),
            ("MESSENGER_BOT_TOKEN", "123:bot-token"),
            ("BILET__BROKER__MAX_ATTEMPTS", "7"),
            ("SERVICE_SECRET", "service-very-secret"),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    for secret in [
        "jwt-very-secret",
        "pg-password",
        "s3-secret",
        "bot-token",
        "service-very-secret",
    ] {
        assert!(!printed.contains(secret), "{secret} leaked:\n{printed}");
    }
    assert!(printed.contains("postgres://owner:****@db.example:5432/bilet"));
    assert!(printed.contains("max_attempts = 7"));
    assert!(printed.contains("[services.gateway]"));
}

#[test]
fn production_without_a_jwt_secret_refuses_to_start() {
    let out = bilet(
        &["config"],
        &[
            ("BILET_MODE", "production"),
            ("BILET_DATA_DIR", &temp_dir()),
        ],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("JWT_SECRET"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn production_refuses_weak_secrets_a_passwordless_role_and_unsigned_open_services() {
    let dir = temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let exposed = std::path::Path::new(&dir).join("exposed.toml");
    std::fs::write(
        &exposed,
        "mode = \"production\"\nnode = \"id\"\n[services.identity]\nlisten = \"0.0.0.0:8081\"\nurl = \"http://10.0.0.2:8081\"\n[[nodes]]\nname = \"id\"\nservices = [\"identity\"]\n",
    )
    .unwrap();
    let exposed = exposed.display().to_string();
    let strong = "0123456789abcdef0123456789abcdef";
    // (arguments, environment, the refusal expected or None for a start)
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, Option<&'a str>);
    let cases: Vec<Case> = vec![
        (
            vec!["config"],
            vec![
                ("BILET_MODE", "production"),
                ("JWT_SECRET", "short-secret"),
                ("DATABASE_APP_PASSWORD", "pw"),
            ],
            Some("JWT_SECRET must be at least 32 bytes"),
        ),
        (
            vec!["config"],
            vec![("BILET_MODE", "production"), ("JWT_SECRET", strong)],
            Some("DATABASE_APP_PASSWORD"),
        ),
        (
            vec!["--config", &exposed, "config"],
            vec![("JWT_SECRET", strong), ("DATABASE_APP_PASSWORD", "pw")],
            Some("no SERVICE_SECRET"),
        ),
        (
            vec!["--config", &exposed, "config"],
            vec![
                ("JWT_SECRET", strong),
                ("DATABASE_APP_PASSWORD", "pw"),
                ("SERVICE_SECRET", "tiny"),
            ],
            Some("SERVICE_SECRET must be at least 32 bytes"),
        ),
        (
            vec!["--config", &exposed, "config"],
            vec![
                ("JWT_SECRET", strong),
                ("DATABASE_APP_PASSWORD", "pw"),
                ("SERVICE_SECRET", strong),
            ],
            None,
        ),
    ];
    for (args, mut env, refusal) in cases {
        env.push(("BILET_DATA_DIR", &dir));
        let out = bilet(&args, &env);
        match refusal {
            Some(why) => {
                assert!(!out.status.success(), "{args:?} {env:?} started");
                assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));
            }
            None => assert!(out.status.success(), "{}", text(&out.stderr)),
        }
    }
}

#[test]
fn without_cluster_toml_every_service_listens_on_loopback() {
    let dir = temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bilet"))
        .arg("config")
        .current_dir(&dir)
        .env("BILET_DATA_DIR", &dir)
        .env_remove("BILET_MODE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    let listens: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("listen = "))
        .collect();
    assert_eq!(listens.len(), 6, "{printed}");
    assert!(
        listens.iter().all(|l| l.contains("\"127.0.0.1:")),
        "{listens:?}"
    );
    // A service secret was generated for this data directory, like the JWT secret.
    let secret =
        std::fs::read_to_string(std::path::Path::new(&dir).join("service_secret")).unwrap();
    assert!(secret.len() >= 32);
}

#[test]
fn development_generates_the_secret_once_and_keeps_it() {
    let data = temp_dir();
    let first = bilet(&["config"], &[("BILET_DATA_DIR", &data)]);
    assert!(first.status.success());
    assert!(text(&first.stderr).contains("generated"));
    let file = std::path::Path::new(&data).join("jwt_secret");
    let secret = std::fs::read_to_string(&file).unwrap();
    assert!(secret.len() >= 32);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let second = bilet(&["config"], &[("BILET_DATA_DIR", &data)]);
    assert!(!text(&second.stderr).contains("generated"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), secret);
}

#[tokio::test]
async fn admin_grant_and_revoke_by_email() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    let id = uuid::Uuid::now_v7();
    owner
        .execute(
            "INSERT INTO user_service.users (id, email) VALUES ($1, 'alice@example.com')",
            &[&id],
        )
        .await
        .unwrap();
    let env = [
        ("DATABASE_URL", t.url.as_str()),
        ("JWT_SECRET", "x"),
        ("BILET_DATA_DIR", "/tmp"),
    ];
    let run = |args: Vec<String>| {
        let env = env.map(|(k, v)| (k, v.to_string()));
        tokio::task::spawn_blocking(move || {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            bilet(&args, &env)
        })
    };
    async fn admins(owner: &tokio_postgres::Client, id: uuid::Uuid) -> i64 {
        owner
            .query_one(
                "SELECT count(*) FROM user_service.platform_admins WHERE user_id = $1",
                &[&id],
            )
            .await
            .unwrap()
            .get(0)
    }

    let out = run(vec![
        "admin".into(),
        "grant".into(),
        "Alice@Example.com".into(),
    ])
    .await
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("granted"));
    assert_eq!(admins(&owner, id).await, 1);

    let out = run(vec![
        "admin".into(),
        "grant".into(),
        "alice@example.com".into(),
    ])
    .await
    .unwrap();
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("nothing to do"));

    let out = run(vec![
        "admin".into(),
        "revoke".into(),
        "alice@example.com".into(),
    ])
    .await
    .unwrap();
    assert!(out.status.success());
    assert_eq!(admins(&owner, id).await, 0);

    let out = run(vec![
        "admin".into(),
        "grant".into(),
        "nobody@example.com".into(),
    ])
    .await
    .unwrap();
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no active user"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn dlq_lists_and_replays_the_in_process_dead_letters() {
    use storage::broker::{Broker, MemoryBroker};
    let t = TestDb::new().await;
    let bus = MemoryBroker::durable(crate::outbox::POLICY, t.db.clone())
        .await
        .unwrap();
    let handler = crate::broker::FailsThen::new(usize::MAX);
    bus.subscribe(handler.subscription()).await.unwrap();
    let event = domain::envelope::Envelope::new("retry.cli", None, None, serde_json::json!({}));
    bus.publish(std::slice::from_ref(&event)).await.unwrap();
    assert!(
        crate::support::eventually(10, || async {
            bus.dead_letters(None).await.unwrap().len() == 1
        })
        .await
    );
    // The default configuration: the in-process broker.
    let data = temp_dir();
    let run = |action: &'static str| {
        let (url, consumer, data) = (t.url.clone(), handler.consumer.clone(), data.clone());
        tokio::task::spawn_blocking(move || {
            bilet(
                &["dlq", action, &consumer],
                &[
                    ("DATABASE_URL", &url),
                    ("JWT_SECRET", "x"),
                    ("BILET_DATA_DIR", &data),
                ],
            )
        })
    };

    let out = run("list").await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    assert!(printed.contains(&event.id.to_string()), "{printed}");
    assert!(printed.contains("\"attempts\":3"), "{printed}");
    assert!(printed.contains("downstream refused"), "{printed}");
    assert!(text(&out.stderr).contains("1 dead letter(s)"));

    handler
        .failures
        .store(0, std::sync::atomic::Ordering::SeqCst);
    let out = run("replay").await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("replayed 1 message(s)"));
    assert!(
        crate::support::eventually(10, || async { handler.handled() == vec![event.id] }).await,
        "the running bus took the replayed letter up"
    );
    let out = run("list").await.unwrap();
    assert!(text(&out.stderr).contains("0 dead letter(s)"));
}

#[tokio::test]
async fn cluster_status_lists_members_and_the_shards_each_owns() {
    use domain::cluster::ShardId;
    use std::time::Duration;
    let t = TestDb::new().await;
    let ttl = Duration::from_secs(30);
    storage::cluster::heartbeat(&t.db, "events-a-1", "http://10.0.0.1:8082")
        .await
        .unwrap();
    storage::cluster::heartbeat(&t.db, "events-b-1", "http://10.0.0.2:8082")
        .await
        .unwrap();
    let a: Vec<ShardId> = (0..=99).map(ShardId).collect();
    let b: Vec<ShardId> = (100..=199).map(ShardId).collect();
    storage::cluster::claim(&t.db, "events-a-1", &a, ttl)
        .await
        .unwrap();
    storage::cluster::claim(&t.db, "events-b-1", &b, ttl)
        .await
        .unwrap();
    let url = t.url.clone();
    let out = tokio::task::spawn_blocking(move || {
        bilet(
            &["cluster", "status"],
            &[
                ("DATABASE_URL", &url),
                ("JWT_SECRET", "x"),
                ("BILET_DATA_DIR", "/tmp"),
            ],
        )
    })
    .await
    .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("members (2 live)"), "{stdout}");
    let line = |node: &str| {
        stdout
            .lines()
            .find(|l| l.contains(node))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("events-a-1").contains("http://10.0.0.1:8082")
            && line("events-a-1").contains("shards 100  0-99"),
        "{stdout}"
    );
    assert!(line("events-b-1").contains("100-199"), "{stdout}");
    assert!(
        stdout.contains("shards: 200 of 256 owned, 56 without owner (200-255)"),
        "{stdout}"
    );
}
