//! bilet as separate processes: one `bilet serve` per service, all from one cluster.toml, on
//! RabbitMQ (an exchange of their own), ClickHouse (a database of their own), the S3 server
//! and a fake Bot API. A process can be killed with SIGKILL and started again.

use crate::fake_telegram::FakeTelegram;
use crate::support::{TestDb, eventually};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// The services, each in its own process.
pub const SERVICES: [&str; 6] = [
    "gateway",
    "identity",
    "events",
    "notifications",
    "media",
    "analytics",
];

/// A running cluster.
pub struct Cluster {
    file: PathBuf,
    /// Each service's address.
    pub urls: BTreeMap<&'static str, String>,
    processes: BTreeMap<&'static str, Child>,
    /// The RabbitMQ exchange its events go through.
    pub exchange: String,
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} (make test sets it)"))
}

impl Cluster {
    /// Writes the cluster's configuration and starts every process.
    pub async fn start(t: &TestDb, telegram: &FakeTelegram) -> Cluster {
        let dir =
            std::env::temp_dir().join(format!("bilet-cluster-{}", uuid::Uuid::now_v7().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let exchange = format!("bilet.test-{}", uuid::Uuid::now_v7().simple());
        let clickhouse =
            std::env::var("CLICKHOUSE_URL").unwrap_or_else(|_| "http://127.0.0.1:8123".into());
        let mut urls = BTreeMap::new();
        let mut services = String::new();
        let mut nodes = String::new();
        for name in SERVICES {
            let port = crate::support::free_port();
            let url = format!("http://127.0.0.1:{port}");
            services.push_str(&format!(
                "[services.{name}]\nlisten = \"127.0.0.1:{port}\"\nurl = \"{url}\"\n"
            ));
            nodes.push_str(&format!(
                "[[nodes]]\nname = \"{name}\"\nservices = [\"{name}\"]\n"
            ));
            urls.insert(name, url);
        }
        let file = dir.join("cluster.toml");
        std::fs::write(
            &file,
            format!(
                r#"
data_dir = "{dir}"
node = "gateway"
[database]
url = "{db}"
# Two of these clusters can run at once beside the other tests: each keeps to its share of
# a server that allows a hundred connections.
max_connections = 40
[broker]
url = "{amqp}"
exchange = "{exchange}"
retry_base_ms = 200
relay_poll_ms = 200
[clickhouse]
url = "{clickhouse}?database=bilet_test_{ch}"
[storage]
endpoint = "{s3}"
access_key = "{ak}"
secret_key = "{sk}"
bucket = "{bucket}"
region = "{region}"
[messenger]
bot_token = "{token}"
bot_username = "bilet_test_bot"
api_url = "{telegram}"
poll_timeout_secs = 1
[auth]
jwt_secret = "test-secret-test-secret-test-secret"
service_secret = "test-service-secret-test-service-secret"
bcrypt_cost = 4
[gateway]
user_per_minute = 1000000
public_per_minute = 1000000
forward_timeout_ms = 10000
{services}
{nodes}
"#,
                dir = dir.display(),
                db = t.url,
                amqp = crate::support::amqp_url(),
                ch = uuid::Uuid::now_v7().simple(),
                s3 = env("STORAGE_ENDPOINT"),
                ak = env("STORAGE_ACCESS_KEY"),
                sk = env("STORAGE_SECRET_KEY"),
                bucket = env("STORAGE_BUCKET"),
                region = env("STORAGE_REGION"),
                token = crate::identity::BOT_TOKEN,
                telegram = telegram.url,
            ),
        )
        .unwrap();
        let mut cluster = Cluster {
            file,
            urls,
            processes: BTreeMap::new(),
            exchange,
        };
        for name in SERVICES {
            cluster.spawn(name);
        }
        for name in SERVICES {
            cluster.wait_ready(name).await;
        }
        cluster
    }

    /// Starts the process of `service`.
    pub fn spawn(&mut self, service: &'static str) {
        let child = spawn_node(&self.file, service);
        self.processes.insert(service, child);
    }

    /// Waits until `service` answers /health/ready.
    pub async fn wait_ready(&self, service: &str) {
        let url = format!("{}/health/ready", self.urls[service]);
        assert!(
            eventually(90, || async {
                reqwest::get(&url)
                    .await
                    .is_ok_and(|r| r.status().is_success())
            })
            .await,
            "{service} becomes ready"
        );
    }

    /// Kills `service` with SIGKILL.
    pub fn kill(&mut self, service: &str) {
        if let Some(mut child) = self.processes.remove(service) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills and starts `service` again, and waits for it.
    pub async fn restart(&mut self, service: &'static str) {
        self.kill(service);
        self.spawn(service);
        self.wait_ready(service).await;
    }

    /// The platform the scenario drives: this cluster's gateway, its database and broker.
    pub async fn platform(&self, t: &TestDb, telegram: FakeTelegram) -> super::Platform {
        super::Platform {
            base: self.urls["gateway"].clone(),
            db: t.db.clone(),
            owner_url: t.url.clone(),
            broker: storage::broker::from_config(&self.broker_config())
                .await
                .unwrap(),
            telegram,
            http: reqwest::Client::new(),
        }
    }

    /// The broker configuration of the cluster, for the test's own publisher.
    pub fn broker_config(&self) -> domain::config::BrokerConfig {
        domain::config::BrokerConfig {
            url: crate::support::amqp_url(),
            exchange: self.exchange.clone(),
            ..domain::config::BrokerConfig::default()
        }
    }
}

/// Starts `bilet serve` as the node `node` of the cluster file `file`, with nothing from the
/// test's environment but what the file says (CLUSTER_LOG=debug shows its log).
pub fn spawn_node(file: &std::path::Path, node: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_bilet"))
        .args(["--config", file.to_str().unwrap(), "serve"])
        .env("BILET_NODE", node)
        .env_remove("DATABASE_URL")
        .env_remove("BROKER_URL")
        .env_remove("CLICKHOUSE_URL")
        .env_remove("REDIS_URL")
        .env_remove("SMTP_URL")
        .env_remove("MESSENGER_API_URL")
        .env(
            "RUST_LOG",
            std::env::var("CLUSTER_LOG").unwrap_or_else(|_| "error".into()),
        )
        .stdout(if std::env::var("CLUSTER_LOG").is_ok() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .stderr(if std::env::var("CLUSTER_LOG").is_ok() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .spawn()
        .unwrap()
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for child in self.processes.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[tokio::test]
async fn as_separate_processes_on_rabbitmq_clickhouse_and_s3() {
    let t = TestDb::new().await;
    let telegram = FakeTelegram::start().await;
    let cluster = Cluster::start(&t, &telegram).await;
    let platform = cluster.platform(&t, telegram).await;
    let outcome = super::run(&platform, 12_000).await;
    super::audit(&platform, &outcome).await;
}
