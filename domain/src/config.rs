//! The one source of configuration: `cluster.toml` with every setting overridable from the
//! environment. Loading is pure (text and variables in, `Config` out) so it is unit-tested;
//! reading the file and the process environment happens in the binary.

use serde::{Deserialize, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// Environment variables with a conventional name, and the setting each one overrides.
/// Any other setting is reachable as `BILET__<SECTION>__<KEY>`.
pub const ENV_ALIASES: &[(&str, &str)] = &[
    ("BILET_MODE", "mode"),
    ("BILET_DATA_DIR", "data_dir"),
    ("BILET_NODE", "node"),
    ("RUST_LOG", "log.filter"),
    ("DATABASE_URL", "database.url"),
    ("DATABASE_APP_PASSWORD", "database.app_password"),
    ("DATABASE_APP_ROLE", "database.app_role"),
    ("BROKER_URL", "broker.url"),
    ("CLICKHOUSE_URL", "clickhouse.url"),
    ("REDIS_URL", "redis.url"),
    ("SMTP_URL", "smtp.url"),
    ("SMTP_FROM", "smtp.from"),
    ("STORAGE_ENDPOINT", "storage.endpoint"),
    ("STORAGE_ACCESS_KEY", "storage.access_key"),
    ("STORAGE_SECRET_KEY", "storage.secret_key"),
    ("STORAGE_BUCKET", "storage.bucket"),
    ("STORAGE_REGION", "storage.region"),
    ("STORAGE_PUBLIC_ENDPOINT", "storage.public_endpoint"),
    ("MESSENGER_BOT_TOKEN", "messenger.bot_token"),
    ("MESSENGER_BOT_USERNAME", "messenger.bot_username"),
    ("MESSENGER_API_URL", "messenger.api_url"),
    ("JWT_SECRET", "auth.jwt_secret"),
    ("SERVICE_SECRET", "auth.service_secret"),
    ("PAYMENTS_WEBHOOK_SECRET", "payments.webhook_secret"),
    ("PAYMENTS_PROVIDER", "payments.provider"),
    ("YOOKASSA_SHOP_ID", "payments.yookassa_shop_id"),
    ("YOOKASSA_SECRET_KEY", "payments.yookassa_secret_key"),
    ("STRIPE_SECRET_KEY", "payments.stripe_secret_key"),
    ("STRIPE_WEBHOOK_SECRET", "payments.stripe_webhook_secret"),
    ("PAYMENTS_CREDENTIALS_KEY", "payments.credentials_key"),
    ("PUBLIC_URL", "http.public_url"),
    ("WALLET_ISSUER_NAME", "wallet.issuer_name"),
    ("WALLET_GOOGLE_ISSUER_ID", "wallet.google_issuer_id"),
    (
        "WALLET_GOOGLE_SERVICE_ACCOUNT",
        "wallet.google_service_account",
    ),
    ("WALLET_GOOGLE_PRIVATE_KEY", "wallet.google_private_key"),
    ("WALLET_APPLE_PASS_TYPE_ID", "wallet.apple_pass_type_id"),
    ("WALLET_APPLE_TEAM_ID", "wallet.apple_team_id"),
    ("WALLET_APPLE_CERTIFICATE", "wallet.apple_certificate"),
    (
        "WALLET_APPLE_WWDR_CERTIFICATE",
        "wallet.apple_wwdr_certificate",
    ),
    ("WALLET_APPLE_PRIVATE_KEY", "wallet.apple_private_key"),
];

/// Prefix of the generic override variables.
pub const ENV_PREFIX: &str = "BILET__";

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The TOML text does not parse.
    #[error("cluster.toml is not valid TOML: {0}")]
    Syntax(String),
    /// A value has the wrong type or an unknown key was given.
    #[error("invalid configuration: {0}")]
    Invalid(String),
    /// The selected node is not described. Every command loads a node's configuration, and
    /// the documented multi-process file has no `node` line: the message names the setting.
    #[error(
        "node `{0}` is not described in cluster.toml: choose the node this process runs with BILET_NODE=<name> (or `node = \"<name>\"` in cluster.toml); the file describes: {1}"
    )]
    UnknownNode(String, String),
    /// A service a node runs has no address.
    #[error("service `{0}` has no [services.{0}] address in cluster.toml")]
    MissingService(String),
    /// Production mode without what keeps it safe.
    #[error("production mode refuses to start: {0}")]
    Unsafe(String),
}

/// Development generates what is missing; production refuses to start without it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Embedded defaults, generated secrets.
    #[default]
    Development,
    /// Every secret must be given.
    Production,
}

/// A value that must never be printed.
///
/// Loading never yields an empty one: `Config::load` drops a secret that is set but blank (or,
/// for the bot token, malformed) before the configuration is built, and deserializing one from
/// blank text fails, so whatever needs a secret sees either a usable value or none.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value the program chose itself (a generated secret, a test's fixture).
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// A secret from outside (a file, the environment): none when the value is empty or only
    /// whitespace, which would otherwise be taken as a configured key (an empty bot token
    /// keys the login widget's MAC with SHA-256 of "", which anyone can compute).
    pub fn parse(value: impl Into<String>) -> Option<Self> {
        let value = value.into();
        (!value.trim().is_empty()).then_some(Secret(value))
    }

    /// The secret itself, for the one place that needs it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(****)")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Secret::parse(String::deserialize(d)?)
            .ok_or_else(|| serde::de::Error::custom("a secret cannot be empty"))
    }
}

impl Serialize for Secret {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("****")
    }
}

/// A service bilet can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Service {
    /// The API gateway, the only public door.
    Gateway,
    /// Accounts, sessions, organizations, groups.
    Identity,
    /// Events, ticket types, registrations.
    Events,
    /// Messenger notifications.
    Notifications,
    /// Files and images.
    Media,
    /// Tracking and dashboards.
    Analytics,
}

impl Service {
    /// Every service, in port order.
    pub const ALL: [Service; 6] = [
        Service::Gateway,
        Service::Identity,
        Service::Events,
        Service::Notifications,
        Service::Media,
        Service::Analytics,
    ];

    /// The name used in cluster.toml and logs.
    pub fn name(self) -> &'static str {
        match self {
            Self::Gateway => "gateway",
            Self::Identity => "identity",
            Self::Events => "events",
            Self::Notifications => "notifications",
            Self::Media => "media",
            Self::Analytics => "analytics",
        }
    }

    /// The PostgreSQL schema the service owns, if any.
    pub fn schema(self) -> Option<&'static str> {
        match self {
            Self::Gateway => None,
            Self::Identity => Some("user_service"),
            Self::Events => Some("event_service"),
            Self::Notifications => Some("notification_service"),
            Self::Media => Some("media_service"),
            Self::Analytics => Some("analytics_service"),
        }
    }

    fn default_port(self) -> u16 {
        match self {
            Self::Gateway => 8080,
            Self::Identity => 8081,
            Self::Events => 8082,
            Self::Notifications => 8084,
            Self::Media => 8085,
            Self::Analytics => 8086,
        }
    }
}

/// The whole configuration of a process.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// development or production.
    pub mode: Mode,
    /// Where generated secrets, local media and mail files live.
    pub data_dir: PathBuf,
    /// Which `[[nodes]]` entry this process runs.
    pub node: String,
    /// Logging.
    pub log: LogConfig,
    /// PostgreSQL.
    pub database: DatabaseConfig,
    /// The message broker.
    pub broker: BrokerConfig,
    /// HTTP limits shared by every service.
    pub http: HttpConfig,
    /// The gateway: rate limits, trusted proxies, forwarding.
    pub gateway: GatewayConfig,
    /// How seats are sold.
    pub ticketing: TicketingConfig,
    /// The events cluster: leases and the gateway's shard map.
    pub cluster: ClusterConfig,
    /// ClickHouse for analytics; PostgreSQL is used when absent.
    pub clickhouse: UrlConfig,
    /// Redis for shared rate limits; in memory when absent.
    pub redis: UrlConfig,
    /// Outgoing mail; `.eml` files in the data directory when absent.
    pub smtp: SmtpConfig,
    /// Object storage; a local directory when no endpoint is given.
    pub storage: StorageConfig,
    /// The messenger bot; disabled without a token.
    pub messenger: MessengerConfig,
    /// Token signing.
    pub auth: AuthConfig,
    /// The payment provider's webhook.
    pub payments: PaymentsConfig,
    /// Wallet passes of tickets; each kind is offered only with its signing keys.
    pub wallet: WalletConfig,
    /// Where each service listens and is reached.
    pub services: BTreeMap<Service, ServiceAddr>,
    /// The processes of the cluster and the services each runs.
    pub nodes: Vec<NodeConfig>,
    /// What loading noticed that the settings themselves no longer show.
    #[serde(skip)]
    pub notes: LoadNotes,
}

/// What `Config::load` noticed: whether the mode was chosen, and which secrets it dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadNotes {
    /// Whether `mode` was given (cluster.toml or BILET_MODE) rather than defaulted to
    /// development, which generates secrets: a deployment that forgot it is warned.
    pub mode_given: bool,
    /// Secrets that were set but unusable, now absent.
    pub ignored_secrets: Vec<IgnoredSecret>,
}

/// A secret that was set but cannot be used, so counts as absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IgnoredSecret {
    /// Which one.
    pub setting: SecretSetting,
    /// What is wrong with it, e.g. "is set but empty".
    pub why: &'static str,
}

