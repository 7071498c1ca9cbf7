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
        "BILET_NODE",
        "RUST_LOG",
        "PUBLIC_URL",
        "MESSENGER_BOT_TOKEN",
        "PAYMENTS_WEBHOOK_SECRET",
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

/// Writes `text` as `dir/name` (creating `dir`) and answers its path.
fn config_file(dir: &str, name: &str, text: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = std::path::Path::new(dir).join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
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

/// Secrets production accepts: long, random-looking, each its own.
const STRONG_JWT: &str = "Kq3v9XzP2mLw8RtY5nBc7HdJ4fGs6AeU";
const STRONG_SERVICE: &str = "r7Tn2Wq9Lk4Vx8Zp3Mc6Hb5Jd1Fg0Sy-";
const APP_PASSWORD: &str = "p4Rk8Vw2Nz6Qt9Lx";

#[test]
fn production_without_a_jwt_secret_refuses_to_start() {
    let data = temp_dir();
    let out = bilet(
        &["config", "--check"],
        &[("BILET_MODE", "production"), ("BILET_DATA_DIR", &data)],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    for reason in [
        "JWT_SECRET is not set: production needs an explicit token-signing secret",
        "DATABASE_APP_PASSWORD is not set",
        "http.public_url (PUBLIC_URL) is `http://localhost:8080`, a loopback address",
    ] {
        assert!(stderr.contains(reason), "{reason} missing from:\n{stderr}");
    }
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    assert!(!std::path::Path::new(&data).exists(), "nothing written");
    // `migrate` (any command that runs) refuses the same way.
    let out = bilet(
        &["migrate"],
        &[("BILET_MODE", "production"), ("BILET_DATA_DIR", &data)],
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("JWT_SECRET is not set"));
}

#[test]
fn production_config_prints_before_the_secrets_exist_marking_them_missing() {
    let data = temp_dir();
    let out = bilet(
        &["config"],
        &[
            ("BILET_MODE", "production"),
            ("BILET_DATA_DIR", &data),
            ("SERVICE_SECRET", STRONG_SERVICE),
            ("MESSENGER_BOT_TOKEN", ""),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    for line in [
        "# mode: production",
        "#   MISSING: JWT_SECRET (auth.jwt_secret) is not set",
        "#   SERVICE_SECRET (auth.service_secret): set",
        "#   MISSING: MESSENGER_BOT_TOKEN (messenger.bot_token) is set but empty: the messenger bot is off",
        "# production refuses to start:",
        "#   - JWT_SECRET is not set",
        "[services.gateway]",
    ] {
        assert!(printed.contains(line), "{line} missing from:\n{printed}");
    }
    assert!(!printed.contains(STRONG_SERVICE), "masked:\n{printed}");
    assert!(!std::path::Path::new(&data).exists(), "nothing written");
}

#[test]
fn production_refuses_weak_secrets_a_passwordless_role_and_unsigned_open_services() {
    let dir = temp_dir();
    let exposed = config_file(
        &dir,
        "exposed.toml",
        "mode = \"production\"\nnode = \"id\"\n[services.identity]\nlisten = \"0.0.0.0:8081\"\nurl = \"http://10.0.0.2:8081\"\n[[nodes]]\nname = \"id\"\nservices = [\"identity\"]\n",
    );
    let public = ("PUBLIC_URL", "https://tickets.example.org");
    let repeated = "a".repeat(32);
    // (arguments, environment, the refusal expected or None for a start)
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, Option<&'a str>);
    let cases: Vec<Case> = vec![
        (
            vec!["config", "--check"],
            vec![
                ("BILET_MODE", "production"),
                ("JWT_SECRET", "short-secret"),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                public,
            ],
            Some("JWT_SECRET must be at least 32 bytes"),
        ),
        (
            vec!["config", "--check"],
            vec![
                ("BILET_MODE", "production"),
                ("JWT_SECRET", &repeated),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                public,
            ],
            Some("JWT_SECRET repeats one pattern"),
        ),
        (
            vec!["config", "--check"],
            vec![
                ("BILET_MODE", "production"),
                ("JWT_SECRET", STRONG_JWT),
                public,
            ],
            Some("DATABASE_APP_PASSWORD"),
        ),
        (
            vec!["config", "--check"],
            vec![
                ("BILET_MODE", "production"),
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", "x"),
                public,
            ],
            Some("DATABASE_APP_PASSWORD must be at least 16 bytes"),
        ),
        (
            vec!["--config", &exposed, "config", "--check"],
            vec![
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                public,
            ],
            Some("no SERVICE_SECRET"),
        ),
        (
            vec!["--config", &exposed, "config", "--check"],
            vec![
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                ("SERVICE_SECRET", "tiny"),
                public,
            ],
            Some("SERVICE_SECRET must be at least 32 bytes"),
        ),
        (
            vec!["--config", &exposed, "config", "--check"],
            vec![
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                ("SERVICE_SECRET", STRONG_JWT),
                public,
            ],
            Some("JWT_SECRET and SERVICE_SECRET are identical"),
        ),
        (
            vec!["--config", &exposed, "config", "--check"],
            vec![
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                ("SERVICE_SECRET", STRONG_SERVICE),
                ("PAYMENTS_WEBHOOK_SECRET", "whsec-short"),
                public,
            ],
            Some("PAYMENTS_WEBHOOK_SECRET must be at least 32 bytes"),
        ),
        (
            vec!["--config", &exposed, "config", "--check"],
            vec![
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                ("SERVICE_SECRET", STRONG_SERVICE),
                ("BILET__AUTH__BCRYPT_COST", "10"),
                public,
            ],
            Some("auth.bcrypt_cost (BILET__AUTH__BCRYPT_COST) is 10, below 12"),
        ),
        (
            vec!["--config", &exposed, "config", "--check"],
            vec![
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                ("SERVICE_SECRET", STRONG_SERVICE),
            ],
            Some("http.public_url (PUBLIC_URL) is `http://localhost:8080`"),
        ),
        (
            vec!["--config", &exposed, "config", "--check"],
            vec![
                ("JWT_SECRET", STRONG_JWT),
                ("DATABASE_APP_PASSWORD", APP_PASSWORD),
                ("SERVICE_SECRET", STRONG_SERVICE),
                public,
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
            None => {
                assert!(out.status.success(), "{}", text(&out.stderr));
                assert!(
                    text(&out.stdout).starts_with(
                        "configuration accepted: production mode, node `id` runs identity"
                    ),
                    "{}",
                    text(&out.stdout)
                );
            }
        }
    }
}

/// The documented multi-process file has no `node` line: every command that loads it says
/// which setting picks the node and which nodes the file describes.
#[test]
fn every_command_names_bilet_node_and_the_described_nodes() {
    let dir = temp_dir();
    let file = config_file(
        &dir,
        "cluster.toml",
        "[services.gateway]\nlisten = \"0.0.0.0:8080\"\nurl = \"http://gateway:8080\"\n[services.identity]\nlisten = \"0.0.0.0:8081\"\nurl = \"http://identity:8081\"\n[[nodes]]\nname = \"gateway\"\nservices = [\"gateway\"]\n[[nodes]]\nname = \"identity\"\nservices = [\"identity\"]\n",
    );
    let commands: [&[&str]; 8] = [
        &["serve"],
        &["migrate"],
        &["admin", "grant", "a@example.com"],
        &["config"],
        &["config", "--check"],
        &["cluster", "status"],
        &["dlq", "list", "events"],
        &["dlq", "replay", "events"],
    ];
    for command in commands {
        let mut args = vec!["--config", file.as_str()];
        args.extend_from_slice(command);
        let out = bilet(&args, &[("BILET_DATA_DIR", &dir)]);
        assert!(!out.status.success(), "{command:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("node `default` is not described")
                && stderr.contains("BILET_NODE=<name>")
                && stderr.contains("the file describes: gateway, identity"),
            "{command:?}: {stderr}"
        );
    }
    // With the node named the same file loads.
    let out = bilet(
        &["--config", &file, "config", "--check"],
        &[("BILET_DATA_DIR", &dir), ("BILET_NODE", "identity")],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("node `identity` runs identity"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn dlq_of_an_unknown_consumer_lists_the_consumers() {
    let data = temp_dir();
    // RabbitMQ at an address nobody listens on: the broker is never asked.
    for broker in ["memory", "amqp://guest:guest@127.0.0.1:9/%2f"] {
        for action in ["list", "replay"] {
            let out = bilet(
                &["dlq", action, "nosuch"],
                &[("BILET_DATA_DIR", &data), ("BROKER_URL", broker)],
            );
            assert!(!out.status.success(), "{broker} {action}");
            let stderr = text(&out.stderr);
            assert!(
                stderr.contains(
                    "no consumer is named `nosuch`; the consumers are: identity-mail, events, payments, media, analytics, notifications"
                ),
                "{broker} {action}: {stderr}"
            );
        }
    }
}

#[test]
fn serve_warns_when_no_mode_is_given_and_names_the_secrets_it_goes_without() {
    let data = temp_dir();
    // A cluster.toml that does not say `mode` (the repository's own says development).
    let file = config_file(&data, "cluster.toml", "[database]\npool_size = 4\n");
    // Nothing listens on port 9: the node stops after its warnings, at the migration.
    let env = [
        ("BILET_DATA_DIR", data.as_str()),
        ("BILET_CONFIG", file.as_str()),
        ("DATABASE_URL", "postgres://postgres@127.0.0.1:9/bilet"),
        ("MESSENGER_BOT_TOKEN", ""),
    ];
    let out = bilet(&["serve"], &env);
    assert!(!out.status.success());
    let logged = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        logged.contains("no mode given (neither BILET_MODE nor `mode` in cluster.toml): running in development mode"),
        "{logged}"
    );
    assert!(logged.contains("set BILET_MODE=production"), "{logged}");
    assert!(
        logged.contains(
            "MESSENGER_BOT_TOKEN (messenger.bot_token) is set but empty: the messenger bot is off"
        ),
        "{logged}"
    );
    assert!(
        logged.contains("PAYMENTS_WEBHOOK_SECRET (payments.webhook_secret) is not set: the payments webhook is off"),
        "{logged}"
    );
    let mut chosen = env.to_vec();
    chosen.push(("BILET_MODE", "development"));
    let out = bilet(&["serve"], &chosen);
    let logged = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!logged.contains("no mode given"), "{logged}");
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
    // Printing generates no secret: `bilet serve` does (src/settings.rs tests that).
    for file in ["service_secret", "jwt_secret"] {
        assert!(!std::path::Path::new(&dir).join(file).exists(), "{file}");
    }
}

#[test]
fn config_in_development_writes_no_secret_and_says_where_serve_keeps_them() {
    let data = temp_dir();
    for args in [&["config"][..], &["config", "--check"][..]] {
        let out = bilet(args, &[("BILET_DATA_DIR", &data)]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            !text(&out.stderr).contains("generated"),
            "{}",
            text(&out.stderr)
        );
        assert!(
            !std::path::Path::new(&data).exists(),
            "{args:?} wrote into the data directory"
        );
    }
    let out = bilet(&["config"], &[("BILET_DATA_DIR", &data)]);
    let printed = text(&out.stdout);
    assert!(
        printed.contains(&format!(
            "#   JWT_SECRET (auth.jwt_secret) is not set: `bilet serve` generates one into {data}/jwt_secret"
        )),
        "{printed}"
    );
    let out = bilet(&["config", "--check"], &[("BILET_DATA_DIR", &data)]);
    assert!(
        text(&out.stdout).starts_with("configuration accepted: development mode, node `default`"),
        "{}",
        text(&out.stdout)
    );
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

    // Blocking ends the account's access (its version rises) until it is unblocked.
    let block = |verb: &str| {
        run(vec![
            "admin".into(),
            verb.into(),
            "alice@example.com".into(),
        ])
    };
    let out = block("block").await.unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("account blocked: alice@example.com"),
        "{}",
        text(&out.stdout)
    );
    let row = owner
        .query_one(
            "SELECT blocked_at IS NOT NULL, access_version FROM user_service.users WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0));
    assert_eq!(row.get::<_, i64>(1), 1);
    let out = block("block").await.unwrap();
    assert!(text(&out.stdout).contains("was already blocked"));
    let out = block("unblock").await.unwrap();
    assert!(text(&out.stdout).contains("account unblocked"));
    let blocked: bool = owner
        .query_one(
            "SELECT blocked_at IS NOT NULL FROM user_service.users WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!blocked);

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
    // The tool takes only the name of a consumer a node runs; this database is the test's own.
    let handler = crate::broker::FailsThen::named("events", usize::MAX);
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
    storage::cluster::heartbeat(&t.db, "events-a-1", "http://10.0.0.1:8082", "f", None)
        .await
        .unwrap();
    storage::cluster::heartbeat(&t.db, "events-b-1", "http://10.0.0.2:8082", "f", None)
        .await
        .unwrap();
    // A third started later with other secrets: listed, marked, owning nothing.
    storage::cluster::heartbeat(&t.db, "events-c-1", "http://10.0.0.3:8082", "other", None)
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
    assert!(stdout.contains("members (3 live)"), "{stdout}");
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
        line("events-c-1").contains("OTHER SECRETS") && line("events-c-1").contains("shards   0"),
        "{stdout}"
    );
    assert!(!line("events-a-1").contains("OTHER"), "{stdout}");
    assert!(
        stdout.contains("shards: 200 of 256 owned, 56 without owner (200-255)"),
        "{stdout}"
    );
}