/// Every secret of the configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecretSetting {
    /// Signs access and refresh tokens.
    Jwt,
    /// Signs requests between processes.
    Service,
    /// Authenticates the payment provider's webhook.
    Webhook,
    /// Password of the application's database role.
    AppPassword,
    /// Object store access key.
    StorageAccessKey,
    /// Object store secret key.
    StorageSecretKey,
    /// The messenger bot's token.
    BotToken,
    /// YooKassa's secret key of the platform's shop.
    YooKassaSecretKey,
    /// Stripe's secret API key.
    StripeSecretKey,
    /// Stripe's signing secret of the webhook endpoint.
    StripeWebhookSecret,
    /// Seals the payment provider keys organizations store.
    CredentialsKey,
    /// Signs Google Wallet passes (the service account's RSA key, PEM).
    GoogleWalletKey,
    /// Signs Apple Wallet passes (the pass certificate's RSA key, PEM).
    AppleWalletKey,
}

/// Least length production accepts for the secrets whose value the operator chooses (JWT,
/// service, webhook): 32 bytes, 256 bits, the HMAC-SHA256 key size (the service secret's own
/// minimum).
pub const MIN_OPERATOR_SECRET_BYTES: usize = crate::trust::MIN_SECRET_BYTES;

/// Least length of `DATABASE_APP_PASSWORD` in production: a password, not a key, but one no
/// person types, so 16 bytes (about 96 bits in base64) costs nothing.
pub const MIN_APP_PASSWORD_BYTES: usize = 16;

/// Fewer different bytes than this marks a secret as made by hand (`aaaa…`, `abab…`,
/// `1111…2222…`): a random value of 32 base64 characters has about 25.
pub const MIN_DISTINCT_SECRET_BYTES: usize = 10;

/// How production advises to make a secret.
const RANDOM_SECRET_HINT: &str = "e.g. `head -c 48 /dev/urandom | base64`";

impl SecretSetting {
    /// Every secret.
    pub const ALL: [SecretSetting; 13] = [
        SecretSetting::Jwt,
        SecretSetting::Service,
        SecretSetting::Webhook,
        SecretSetting::AppPassword,
        SecretSetting::StorageAccessKey,
        SecretSetting::StorageSecretKey,
        SecretSetting::BotToken,
        SecretSetting::YooKassaSecretKey,
        SecretSetting::StripeSecretKey,
        SecretSetting::StripeWebhookSecret,
        SecretSetting::CredentialsKey,
        SecretSetting::GoogleWalletKey,
        SecretSetting::AppleWalletKey,
    ];

    /// Its path in cluster.toml.
    pub fn path(self) -> &'static str {
        match self {
            Self::Jwt => "auth.jwt_secret",
            Self::Service => "auth.service_secret",
            Self::Webhook => "payments.webhook_secret",
            Self::AppPassword => "database.app_password",
            Self::StorageAccessKey => "storage.access_key",
            Self::StorageSecretKey => "storage.secret_key",
            Self::BotToken => "messenger.bot_token",
            Self::YooKassaSecretKey => "payments.yookassa_secret_key",
            Self::StripeSecretKey => "payments.stripe_secret_key",
            Self::StripeWebhookSecret => "payments.stripe_webhook_secret",
            Self::CredentialsKey => "payments.credentials_key",
            Self::GoogleWalletKey => "wallet.google_private_key",
            Self::AppleWalletKey => "wallet.apple_private_key",
        }
    }

    /// The environment variable that sets it.
    pub fn variable(self) -> &'static str {
        ENV_ALIASES
            .iter()
            .find(|(_, path)| *path == self.path())
            .map_or("", |(variable, _)| variable)
    }

    /// What goes without it.
    pub fn without(self) -> &'static str {
        match self {
            Self::Jwt => {
                "development generates one when `bilet serve` starts; production refuses to start"
            }
            Self::Service => {
                "development generates one when `bilet serve` starts; production needs it once more than one process or a public address is involved"
            }
            Self::Webhook => "the payments webhook is off (it answers 503)",
            Self::AppPassword => {
                "the services' database role has no password (only trust authentication lets them connect); production refuses to start"
            }
            Self::StorageAccessKey | Self::StorageSecretKey => {
                "media cannot use an object store (without STORAGE_ENDPOINT it keeps files in the data directory and needs no key)"
            }
            Self::BotToken => {
                "the messenger bot is off (messages are recorded as skipped) and messenger sign-in is refused"
            }
            Self::YooKassaSecretKey => {
                "the platform takes no payments through YooKassa (organizations with their own shop still do)"
            }
            Self::StripeSecretKey => {
                "the platform takes no payments through Stripe (organizations with their own account still do)"
            }
            Self::StripeWebhookSecret => {
                "Stripe's notifications to the platform's account are refused (401), so its payments are not confirmed"
            }
            Self::CredentialsKey => {
                "organizations cannot store their own payment provider keys (PUT /api/v1/payments/accounts answers 503); they are paid through the platform's"
            }
            Self::GoogleWalletKey => {
                "tickets offer no \"Add to Google Wallet\" (GET /api/v1/registrations/{id}/wallet/google answers 404)"
            }
            Self::AppleWalletKey => {
                "tickets offer no \"Add to Apple Wallet\" (GET /api/v1/registrations/{id}/wallet/apple answers 404)"
            }
        }
    }

    /// Least length production accepts, for a value the operator chooses; none for a value
    /// someone else issues (Telegram's bot token, the object store's keys).
    pub fn min_production(self) -> Option<usize> {
        match self {
            Self::Jwt | Self::Service | Self::Webhook | Self::CredentialsKey => {
                Some(MIN_OPERATOR_SECRET_BYTES)
            }
            Self::AppPassword => Some(MIN_APP_PASSWORD_BYTES),
            Self::StorageAccessKey
            | Self::StorageSecretKey
            | Self::BotToken
            | Self::YooKassaSecretKey
            | Self::StripeSecretKey
            | Self::StripeWebhookSecret
            | Self::GoogleWalletKey
            | Self::AppleWalletKey => None,
        }
    }

    /// Why a value given for it is unusable (and counts as absent), if it is.
    fn unusable(self, value: &str) -> Option<&'static str> {
        if value.trim().is_empty() {
            return Some("is set but empty");
        }
        // The login widget and the Bot API need the `<bot id>:<secret>` form; anything else
        // would turn the bot on to fail every call, or key sign-in with a guessable value.
        if self == Self::BotToken && crate::identity::messenger::bot_id(value).is_none() {
            return Some("is not a bot token (it reads `<bot id>:<secret>`)");
        }
        None
    }
}

/// Why `value` is too weak for a secret of at least `min` bytes chosen by the operator: too
/// short, one pattern repeated (`aaaa…`, `abcabc…`, `secret-secret-…`), or fewer than
/// `MIN_DISTINCT_SECRET_BYTES` different bytes.
pub fn secret_weakness(value: &str, min: usize) -> Option<String> {
    let bytes = value.as_bytes();
    if bytes.len() < min {
        return Some(format!(
            "must be at least {min} bytes (it has {})",
            bytes.len()
        ));
    }
    let periodic =
        (1..=bytes.len() / 2).any(|p| bytes.iter().zip(&bytes[p..]).all(|(a, b)| a == b));
    if periodic {
        return Some("repeats one pattern, which anyone can guess".into());
    }
    let distinct = bytes
        .iter()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    if distinct < MIN_DISTINCT_SECRET_BYTES {
        return Some(format!(
            "has only {distinct} different bytes (a random value has far more than {MIN_DISTINCT_SECRET_BYTES})"
        ));
    }
    None
}

/// Logging settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A tracing filter, e.g. `info,bilet=debug`.
    pub filter: String,
}

/// PostgreSQL settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseConfig {
    /// Connection of the schema owner: migrations run with it.
    pub url: String,
    /// Password of the application role the services connect as (owns no table); none with
    /// trust authentication.
    pub app_password: Option<Secret>,
    /// Name of that role. Roles are shared by every database of a PostgreSQL server, so the
    /// default is derived from the database's name (`DatabaseConfig::app_role_name`): two
    /// installations on one server never share, nor reset each other's, role.
    pub app_role: Option<String>,
    /// Connections in the pool of each process, unless `max_connections` shares a budget.
    pub pool_size: usize,
    /// How many connections all processes of the installation together may open (0: no
    /// budget, each process pools `pool_size`). Each process then takes its share by the
    /// services it runs (`crate::connections`); set it below the server's `max_connections`
    /// (minus what other clients need).
    pub max_connections: u32,
    /// Longest a statement may run, in milliseconds.
    pub statement_timeout_ms: u64,
    /// A session idle inside a transaction this long is ended by the server, so a paused or
    /// cut-off process cannot hold its locks (a shard's lease among them) for long.
    pub idle_in_transaction_ms: u64,
    /// A pooled connection no request has taken for this long is closed: processes sharing
    /// PostgreSQL's connection limit give back what a burst made them open.
    pub idle_connection_ms: u64,
    /// A pooled connection this old is closed once it is back in the pool (a fresh one takes
    /// its place when needed), giving back the buffers it grew to its largest message.
    pub connection_lifetime_ms: u64,
    /// Connections each pool keeps open however quiet its process is (at most its size):
    /// opened at start, and renewed one at a time as they reach their lifetime, so the first
    /// second of an on-sale does not wait for PostgreSQL to start its backends.
    pub warm_connections: usize,
}

/// Broker settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BrokerConfig {
    /// `memory` for the in-process bus, or an `amqp://` URL for RabbitMQ.
    pub url: String,
    /// The topic exchange events are published to (its consumers' queues are named under it).
    /// Empty: `bilet.<database name>.events`, so installations sharing a RabbitMQ stay apart.
    pub exchange: String,
    /// Deliveries of a message before it goes to the dead-letter queue.
    pub max_attempts: u32,
    /// First retry delay; each further retry doubles it.
    pub retry_base_ms: u64,
    /// How often the outbox relay polls when no notification wakes it.
    pub relay_poll_ms: u64,
}

/// HTTP settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Largest JSON body accepted, in bytes.
    pub json_body_limit: usize,
    /// Retention of idempotency keys, in hours.
    pub idempotency_ttl_hours: u32,
    /// Public base URL of the gateway, used in links sent by mail.
    pub public_url: String,
    /// How long a connection may wait before the head of its next request arrives (an idle
    /// keep-alive connection is closed then), in seconds. Behind a load balancer, longer than
    /// the balancer's own idle timeout.
    pub idle_connection_seconds: u64,
}

/// Gateway settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GatewayConfig {
    /// Requests per minute per client IP on public routes.
    pub public_per_minute: u32,
    /// Requests per minute per user on authenticated routes.
    pub user_per_minute: u32,
    /// Uploads per minute per user.
    pub upload_per_minute: u32,
    /// Payment provider notifications per minute per source IP (outside the public budget).
    pub webhook_per_minute: u32,
    /// Joins of waiting-room queues per minute per client IP (on top of the user's budget):
    /// generous, since a carrier's NAT puts many people behind one address.
    pub queue_joins_per_ip_per_minute: u32,
    /// Joins of waiting-room queues per minute per account.
    pub queue_joins_per_account_per_minute: u32,
    /// Proxies whose X-Forwarded-For is believed: IP addresses or CIDR ranges.
    pub trusted_proxies: Vec<String>,
    /// Prefix of the rate-limit keys in Redis (gateways sharing one budget share it).
    pub rate_limit_prefix: String,
    /// Time limit of a request forwarded to another process, in milliseconds.
    pub forward_timeout_ms: u64,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            public_per_minute: 100,
            user_per_minute: 1000,
            upload_per_minute: 10,
            webhook_per_minute: 6000,
            queue_joins_per_ip_per_minute: 120,
            queue_joins_per_account_per_minute: 10,
            trusted_proxies: Vec::new(),
            // Named after the installation when loaded (`bilet:<database>:rl`).
            rate_limit_prefix: String::new(),
            forward_timeout_ms: 30_000,
        }
    }
}

/// Ticketing settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TicketingConfig {
    /// `actors`: one actor per ticket type with group commit (the default); `direct`: each
    /// request takes the row lock in its own transaction (the benchmark's baseline).
    pub mode: TicketingMode,
    /// Largest group commit of a ticket-type actor.
    pub batch: usize,
    /// Seconds without requests after which an actor stops.
    pub idle_seconds: u64,
    /// Transactions in flight at once that each commit the ready batches of many ticket types
    /// of the node: about the database's cores (more split the ready batches into smaller
    /// transactions, each paying its own statements and commit).
    pub committers: usize,
    /// How far, in milliseconds, the node's consumers of every registration (notifications,
    /// analytics) may fall behind while its seat path has requests in flight: they hold each
    /// batch until the seat path is idle or the batch's oldest event is this old. 0: they never
    /// wait.
    pub consumer_lag_ms: u64,
}

/// How seat requests reach the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TicketingMode {
    /// Through the ticket type's actor, batched.
    Actors,
    /// One transaction per request.
    Direct,
}

impl Default for TicketingConfig {
    fn default() -> Self {
        TicketingConfig {
            mode: TicketingMode::Actors,
            batch: 256,
            idle_seconds: 300,
            committers: 2,
            consumer_lag_ms: 30_000,
        }
    }
}

/// The events cluster: how often nodes renew their shard leases, how long a lease lasts, and
/// how often a gateway re-reads the shard map besides being notified.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClusterConfig {
    /// Milliseconds between a node's heartbeats (each renews its leases).
    pub renew_every_ms: u64,
    /// Milliseconds a lease lasts without renewal: how long the events of a dead node wait
    /// for another owner.
    pub lease_ttl_ms: u64,
    /// Milliseconds between a gateway's readings of the shard map.
    pub map_poll_ms: u64,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            renew_every_ms: 300,
            lease_ttl_ms: 2_000,
            map_poll_ms: 1_000,
        }
    }
}

/// A backing service given by URL.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UrlConfig {
    /// Its URL, or none for the embedded default.
    pub url: Option<String>,
}

/// Mail settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SmtpConfig {
    /// `smtp://host:port`, or none to write `.eml` files.
    pub url: Option<String>,
    /// Sender address.
    pub from: String,
}

/// Object storage settings (the spec's STORAGE_* names).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// S3 endpoint, or none for the local directory.
    pub endpoint: Option<String>,
    /// S3 access key.
    pub access_key: Option<Secret>,
    /// S3 secret key.
    pub secret_key: Option<Secret>,
    /// Bucket name.
    pub bucket: String,
    /// S3 region.
    pub region: String,
    /// The endpoint browsers reach the same server at, when `endpoint` is a private address:
    /// presigned links are signed for (and point at) this one.
    pub public_endpoint: Option<String>,
}

/// Messenger bot settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MessengerConfig {
    /// Bot token; without it the bot is off and sends are logged as skipped.
    pub bot_token: Option<Secret>,
    /// Bot username for deep links.
    pub bot_username: String,
    /// Bot API base URL, replaced by a fake one in tests.
    pub api_url: String,
    /// Telegram's sign-in page the web front sends a visitor to (it returns to us with the
    /// signed account in the address's fragment).
    pub login_url: String,
    /// Messages per second to all chats together (Telegram allows about 30).
    pub messages_per_second: u32,
    /// Least time between two messages to the same chat (Telegram allows about one a second).
    pub chat_interval_ms: u64,
    /// Tries of a message that fails for a passing reason before it is given up.
    pub max_attempts: u32,
    /// Wait before the second try; doubles with every further try.
    pub retry_base_ms: u64,
    /// Long-poll timeout of getUpdates, in seconds.
    pub poll_timeout_secs: u32,
    /// Whether this node answers the bot's chats. Telegram lets one process poll a bot's
    /// updates: further notification nodes send only.
    pub poll_updates: bool,
}

/// Token and password settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuthConfig {
    /// HS256 signing secret shared by identity and the gateway.
    pub jwt_secret: Option<Secret>,
    /// Secret gateways and services share to sign the requests they send each other
    /// (`domain::trust`); needed as soon as a service is reachable from another host.
    pub service_secret: Option<Secret>,
    /// bcrypt cost factor of password hashes (the spec says 12).
    pub bcrypt_cost: u32,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            jwt_secret: None,
            service_secret: None,
            bcrypt_cost: 12,
        }
    }
}

/// Payment provider settings.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PaymentsConfig {
    /// Secret the provider signs `POST /api/v1/payments/webhook` with; without it the webhook
    /// answers 503.
    pub webhook_secret: Option<Secret>,
    /// Where participants pay: `test` (bilet's own Pay / Decline page; development only),
    /// `yookassa` or `stripe`. With YooKassa or Stripe, roubles go to YooKassa and every other
    /// currency to Stripe, each where its keys are set.
    pub provider: crate::events::checkout::ProviderKind,
    /// Time limit of one call to a provider, in milliseconds.
    pub timeout_ms: u64,
    /// YooKassa's API (`https://api.yookassa.ru/v3`).
    pub yookassa_api_url: String,
    /// The platform's YooKassa shop id.
    pub yookassa_shop_id: String,
    /// The platform's YooKassa secret key.
    pub yookassa_secret_key: Option<Secret>,
    /// Send 54-FZ receipts with YooKassa payments of organizations that did not choose.
    pub yookassa_receipts: bool,
    /// VAT code of the receipt's item (1: without VAT).
    pub yookassa_vat_code: u8,
    /// Stripe's API (`https://api.stripe.com`).
    pub stripe_api_url: String,
    /// The platform's Stripe secret key.
    pub stripe_secret_key: Option<Secret>,
    /// Signing secret of the platform's Stripe webhook endpoint (`whsec_…`).
    pub stripe_webhook_secret: Option<Secret>,
    /// Seals the provider keys organizations store for their own shops (any random value of
    /// at least 32 bytes; changing it makes the stored keys unreadable).
    pub credentials_key: Option<Secret>,
}

impl Default for PaymentsConfig {
    fn default() -> Self {
        PaymentsConfig {
            webhook_secret: None,
            provider: crate::events::checkout::ProviderKind::Test,
            timeout_ms: 10_000,
            yookassa_api_url: "https://api.yookassa.ru/v3".into(),
            yookassa_shop_id: String::new(),
            yookassa_secret_key: None,
            yookassa_receipts: false,
            yookassa_vat_code: 1,
            stripe_api_url: "https://api.stripe.com".into(),
            stripe_secret_key: None,
            stripe_webhook_secret: None,
            credentials_key: None,
        }
    }
}

/// Wallet passes of confirmed tickets. Google Wallet needs the issuer id, the service
/// account's email and its private key; Apple Wallet the pass type id, the team id, the pass
/// certificate, Apple's WWDR intermediate certificate and the certificate's private key. A
/// kind with any of them missing is not offered. Keys and certificates are PEM text (an
/// environment variable may hold the several lines).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WalletConfig {
    /// The name passes show as their issuer (empty: `bilet`).
    pub issuer_name: String,
    /// Google Wallet issuer id (a number, kept as text).
    pub google_issuer_id: String,
    /// The service account that signs the save links (`…@….iam.gserviceaccount.com`).
    pub google_service_account: String,
    /// Its RSA private key, PEM (`-----BEGIN PRIVATE KEY-----`, as in its JSON key file).
    pub google_private_key: Option<Secret>,
    /// Apple pass type identifier (`pass.org.example.tickets`).
    pub apple_pass_type_id: String,
    /// Apple developer team identifier.
    pub apple_team_id: String,
    /// The pass type certificate, PEM.
    pub apple_certificate: String,
    /// Apple's WWDR intermediate certificate that issued it, PEM.
    pub apple_wwdr_certificate: String,
    /// The pass certificate's RSA private key, PEM (PKCS#8 or PKCS#1).
    pub apple_private_key: Option<Secret>,
}

impl WalletConfig {
    /// Whether the settings of Google Wallet passes, other than the key, are given.
    pub fn google_named(&self) -> bool {
        !self.google_issuer_id.trim().is_empty() && !self.google_service_account.trim().is_empty()
    }

    /// Whether the settings of Apple Wallet passes, other than the key, are given.
    pub fn apple_named(&self) -> bool {
        [
            &self.apple_pass_type_id,
            &self.apple_team_id,
            &self.apple_certificate,
            &self.apple_wwdr_certificate,
        ]
        .iter()
        .all(|v| !v.trim().is_empty())
    }
}

/// Address of one service.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceAddr {
    /// Socket address it listens on.
    pub listen: String,
    /// Base URL other processes reach it at.
    pub url: String,
}

/// One process of the cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    /// Its name, selected with `node` / BILET_NODE.
    pub name: String,
    /// The services it runs.
    pub services: Vec<Service>,
    /// Addresses of this node's own, where they differ from `[services]` (several events
    /// nodes each listen on their own address).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub addresses: BTreeMap<Service, ServiceAddr>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Development,
            data_dir: PathBuf::from(".bilet"),
            node: "default".into(),
            log: LogConfig::default(),
            database: DatabaseConfig::default(),
            broker: BrokerConfig::default(),
            http: HttpConfig::default(),
            gateway: GatewayConfig::default(),
            ticketing: TicketingConfig::default(),
            cluster: ClusterConfig::default(),
            clickhouse: UrlConfig::default(),
            redis: UrlConfig::default(),
            smtp: SmtpConfig::default(),
            storage: StorageConfig::default(),
            messenger: MessengerConfig::default(),
            auth: AuthConfig::default(),
            payments: PaymentsConfig::default(),
            wallet: WalletConfig::default(),
            notes: LoadNotes::default(),
            services: Service::ALL
                .into_iter()
                .map(|s| {
                    let port = s.default_port();
                    (
                        s,
                        // Loopback until cluster.toml says otherwise: nothing is reachable from
                        // another host by accident.
                        ServiceAddr {
                            listen: format!("127.0.0.1:{port}"),
                            url: format!("http://127.0.0.1:{port}"),
                        },
                    )
                })
                .collect(),
            nodes: vec![NodeConfig {
                name: "default".into(),
                services: Service::ALL.to_vec(),
                addresses: BTreeMap::new(),
            }],
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            filter: "info".into(),
        }
    }
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig {
            url: "postgres://postgres@127.0.0.1:5432/bilet".into(),
            app_password: None,
            app_role: None,
            pool_size: 32,
            max_connections: 0,
            statement_timeout_ms: 30_000,
            idle_in_transaction_ms: 5_000,
            idle_connection_ms: 30_000,
            connection_lifetime_ms: 60_000,
            warm_connections: 8,
        }
    }
}

/// Longest identifier PostgreSQL keeps (longer ones are silently cut, which could make two
/// derived role names equal).
const MAX_IDENTIFIER_BYTES: usize = 63;

impl DatabaseConfig {
    /// The database `url` names: the path of a `postgres://` URL or the `dbname=` of a
    /// key/value string, else (as libpq does) the user's name, else `postgres`.
    pub fn database_name(&self) -> String {
        let url = self.url.trim();
        if let Some((_, rest)) = url.split_once("://") {
            let rest = rest.split(['?', '#']).next().unwrap_or("");
            let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
            if !path.is_empty() {
                return percent_decode(path);
            }
            let user = authority
                .rsplit_once('@')
                .map(|(info, _)| info.split(':').next().unwrap_or(""))
                .unwrap_or("");
            if !user.is_empty() {
                return percent_decode(user);
            }
        } else {
            let value = |key: &str| {
                url.split_whitespace()
                    .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
                    .map(|v| v.trim_matches('\'').to_string())
                    .filter(|v| !v.is_empty())
            };
            if let Some(name) = value("dbname").or_else(|| value("user")) {
                return name;
            }
        }
        "postgres".into()
    }

    /// The application role: `app_role` when given, else `bilet_app_<database>` in lower-case
    /// letters, digits and `_`. When that spelling is not the database's name as is (other
    /// characters, or longer than PostgreSQL's 63 bytes), a hash of the name is appended so
    /// that `my-db` and `my_db` still get different roles.
    pub fn app_role_name(&self) -> String {
        if let Some(role) = self.app_role.as_deref().filter(|r| !r.trim().is_empty()) {
            return role.to_string();
        }
        let database = self.database_name();
        let clean: String = database
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '_' => c,
                _ => '_',
            })
            .collect();
        let plain = format!("bilet_app_{clean}");
        if clean == database && plain.len() <= MAX_IDENTIFIER_BYTES {
            return plain;
        }
        use sha2::Digest;
        let hash = hex::encode(&sha2::Sha256::digest(database.as_bytes())[..4]);
        let keep = MAX_IDENTIFIER_BYTES - hash.len() - 1;
        // `clean` is ASCII, so any byte length is a character boundary.
        format!("{}_{hash}", &plain[..plain.len().min(keep)])
    }
}

/// The exchange of an installation whose database is `database`.
pub fn default_exchange(database: &str) -> String {
    format!("bilet.{database}.events")
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| text.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match escaped {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Default for BrokerConfig {
    fn default() -> Self {
        BrokerConfig {
            url: "memory".into(),
            exchange: String::new(),
            max_attempts: 5,
            retry_base_ms: 500,
            relay_poll_ms: 1_000,
        }
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            json_body_limit: 1024 * 1024,
            idempotency_ttl_hours: 24,
            public_url: "http://localhost:8080".into(),
            idle_connection_seconds: 75,
        }
    }
}

impl Default for SmtpConfig {
    fn default() -> Self {
        SmtpConfig {
            url: None,
            from: "bilet <no-reply@bilet.local>".into(),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            endpoint: None,
            access_key: None,
            secret_key: None,
            bucket: "bilet-media".into(),
            region: "garage".into(),
            public_endpoint: None,
        }
    }
}

impl Default for MessengerConfig {
    fn default() -> Self {
        MessengerConfig {
            bot_token: None,
            bot_username: "bilet_bot".into(),
            api_url: "https://api.telegram.org".into(),
            login_url: "https://oauth.telegram.org/auth".into(),
            messages_per_second: 30,
            chat_interval_ms: 1000,
            max_attempts: 5,
            retry_base_ms: 2000,
            poll_timeout_secs: 25,
            poll_updates: true,
        }
    }
}

/// Settings whose value is always text, even when it looks like a number.
const STRING_SETTINGS: &[&str] = &[
    "database.app_password",
    "storage.access_key",
    "storage.secret_key",
    "messenger.bot_token",
    "messenger.bot_username",
    "auth.jwt_secret",
    "auth.service_secret",
    "payments.webhook_secret",
    "wallet.google_issuer_id",
    "wallet.google_service_account",
    "wallet.google_private_key",
    "wallet.apple_pass_type_id",
    "wallet.apple_team_id",
    "wallet.issuer_name",
    "wallet.apple_certificate",
    "wallet.apple_wwdr_certificate",
    "wallet.apple_private_key",
];

impl Config {
    /// Builds the configuration from the text of cluster.toml (if any) and the environment.
    pub fn load<I, K, V>(file: Option<&str>, env: I) -> Result<Config, ConfigError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut table: toml::Table = match file {
            Some(text) => text
                .parse()
                .map_err(|e: toml::de::Error| ConfigError::Syntax(e.to_string()))?,
            None => toml::Table::new(),
        };
        for (key, value) in env {
            let (key, value) = (key.as_ref(), value.as_ref());
            let path = if let Some((_, path)) = ENV_ALIASES.iter().find(|(k, _)| *k == key) {
                path.to_string()
            } else if let Some(rest) = key.strip_prefix(ENV_PREFIX) {
                rest.to_ascii_lowercase().replace("__", ".")
            } else {
                continue;
            };
            set_path(&mut table, &path, env_value(&path, value));
        }
        let notes = LoadNotes {
            mode_given: table.contains_key("mode"),
            ignored_secrets: drop_unusable_secrets(&mut table),
        };
        let mut config: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ConfigError::Invalid(e.to_string()))?;
        config.notes = notes;
        config.name_installation();
        config.validate()?;
        Ok(config)
    }

    /// Fills the names that must differ between installations sharing a PostgreSQL server or
    /// a RabbitMQ (the application role, the exchange) from the database's name, unless given.
    /// `load` does it; a configuration built by hand gets it when a node starts.
    pub fn name_installation(&mut self) {
        if self
            .database
            .app_role
            .as_deref()
            .is_none_or(|r| r.trim().is_empty())
        {
            self.database.app_role = Some(self.database.app_role_name());
        }
        if self.broker.exchange.trim().is_empty() {
            self.broker.exchange = default_exchange(&self.database.database_name());
        }
        // Gateways of one installation share their budgets in Redis; two installations on
        // one Redis must not.
        if self.gateway.rate_limit_prefix.trim().is_empty() {
            self.gateway.rate_limit_prefix = format!("bilet:{}:rl", self.database.database_name());
        }
    }

    /// The value of a secret, if set and usable.
    pub fn secret(&self, setting: SecretSetting) -> Option<&Secret> {
        match setting {
            SecretSetting::Jwt => self.auth.jwt_secret.as_ref(),
            SecretSetting::Service => self.auth.service_secret.as_ref(),
            SecretSetting::Webhook => self.payments.webhook_secret.as_ref(),
            SecretSetting::AppPassword => self.database.app_password.as_ref(),
            SecretSetting::StorageAccessKey => self.storage.access_key.as_ref(),
            SecretSetting::StorageSecretKey => self.storage.secret_key.as_ref(),
            SecretSetting::BotToken => self.messenger.bot_token.as_ref(),
            SecretSetting::YooKassaSecretKey => self.payments.yookassa_secret_key.as_ref(),
            SecretSetting::StripeSecretKey => self.payments.stripe_secret_key.as_ref(),
            SecretSetting::StripeWebhookSecret => self.payments.stripe_webhook_secret.as_ref(),
            SecretSetting::CredentialsKey => self.payments.credentials_key.as_ref(),
            SecretSetting::GoogleWalletKey => self.wallet.google_private_key.as_ref(),
            SecretSetting::AppleWalletKey => self.wallet.apple_private_key.as_ref(),
        }
    }

    /// Why a secret is absent: set but unusable, or not set.
    pub fn secret_absence(&self, setting: SecretSetting) -> &'static str {
        self.notes
            .ignored_secrets
            .iter()
            .find(|i| i.setting == setting)
            .map_or("is not set", |i| i.why)
    }

    /// What is off for want of a secret, one line per secret naming its setting: printed at
    /// start-up and by `bilet config`. A secret the configuration does not need (the object
    /// store's keys without an endpoint) is named only when it was given and dropped.
    pub fn missing_secrets(&self) -> Vec<(SecretSetting, String)> {
        SecretSetting::ALL
            .into_iter()
            .filter(|s| self.secret(*s).is_none())
            .filter(|s| {
                let needed = match s {
                    SecretSetting::StorageAccessKey | SecretSetting::StorageSecretKey => {
                        self.storage.endpoint.is_some()
                    }
                    // Passes are optional: their key is missed only once the rest is given.
                    SecretSetting::GoogleWalletKey => self.wallet.google_named(),
                    SecretSetting::AppleWalletKey => self.wallet.apple_named(),
                    _ => true,
                };
                needed || self.notes.ignored_secrets.iter().any(|i| i.setting == *s)
            })
            .map(|s| {
                let line = format!(
                    "{} ({}) {}: {}",
                    s.variable(),
                    s.path(),
                    self.secret_absence(s),
                    s.without()
                );
                (s, line)
            })
            .collect()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let node = self.current_node()?;
        for service in &node.services {
            if !self.services.contains_key(service) && !node.addresses.contains_key(service) {
                return Err(ConfigError::MissingService(service.name().into()));
            }
        }
        let cluster = &self.cluster;
        if cluster.renew_every_ms == 0 || cluster.lease_ttl_ms < 2 * cluster.renew_every_ms {
            return Err(ConfigError::Invalid(
                "cluster.lease_ttl_ms must be at least twice cluster.renew_every_ms (above 0)"
                    .into(),
            ));
        }
        if self.http.idle_connection_seconds == 0 {
            return Err(ConfigError::Invalid(
                "http.idle_connection_seconds must be above 0: a connection needs time to send its request".into(),
            ));
        }
        Ok(())
    }

    /// Where `node` runs `service`: its own address if it has one, else `[services]`'s.
    pub fn address<'a>(
        &'a self,
        node: &'a NodeConfig,
        service: Service,
    ) -> Option<&'a ServiceAddr> {
        node.addresses
            .get(&service)
            .or_else(|| self.services.get(&service))
    }

    /// Whether a service other than the gateway listens on, or is reached at, an address
    /// another host could use: then requests between processes cross a network and must be
    /// signed with a secret every process was given.
    pub fn services_leave_loopback(&self) -> bool {
        self.services
            .iter()
            .filter(|(service, _)| **service != Service::Gateway)
            .any(|(_, addr)| !is_loopback_listen(&addr.listen) || !is_loopback_url(&addr.url))
    }

    /// What production mode refuses (nothing in development): every reason, each naming the
    /// setting and what to do.
    pub fn production_refusals(&self) -> Vec<String> {
        let mut refusals = Vec::new();
        if self.mode != Mode::Production {
            return refusals;
        }
        // The secrets whose value is ours to choose: present where needed, long, not weak.
        let service_needed = self.service_secret_needed();
        for setting in SecretSetting::ALL {
            let Some(min) = setting.min_production() else {
                continue;
            };
            let variable = setting.variable();
            match self.secret(setting) {
                Some(secret) => {
                    if let Some(why) = secret_weakness(secret.expose(), min) {
                        refusals.push(format!(
                            "{variable} {why}: set it to a random value of at least {min} bytes, {RANDOM_SECRET_HINT}"
                        ));
                    }
                }
                None => {
                    let absent = self.secret_absence(setting);
                    match setting {
                        SecretSetting::Jwt => refusals.push(format!(
                            "{variable} {absent}: production needs an explicit token-signing secret of at least {min} bytes (set {variable} or [auth] jwt_secret, {RANDOM_SECRET_HINT})"
                        )),
                        SecretSetting::AppPassword => refusals.push(format!(
                            "{variable} {absent} (the services' database role needs a password of at least {min} bytes; set {variable})"
                        )),
                        SecretSetting::Service => {
                            if let Some(why) = &service_needed {
                                refusals.push(format!(
                                    "{why} and no {variable} is set ({variable} {absent}): give every process of the cluster the same one, at least {min} bytes, {RANDOM_SECRET_HINT}"
                                ));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        // One leaked secret must not open what another guards.
        let ours: Vec<(SecretSetting, &Secret)> = SecretSetting::ALL
            .into_iter()
            .filter(|s| s.min_production().is_some())
            .filter_map(|s| self.secret(s).map(|v| (s, v)))
            .collect();
        for (i, (a, va)) in ours.iter().enumerate() {
            for (b, vb) in &ours[i + 1..] {
                if va == vb {
                    refusals.push(format!(
                        "{} and {} are identical: each guards something else, give each its own random value",
                        a.variable(),
                        b.variable()
                    ));
                }
            }
        }
        if is_loopback_url(&self.http.public_url) {
            refusals.push(format!(
                "http.public_url (PUBLIC_URL) is `{}`, a loopback address: every link sent by mail would point there; set PUBLIC_URL to the address users reach the gateway at, e.g. https://tickets.example.org",
                self.http.public_url
            ));
        }
        // Identity sends verification and reset mail; without SMTP it would write them into
        // the data directory, where nobody reads them.
        let sends_mail = self
            .current_node()
            .map(|n| n.services.contains(&Service::Identity))
            .unwrap_or(true);
        if sends_mail && self.smtp.url.as_deref().is_none_or(|u| u.trim().is_empty()) {
            refusals.push(
                "smtp.url (SMTP_URL) is not set: verification and password-reset mails would be written as files into the data directory instead of being sent; set SMTP_URL=smtp://user:password@relay.internal:25 (plain SMTP, so a relay on the private network)".into(),
            );
        }
        let default_cost = AuthConfig::default().bcrypt_cost;
        if self.auth.bcrypt_cost < default_cost {
            refusals.push(format!(
                "auth.bcrypt_cost (BILET__AUTH__BCRYPT_COST) is {}, below {default_cost}: production does not hash passwords more cheaply than the default; remove the setting",
                self.auth.bcrypt_cost
            ));
        }
        if self.storage.endpoint.is_some() {
            for setting in [
                SecretSetting::StorageAccessKey,
                SecretSetting::StorageSecretKey,
            ] {
                if self.secret(setting).is_none() {
                    refusals.push(format!(
                        "STORAGE_ENDPOINT is set but {} {}: set both storage keys, or remove STORAGE_ENDPOINT to keep media in the data directory",
                        setting.variable(),
                        self.secret_absence(setting)
                    ));
                }
            }
        }
        refusals
    }

    /// Why this configuration needs a SERVICE_SECRET given by the operator rather than one
    /// made up by the process, if it does.
    fn service_secret_needed(&self) -> Option<String> {
        if self.services_leave_loopback() {
            return Some("a service listens on or is reached at a non-loopback address".into());
        }
        // Other processes run the other services, even on this host: they must share it.
        if !Service::ALL.iter().all(|s| self.runs(*s)) {
            return Some(
                "this node runs only part of the services (every process of the cluster needs the same secret)"
                    .into(),
            );
        }
        // A gateway other hosts reach is a real deployment: a secret made up by this process
        // could be shared by no process added later, and its peers could not be checked.
        if let Some(gateway) = self.services.get(&Service::Gateway)
            && !is_loopback_listen(&gateway.listen)
        {
            return Some(format!(
                "the gateway listens on {}, a non-loopback address,",
                gateway.listen
            ));
        }
        None
    }

    /// Production's refusals as an error, all of them.
    pub fn check_production(&self) -> Result<(), ConfigError> {
        match self.production_refusals().as_slice() {
            [] => Ok(()),
            [one] => Err(ConfigError::Unsafe(one.clone())),
            many => Err(ConfigError::Unsafe(format!(
                "\n  - {}",
                many.join("\n  - ")
            ))),
        }
    }

    /// The pool size of this process: its share of `database.max_connections` when the
    /// budget is set, else `database.pool_size`.
    pub fn pool_size(&self) -> usize {
        let budget = self.database.max_connections;
        let Ok(mine) = self.current_node() else {
            return self.database.pool_size;
        };
        if budget == 0 {
            return self.database.pool_size;
        }
        let all: Vec<Vec<Service>> = self.nodes.iter().map(|n| n.services.clone()).collect();
        crate::connections::pool_share(budget, &all, &mine.services, self.committers()) as usize
    }

    fn committers(&self) -> u32 {
        u32::try_from(self.ticketing.committers).unwrap_or(u32::MAX)
    }

    /// The most connections this process opens: its pool and its own sessions.
    pub fn connection_ceiling(&self) -> u32 {
        let services = self
            .current_node()
            .map(|n| n.services.clone())
            .unwrap_or_default();
        crate::connections::ceiling(&services, self.pool_size() as u32, self.committers())
    }

    /// How long a gateway holds a seat request or a read through a hand-over before it answers
    /// 503: until a dead or paused owner's lease runs out — or, when the paused owner held its
    /// lease row in an open transaction, until PostgreSQL ends that idle session — and another
    /// member's next round claims the shard, with a lease's time more for a busy machine
    /// (7.3 s by default).
    pub fn hand_over_wait(&self) -> std::time::Duration {
        let cluster = &self.cluster;
        std::time::Duration::from_millis(
            cluster
                .lease_ttl_ms
                .max(self.database.idle_in_transaction_ms)
                + cluster.lease_ttl_ms
                + cluster.renew_every_ms,
        )
    }

    /// The node this process runs.
    pub fn current_node(&self) -> Result<&NodeConfig, ConfigError> {
        self.nodes
            .iter()
            .find(|n| n.name == self.node)
            .ok_or_else(|| {
                let names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
                ConfigError::UnknownNode(
                    self.node.clone(),
                    if names.is_empty() {
                        "no node (add a [[nodes]] entry)".into()
                    } else {
                        names.join(", ")
                    },
                )
            })
    }

    /// Whether this process runs a service.
    pub fn runs(&self, service: Service) -> bool {
        self.current_node()
            .map(|n| n.services.contains(&service))
            .unwrap_or(false)
    }

    /// The effective configuration as TOML, with secrets and URL passwords masked.
    pub fn to_masked_toml(&self) -> String {
        let mut copy = self.clone();
        copy.database.url = mask_url_password(&copy.database.url);
        copy.broker.url = mask_url_password(&copy.broker.url);
        for url in [
            &mut copy.clickhouse.url,
            &mut copy.redis.url,
            &mut copy.smtp.url,
        ]
        .into_iter()
        .flatten()
        {
            *url = mask_url_password(url);
        }
        toml::to_string(&copy).unwrap_or_else(|e| format!("# cannot render configuration: {e}"))
    }
}

/// Removes every secret that is set but unusable (blank, or a bot token without a bot id) from
/// the merged settings, so the configuration is built as if it had not been given, and says
/// which.
fn drop_unusable_secrets(table: &mut toml::Table) -> Vec<IgnoredSecret> {
    let mut ignored = Vec::new();
    for setting in SecretSetting::ALL {
        let Some((section, key)) = setting.path().split_once('.') else {
            continue;
        };
        let Some(section) = table.get_mut(section).and_then(|v| v.as_table_mut()) else {
            continue;
        };
        // A value of another type is left for deserialization to refuse.
        let why = match section.get(key) {
            Some(toml::Value::String(value)) => setting.unusable(value),
            _ => None,
        };
        if let Some(why) = why {
            section.remove(key);
            ignored.push(IgnoredSecret { setting, why });
        }
    }
    ignored
}

fn env_value(path: &str, raw: &str) -> toml::Value {
    if STRING_SETTINGS.contains(&path) {
        return toml::Value::String(raw.into());
    }
    // A value that parses as TOML (number, boolean, array) keeps its type; anything else,
    // URLs included, is text.
    match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.into()),
    }
}

fn set_path(table: &mut toml::Table, path: &str, value: toml::Value) {
    let mut parts = path.split('.').peekable();
    let mut current = table;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            current.insert(part.to_string(), value);
            return;
        }
        let entry = current
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        match entry.as_table_mut() {
            Some(t) => current = t,
            None => return,
        }
    }
}

/// Whether a listen address (`ip:port` or `host:port`) accepts only local connections.
pub fn is_loopback_listen(listen: &str) -> bool {
    if let Ok(addr) = listen.parse::<std::net::SocketAddr>() {
        return addr.ip().is_loopback();
    }
    let host = listen.rsplit_once(':').map(|(h, _)| h).unwrap_or(listen);
    host.eq_ignore_ascii_case("localhost")
}

/// Whether a base URL (`http://host:port`) points at this machine's loopback.
pub fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split('/').next().unwrap_or("");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Replaces the password of `scheme://user:password@host` with `****`.
pub fn mask_url_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.rsplit_once('@') else {
        return url.to_string();
    };
    match userinfo.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:****@{host}"),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: [(&str, &str); 0] = [];

    #[test]
    fn defaults_describe_one_node_running_everything() {
        let c = Config::load(None, EMPTY).unwrap();
        assert_eq!(c.mode, Mode::Development);
        assert!(Service::ALL.iter().all(|s| c.runs(*s)));
        assert!(
            c.services
                .values()
                .all(|a| a.listen.starts_with("127.0.0.1:")),
            "without cluster.toml nothing listens beyond loopback"
        );
        assert!(!c.services_leave_loopback());
        assert_eq!(c.broker.url, "memory");
    }

    #[test]
    fn environment_overrides_file() {
        let file = r#"
            mode = "production"
            [database]
            url = "postgres://file@db/bilet"
            pool_size = 4
        "#;
        let env = [
            ("DATABASE_URL", "postgres://env:pw@db/bilet"),
            ("BILET__DATABASE__POOL_SIZE", "9"),
            ("JWT_SECRET", "12345"),
            ("BILET__BROKER__MAX_ATTEMPTS", "3"),
            ("UNRELATED", "x"),
        ];
        let c = Config::load(Some(file), env).unwrap();
        assert_eq!(c.mode, Mode::Production);
        assert_eq!(c.database.url, "postgres://env:pw@db/bilet");
        assert_eq!(c.database.pool_size, 9);
        assert_eq!(c.broker.max_attempts, 3);
        assert_eq!(c.auth.jwt_secret.unwrap().expose(), "12345");
    }

    #[test]
    fn printing_masks_secrets_and_passwords() {
        let env = [
            ("DATABASE_URL", "postgres://u:hunter2@db/bilet"),
            ("JWT_SECRET", "topsecret"),
            ("STORAGE_SECRET_KEY", "s3cret"),
            ("BROKER_URL", "amqp://guest:guest@localhost:5672/%2f"),
        ];
        let text = Config::load(None, env).unwrap().to_masked_toml();
        for secret in ["hunter2", "topsecret", "s3cret", "guest@"] {
            assert!(!text.contains(secret), "{secret} leaked in:\n{text}");
        }
        assert!(text.contains("postgres://u:****@db/bilet"));
    }

    const JWT: &str = "Kq3v9XzP2mLw8RtY5nBc7HdJ4fGs6AeU";
    const SERVICE: &str = "r7Tn2Wq9Lk4Vx8Zp3Mc6Hb5Jd1Fg0Sy-";
    const WEBHOOK: &str = "w9Hc4Nq2Zt7Lp5Kv8Xr3Bm6Jd1Fs0Gy_";
    const APP_PASSWORD: &str = "p4Rk8Vw2Nz6Qt9Lx";

    /// A production configuration every check accepts, plus `extra` (later entries win).
    fn production<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
        let mut env = vec![
            ("BILET_MODE", "production"),
            ("JWT_SECRET", JWT),
            ("DATABASE_APP_PASSWORD", APP_PASSWORD),
            ("PUBLIC_URL", "https://tickets.example.org"),
            ("SMTP_URL", "smtp://mailer:secret@mail.example.org:587"),
        ];
        env.extend_from_slice(extra);
        env
    }

    /// The refusals of `file` and `env`, joined (empty when production accepts it).
    fn refusals(file: Option<&str>, env: &[(&str, &str)]) -> String {
        Config::load(file, env.iter().copied())
            .unwrap()
            .production_refusals()
            .join("\n")
    }

    #[test]
    fn production_refuses_what_is_unsafe() {
        assert_eq!(
            refusals(None, &production(&[])),
            "",
            "all on loopback: no service secret needed"
        );

        let short_jwt = refusals(None, &production(&[("JWT_SECRET", "short")]));
        assert!(
            short_jwt.contains("JWT_SECRET must be at least 32 bytes (it has 5)"),
            "{short_jwt}"
        );
        let no_password = refusals(None, &[("BILET_MODE", "production"), ("JWT_SECRET", JWT)]);
        assert!(
            no_password.contains("DATABASE_APP_PASSWORD is not set"),
            "{no_password}"
        );

        let exposed = "node = \"id\"\n[services.identity]\nlisten = \"0.0.0.0:8081\"\nurl = \"http://10.0.0.2:8081\"\n[[nodes]]\nname = \"id\"\nservices = [\"identity\"]\n";
        let err = refusals(Some(exposed), &production(&[]));
        assert!(err.contains("no SERVICE_SECRET"), "{err}");
        assert_eq!(
            refusals(Some(exposed), &production(&[("SERVICE_SECRET", SERVICE)])),
            ""
        );
        let tiny = refusals(Some(exposed), &production(&[("SERVICE_SECRET", "tiny")]));
        assert!(
            tiny.contains("SERVICE_SECRET must be at least 32 bytes"),
            "{tiny}"
        );
        // Identity without SMTP would write its mails into the data directory.
        let no_mail = refusals(None, &production(&[("SMTP_URL", "")]));
        assert!(
            no_mail.contains("smtp.url (SMTP_URL) is not set"),
            "{no_mail}"
        );
        // A node without identity sends no such mail.
        let gateway_only = "node = \"gw\"\n[[nodes]]\nname = \"gw\"\nservices = [\"gateway\"]\n";
        assert!(
            !refusals(Some(gateway_only), &production(&[("SMTP_URL", "")])).contains("SMTP_URL")
        );
        // A node of a cluster on one host still needs the shared secret.
        let part = "node = \"gw\"\n[[nodes]]\nname = \"gw\"\nservices = [\"gateway\"]\n";
        assert!(refusals(Some(part), &production(&[])).contains("SERVICE_SECRET"));
        // Development starts whatever it is given.
        assert!(
            Config::load(Some(exposed), EMPTY)
                .unwrap()
                .check_production()
                .is_ok()
        );
    }

    #[test]
    fn production_refuses_weak_and_shared_secrets() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "JWT_SECRET",
                &"a".repeat(32),
                "JWT_SECRET repeats one pattern",
            ),
            (
                "JWT_SECRET",
                "0123456789abcdef0123456789abcdef",
                "JWT_SECRET repeats one pattern",
            ),
            (
                "JWT_SECRET",
                "test-secret-test-secret-test-secret",
                "JWT_SECRET repeats one pattern",
            ),
            (
                "JWT_SECRET",
                "aaaaaaaaaaaaaaaabbbbbbbbbbbbbbbbcc",
                "JWT_SECRET has only 3 different bytes",
            ),
            (
                "DATABASE_APP_PASSWORD",
                "x",
                "DATABASE_APP_PASSWORD must be at least 16 bytes (it has 1)",
            ),
            (
                "DATABASE_APP_PASSWORD",
                "pppppppppppppppppppp",
                "DATABASE_APP_PASSWORD repeats one pattern",
            ),
            (
                "PAYMENTS_WEBHOOK_SECRET",
                "whsec-short",
                "PAYMENTS_WEBHOOK_SECRET must be at least 32 bytes",
            ),
            (
                "SERVICE_SECRET",
                JWT,
                "JWT_SECRET and SERVICE_SECRET are identical",
            ),
            (
                "PAYMENTS_WEBHOOK_SECRET",
                APP_PASSWORD,
                "PAYMENTS_WEBHOOK_SECRET must be at least 32 bytes",
            ),
        ];
        for (variable, value, expected) in cases {
            let found = refusals(None, &production(&[(variable, value)]));
            assert!(found.contains(expected), "{variable}={value}: {found}");
            assert!(
                found.contains("random value"),
                "each refusal says what to do: {found}"
            );
        }
        let same = refusals(
            None,
            &production(&[
                ("SERVICE_SECRET", WEBHOOK),
                ("PAYMENTS_WEBHOOK_SECRET", WEBHOOK),
            ]),
        );
        assert_eq!(
            same,
            "SERVICE_SECRET and PAYMENTS_WEBHOOK_SECRET are identical: each guards something else, give each its own random value"
        );
        // A long enough webhook secret of its own is accepted.
        assert_eq!(
            refusals(None, &production(&[("PAYMENTS_WEBHOOK_SECRET", WEBHOOK)])),
            ""
        );
        // Every reason is given at once.
        let all = Config::load(
            None,
            [
                ("BILET_MODE", "production"),
                ("JWT_SECRET", "short"),
                ("DATABASE_APP_PASSWORD", "x"),
            ],
        )
        .unwrap()
        .check_production()
        .unwrap_err()
        .to_string();
        for part in ["JWT_SECRET", "DATABASE_APP_PASSWORD", "PUBLIC_URL"] {
            assert!(all.contains(part), "{all}");
        }
    }

    #[test]
    fn production_refuses_a_public_gateway_without_service_secret_a_local_public_url_and_cheap_hashes()
     {
        // The shipped cluster.toml opens the gateway (0.0.0.0:8080), all else on loopback.
        let public_gateway = include_str!("../../cluster.toml");
        let found = refusals(Some(public_gateway), &production(&[]));
        assert!(
            found.contains("the gateway listens on 0.0.0.0:8080, a non-loopback address, and no SERVICE_SECRET is set"),
            "{found}"
        );
        assert_eq!(
            refusals(
                Some(public_gateway),
                &production(&[("SERVICE_SECRET", SERVICE)])
            ),
            ""
        );

        for local in [
            "http://localhost:8080",
            "http://127.0.0.1",
            "https://[::1]/",
        ] {
            let found = refusals(None, &production(&[("PUBLIC_URL", local)]));
            assert!(
                found.contains(&format!(
                    "http.public_url (PUBLIC_URL) is `{local}`, a loopback address"
                )),
                "{found}"
            );
        }
        let cheap = refusals(None, &production(&[("BILET__AUTH__BCRYPT_COST", "4")]));
        assert!(
            cheap.contains("auth.bcrypt_cost (BILET__AUTH__BCRYPT_COST) is 4, below 12"),
            "{cheap}"
        );
        assert_eq!(
            refusals(None, &production(&[("BILET__AUTH__BCRYPT_COST", "13")])),
            ""
        );
        let keyless = refusals(
            None,
            &production(&[
                ("STORAGE_ENDPOINT", "http://garage:3900"),
                ("STORAGE_ACCESS_KEY", "GK31c2f218a2e44f485b94239e"),
                ("STORAGE_SECRET_KEY", " "),
            ]),
        );
        assert_eq!(
            keyless,
            "STORAGE_ENDPOINT is set but STORAGE_SECRET_KEY is set but empty: set both storage keys, or remove STORAGE_ENDPOINT to keep media in the data directory"
        );
    }

    #[test]
    fn wallet_passes_are_configured_from_the_environment_and_their_keys_stay_masked() {
        let pem = "-----BEGIN PRIVATE KEY-----\nAAEC\n-----END PRIVATE KEY-----\n";
        let env = [
            ("WALLET_GOOGLE_ISSUER_ID", "3388000000012345678"),
            (
                "WALLET_GOOGLE_SERVICE_ACCOUNT",
                "passes@x.iam.gserviceaccount.com",
            ),
            ("WALLET_GOOGLE_PRIVATE_KEY", pem),
            ("WALLET_ISSUER_NAME", "Филармония"),
        ];
        let c = Config::load(None, env).unwrap();
        // A number-looking issuer id stays text.
        assert_eq!(c.wallet.google_issuer_id, "3388000000012345678");
        assert!(c.wallet.google_named() && !c.wallet.apple_named());
        assert_eq!(
            c.secret(SecretSetting::GoogleWalletKey).map(Secret::expose),
            Some(pem)
        );
        let printed = c.to_masked_toml();
        assert!(printed.contains("[wallet]") && printed.contains("google_private_key = \"****\""));
        assert!(!printed.contains("AAEC"), "{printed}");
        // Passes are optional: an absent key is missed only once the rest is given.
        let missed = |c: &Config| {
            c.missing_secrets()
                .into_iter()
                .map(|(s, _)| s)
                .filter(|s| {
                    matches!(
                        s,
                        SecretSetting::GoogleWalletKey | SecretSetting::AppleWalletKey
                    )
                })
                .collect::<Vec<_>>()
        };
        assert!(missed(&Config::load(None, EMPTY).unwrap()).is_empty());
        let named = Config::load(
            None,
            [
                ("WALLET_GOOGLE_ISSUER_ID", "1"),
                ("WALLET_GOOGLE_SERVICE_ACCOUNT", "a@b"),
            ],
        )
        .unwrap();
        assert_eq!(missed(&named), vec![SecretSetting::GoogleWalletKey]);
    }

    #[test]
    fn blank_or_malformed_secrets_count_as_absent() {
        let env = [
            ("MESSENGER_BOT_TOKEN", ""),
            ("JWT_SECRET", "   "),
            ("SERVICE_SECRET", "\t"),
            ("PAYMENTS_WEBHOOK_SECRET", ""),
            ("STORAGE_ACCESS_KEY", ""),
            ("STORAGE_SECRET_KEY", " "),
            ("DATABASE_APP_PASSWORD", ""),
            ("YOOKASSA_SECRET_KEY", ""),
            ("STRIPE_SECRET_KEY", " "),
            ("STRIPE_WEBHOOK_SECRET", ""),
            ("PAYMENTS_CREDENTIALS_KEY", ""),
            ("WALLET_GOOGLE_PRIVATE_KEY", ""),
            ("WALLET_APPLE_PRIVATE_KEY", " "),
        ];
        let c = Config::load(None, env).unwrap();
        for setting in SecretSetting::ALL {
            assert_eq!(c.secret(setting), None, "{setting:?}");
            assert_eq!(c.secret_absence(setting), "is set but empty", "{setting:?}");
        }
        assert_eq!(c.notes.ignored_secrets.len(), SecretSetting::ALL.len());
        let missing = c.missing_secrets();
        assert_eq!(missing.len(), SecretSetting::ALL.len(), "{missing:?}");
        let bot = &missing
            .iter()
            .find(|(s, _)| *s == SecretSetting::BotToken)
            .unwrap()
            .1;
        assert!(
            bot.starts_with("MESSENGER_BOT_TOKEN (messenger.bot_token) is set but empty: ")
                && bot.contains("messenger sign-in is refused"),
            "{bot}"
        );

        // A token with no bot id is dropped too; one in the right form is kept.
        for malformed in ["secret", "0:abc", "abc:def", "123:"] {
            let c = Config::load(None, [("MESSENGER_BOT_TOKEN", malformed)]).unwrap();
            assert!(c.messenger.bot_token.is_none(), "{malformed}");
            assert!(
                c.secret_absence(SecretSetting::BotToken)
                    .contains("<bot id>:<secret>")
            );
        }
        let c = Config::load(None, [("MESSENGER_BOT_TOKEN", "123456:AAE-secret")]).unwrap();
        assert_eq!(c.messenger.bot_token.unwrap().expose(), "123456:AAE-secret");

        // The same from cluster.toml.
        let file = "[auth]\njwt_secret = \"\"\n[messenger]\nbot_token = \" \"\n";
        let c = Config::load(Some(file), EMPTY).unwrap();
        assert!(c.auth.jwt_secret.is_none() && c.messenger.bot_token.is_none());
        // Without the loader a blank secret does not deserialize at all.
        assert!(toml::from_str::<AuthConfig>("jwt_secret = \"\"").is_err());
        // Production names the empty one as such.
        let found = refusals(None, &production(&[("JWT_SECRET", "")]));
        assert!(found.contains("JWT_SECRET is set but empty"), "{found}");
        // Storage keys without an endpoint are not needed: not reported unless dropped.
        let c = Config::load(None, EMPTY).unwrap();
        let reported: Vec<SecretSetting> =
            c.missing_secrets().into_iter().map(|(s, _)| s).collect();
        assert!(!reported.contains(&SecretSetting::StorageAccessKey));
        assert!(reported.contains(&SecretSetting::BotToken));
    }

    #[test]
    fn the_loader_notes_whether_the_mode_was_given() {
        assert!(!Config::load(None, EMPTY).unwrap().notes.mode_given);
        assert!(
            Config::load(Some("mode = \"development\""), EMPTY)
                .unwrap()
                .notes
                .mode_given
        );
        assert!(
            Config::load(None, [("BILET_MODE", "development")])
                .unwrap()
                .notes
                .mode_given
        );
    }

    #[test]
    fn an_undescribed_node_names_the_setting_and_the_nodes() {
        let file = "[[nodes]]\nname = \"gateway\"\nservices = [\"gateway\"]\n[[nodes]]\nname = \"identity\"\nservices = [\"identity\"]\n";
        let err = Config::load(Some(file), EMPTY).unwrap_err().to_string();
        assert!(err.contains("node `default` is not described"), "{err}");
        assert!(err.contains("BILET_NODE=<name>"), "{err}");
        assert!(
            err.ends_with("the file describes: gateway, identity"),
            "{err}"
        );
        let err = Config::load(Some("nodes = []"), EMPTY)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no node (add a [[nodes]] entry)"), "{err}");
    }

    #[test]
    fn loopback_addresses() {
        for yes in ["127.0.0.1:8081", "[::1]:8081", "localhost:8081"] {
            assert!(is_loopback_listen(yes), "{yes}");
        }
        for no in ["0.0.0.0:8081", "[::]:8081", "10.0.0.2:8081", "node2:8081"] {
            assert!(!is_loopback_listen(no), "{no}");
        }
        for yes in [
            "http://127.0.0.1:8081",
            "http://[::1]:8081/",
            "http://localhost",
        ] {
            assert!(is_loopback_url(yes), "{yes}");
        }
        for no in [
            "http://10.0.0.2:8081",
            "https://identity.internal",
            "http://[2001:db8::1]:1",
        ] {
            assert!(!is_loopback_url(no), "{no}");
        }
    }

    #[test]
    fn a_connection_is_given_time_to_send_its_request() {
        let c = Config::load(Some("[http]\nidle_connection_seconds = 30"), EMPTY).unwrap();
        assert_eq!(c.http.idle_connection_seconds, 30);
        assert_eq!(
            Config::load(None, EMPTY)
                .unwrap()
                .http
                .idle_connection_seconds,
            75
        );
        let err = Config::load(None, [("BILET__HTTP__IDLE_CONNECTION_SECONDS", "0")])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("http.idle_connection_seconds must be above 0"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_and_nodes_are_refused() {
        assert!(matches!(
            Config::load(Some("[database]\nurll = 'x'"), EMPTY),
            Err(ConfigError::Invalid(_))
        ));
        assert!(matches!(
            Config::load(None, [("BILET_NODE", "nope")]),
            Err(ConfigError::UnknownNode(..))
        ));
        assert!(matches!(
            Config::load(Some("mode = ["), EMPTY),
            Err(ConfigError::Syntax(_))
        ));
    }
}

#[cfg(test)]
mod installation_tests {
    use super::*;

    fn database(url: &str) -> DatabaseConfig {
        DatabaseConfig {
            url: url.into(),
            ..DatabaseConfig::default()
        }
    }

    #[test]
    fn the_database_name_is_read_from_either_form_of_url() {
        for (url, name) in [
            ("postgres://u:pw@db:5432/bilet", "bilet"),
            (
                "postgresql://u@db/shop%2Dtickets?sslmode=disable",
                "shop-tickets",
            ),
            ("postgres://owner@db:5432", "owner"),
            ("postgres://db", "postgres"),
            ("host=db user=owner dbname=events_prod", "events_prod"),
            ("host=db user=owner", "owner"),
        ] {
            assert_eq!(database(url).database_name(), name, "{url}");
        }
    }

    #[test]
    fn the_role_is_derived_from_the_database_and_fits_postgresql() {
        assert_eq!(
            database("postgres://o@db/bilet").app_role_name(),
            "bilet_app_bilet"
        );
        // Different databases whose clean spellings are equal still get different roles.
        let dashed = database("postgres://o@db/my-db").app_role_name();
        let underscored = database("postgres://o@db/my_db").app_role_name();
        assert_eq!(underscored, "bilet_app_my_db");
        assert!(dashed.starts_with("bilet_app_my_db_"), "{dashed}");
        assert_ne!(dashed, underscored);
        let long = "a".repeat(63);
        let role = database(&format!("postgres://o@db/{long}")).app_role_name();
        assert!(role.len() <= 63, "{role}");
        let other = database(&format!("postgres://o@db/{long}b")).app_role_name();
        assert_ne!(role, other, "names cut to 63 bytes must not collide");
        for role in [dashed, role, other] {
            assert!(
                role.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{role}"
            );
        }
        let given = DatabaseConfig {
            app_role: Some("shop_app".into()),
            ..database("postgres://o@db/bilet")
        };
        assert_eq!(given.app_role_name(), "shop_app");
    }

    #[test]
    fn loading_names_the_role_and_the_exchange_after_the_database() {
        let c = Config::load(None, [("DATABASE_URL", "postgres://o@db/shop")]).unwrap();
        assert_eq!(c.database.app_role.as_deref(), Some("bilet_app_shop"));
        assert_eq!(c.broker.exchange, "bilet.shop.events");
        assert_eq!(c.gateway.rate_limit_prefix, "bilet:shop:rl");
        let c = Config::load(
            Some("[broker]\nexchange = \"legacy.events\"\n"),
            [
                ("DATABASE_URL", "postgres://o@db/shop"),
                ("DATABASE_APP_ROLE", "shop_role"),
                ("STORAGE_PUBLIC_ENDPOINT", "https://media.example.org"),
            ],
        )
        .unwrap();
        assert_eq!(c.database.app_role.as_deref(), Some("shop_role"));
        assert_eq!(c.broker.exchange, "legacy.events");
        assert_eq!(
            c.storage.public_endpoint.as_deref(),
            Some("https://media.example.org")
        );
        // A configuration built by hand gets them when named.
        let mut hand = Config::default();
        hand.database.url = "postgres://o@db/other".into();
        hand.name_installation();
        assert_eq!(hand.broker.exchange, "bilet.other.events");
        assert_eq!(hand.gateway.rate_limit_prefix, "bilet:other:rl");
        assert_eq!(hand.database.app_role.as_deref(), Some("bilet_app_other"));
    }
}
