//! Starts what this node runs: migrations, the pool, the broker, the outbox relay, and one
//! listener per service (the gateway included) as cluster.toml describes.

use actors::cluster::{Membership, MembershipSettings, Ownership, ShardMap};
use actors::media::{MediaWorkers, VariantArgs};
use actors::ticketing::{ReservationTimer, Ticketing};
use anyhow::Context;
use domain::clock::{Clock, SystemClock};
use domain::config::{Config, Mode, Service};
use http::AppState;
use http::gateway::Door;
use http::metrics::Metrics;
use http::ratelimit::{Counter, MemoryCounter, Network, RateLimiter, RedisCounter};
use http::state::{Analytics, Notifications};
use http::tokens::Tokens;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use storage::Schema;
use storage::mail::Mailer;
use storage::media::objects::Objects;
use storage::outbox::{Relay, RelayHandle};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running node.
pub struct Node {
    /// Shared state of the node's services.
    pub state: AppState,
    /// Where each service listens (useful when ports were chosen by the OS).
    pub addrs: BTreeMap<Service, SocketAddr>,
    relay: RelayHandle,
    shutdown: watch::Sender<bool>,
    servers: Vec<JoinHandle<()>>,
    jobs: Vec<JoinHandle<()>>,
    /// The membership loop: it leaves the cluster (hands its shards back) last.
    cluster: Vec<JoinHandle<()>>,
    cluster_stop: watch::Sender<bool>,
    /// The life line: let go last.
    life: JoinHandle<()>,
    life_stop: watch::Sender<bool>,
}

impl Node {
    /// Leaves the events cluster while still serving (its shards handed over, requests for
    /// them forwarded to their new owners until the gateways' maps have moved), then stops
    /// accepting requests, lets running ones finish and stops the relay.
    pub async fn stop(self) {
        // The membership stops using its shards (their actors stop, waiting seat requests
        // answer "moved" and the gateways send them again) and gives them back.
        let _ = self.cluster_stop.send(true);
        for membership in self.cluster {
            let _ = membership.await;
        }
        if self.state.ticketing.ownership().takes_part() {
            await_successors(&self.state).await;
        }
        let _ = self.shutdown.send(true);
        for server in self.servers {
            let _ = server.await;
        }
        // A job run under way is let finish before the parts it uses stop.
        for job in self.jobs {
            let _ = job.await;
        }
        // Servers are drained, so no seat request waits on an actor any more.
        self.state.ticketing.stop_all().await;
        if let Some(media) = &self.state.media {
            media.stop();
        }
        // Writes what tracking accepted and has not written yet.
        if let Some(analytics) = &self.state.analytics {
            analytics.ingest.stop().await;
        }
        // Claimed messages not sent yet go back to the queue.
        if let Some(notifications) = &self.state.notifications {
            notifications.queue.stop().await;
        }
        self.relay.stop().await;
        let _ = self.life_stop.send(true);
        let _ = self.life.await;
    }
}

/// Waits, within the hand-over time, until every shard has an owner again (when another
/// member is alive to take them), and a renewal's time more for the gateways to read the map:
/// until then this node still answers and forwards what they send it.
async fn await_successors(state: &AppState) {
    let cluster = &state.config.cluster;
    let renewal = Duration::from_millis(cluster.renew_every_ms);
    let deadline = tokio::time::Instant::now() + state.config.hand_over_wait();
    loop {
        let others =
            storage::cluster::live_members(&state.db, Duration::from_millis(cluster.lease_ttl_ms))
                .await
                .map(|m| !m.is_empty())
                .unwrap_or(false);
        if !others {
            return;
        }
        let owned = storage::cluster::map(&state.db)
            .await
            .is_ok_and(|shards| shards.iter().all(|s| s.owner.is_some()));
        if owned || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(renewal).await;
    }
    tokio::time::sleep(renewal).await;
}

/// Runs the node until SIGINT or SIGTERM. `migrate` (`bilet serve --migrate`) applies pending
/// migrations first; without it a production node only checks that there are none, since a
/// migration is a step of the deployment, not something each process does by surprise.
pub async fn serve(config: Config, migrate: bool) -> anyhow::Result<()> {
    let migrate = migrate || config.mode == Mode::Development;
    let node = start_with(config, Arc::new(SystemClock), migrate).await?;
    wait_for_signal().await;
    tracing::info!("shutting down");
    node.stop().await;
    Ok(())
}

/// Starts the node and returns once every listener is bound.
pub async fn start(config: Config) -> anyhow::Result<Node> {
    start_with_clock(config, Arc::new(SystemClock)).await
}

/// Starts the node with a given clock (tests move time with a manual one). Development
/// migrates the database; production checks it is migrated.
pub async fn start_with_clock(config: Config, clock: Arc<dyn Clock>) -> anyhow::Result<Node> {
    let migrate = config.mode == Mode::Development;
    start_with(config, clock, migrate).await
}

/// Starts the node, applying pending migrations first when `migrate`, otherwise refusing to
/// start unless there are none.
pub async fn start_with(
    mut config: Config,
    clock: Arc<dyn Clock>,
    migrate: bool,
) -> anyhow::Result<Node> {
    // A configuration built by hand (tests, embedding) has not been through `Config::load`.
    config.name_installation();
    if config
        .auth
        .service_secret
        .as_ref()
        .is_none_or(|s| s.expose().is_empty())
    {
        // A configuration built without `bilet serve`'s loading (tests, embedding): a secret
        // of this process alone, shared by its gateway and services.
        let bytes: [u8; 32] = rand::random();
        config.auth.service_secret = Some(domain::config::Secret::new(hex_encode(&bytes)));
    }
    let node_config = config.current_node()?.clone();
    if migrate {
        storage::db::migrate(&config.database)
            .await
            .context("cannot migrate the database (is PostgreSQL running at DATABASE_URL?)")?;
    } else {
        let pending = storage::db::pending(&config.database).await.context(
            "cannot read the database's migrations (is PostgreSQL running at DATABASE_URL?)",
        )?;
        if !pending.is_empty() {
            anyhow::bail!(
                "the database is not at the latest migration ({} pending: {}): run `bilet migrate` first, or start with `bilet serve --migrate`",
                pending.len(),
                pending.join(", ")
            );
        }
    }
    // The pool is this process's share of the installation's connection budget, when set.
    let db = storage::Database::connect(&domain::config::DatabaseConfig {
        pool_size: config.pool_size(),
        ..config.database.clone()
    })?;
    let broker = storage::broker::open(&config.broker, &db).await?;
    let mailer = Mailer::new(
        config.smtp.url.as_deref(),
        &config.smtp.from,
        config.data_dir.join("mail"),
    )?;
    let secret = config
        .auth
        .jwt_secret
        .as_ref()
        .map(|s| s.expose().to_string())
        .context("no JWT secret: set JWT_SECRET")?;
    let objects = Objects::from_config(&config).context("media storage configuration")?;
    let media = if node_config.services.contains(&Service::Media) {
        Some(
            MediaWorkers::start(VariantArgs {
                db: db.clone(),
                objects: objects.clone(),
                clock: clock.clone(),
            })
            .await
            .context("cannot start the media variant worker")?,
        )
    } else {
        None
    };
    let analytics = if node_config.services.contains(&Service::Analytics) {
        Some(start_analytics(&config, &db).await?)
    } else {
        None
    };
    let metrics = Metrics::new();
    // An events node joins the cluster under a name of this incarnation: a restarted process
    // never inherits the leases (and epochs) of the one before it.
    let runs_events = node_config.services.contains(&Service::Events);
    // Computed once: without a service secret it is random, and this process's gateway must
    // trust this process's events node.
    let fingerprint = secrets_fingerprint(&config);
    let membership = if runs_events {
        let addr = config
            .address(&node_config, Service::Events)
            .context("the events service has no address")?;
        let incarnation: u32 = rand::random();
        let settings = MembershipSettings {
            node: format!("{}-{:08x}", node_config.name, incarnation),
            address: addr.url.clone(),
            renew_every: Duration::from_millis(config.cluster.renew_every_ms),
            lease_ttl: Duration::from_millis(config.cluster.lease_ttl_ms),
            fingerprint: fingerprint.clone(),
        };
        let node = settings.node.clone();
        // Heartbeats and renewals get connections of their own (and a thread of their own,
        // `Membership::start`): a burst that keeps every pooled connection busy must not make
        // the node miss its renewals and lose its shards.
        let cluster_db = storage::Database::connect(&domain::config::DatabaseConfig {
            pool_size: 2,
            ..config.database.clone()
        })?;
        let (membership, held, counts) = Membership::new(cluster_db, settings);
        let membership = membership.with_clock(clock.clone());
        Some((membership, Ownership::new(node, held, counts)))
    } else {
        None
    };
    let ownership = membership
        .as_ref()
        .map(|(_, owner)| owner.clone())
        .unwrap_or_else(Ownership::none);
    if let Some((_, owner)) = &membership {
        metrics.follow_cluster(owner.clone());
    }
    let shard_map = node_config
        .services
        .contains(&Service::Gateway)
        .then(|| ShardMap::new(fingerprint));
    let notifications = if node_config.services.contains(&Service::Notifications) {
        Some(start_notifications(&config, &db, &metrics).await?)
    } else {
        None
    };
    let config = Arc::new(config);
    let state = AppState::new(http::state::Parts {
        db: db.clone(),
        broker: broker.clone(),
        config: config.clone(),
        metrics,
        clock: clock.clone(),
        mailer,
        tokens: Arc::new(Tokens::new(&secret)),
        ticketing: Arc::new(Ticketing::new(
            db.clone(),
            clock.clone(),
            &config.ticketing,
            ownership.clone(),
            Duration::from_millis(config.cluster.renew_every_ms),
        )),
        shard_map: shard_map.clone(),
        objects,
        media,
        analytics,
        notifications,
        peers: http::peers::Peers::new(&config),
        life_line: storage::liveness::LifeLine::new(),
        payments: payments::Payments::from_config(&config, db.clone()),
        wallets: Arc::new(
            messenger::tickets::Wallets::from_config(&config.wallet, &config.http.public_url)
                .context("cannot set up wallet passes ([wallet] settings)")?,
        ),
        rooms: Default::default(),
    });

    let schemas: Vec<Schema> = node_config
        .services
        .iter()
        .filter_map(|s| s.schema())
        .filter_map(Schema::from_name)
        .collect();
    for subscription in crate::consumers::for_node(&state, &node_config.services) {
        let name = subscription.consumer.clone();
        broker
            .subscribe(subscription)
            .await
            .with_context(|| format!("cannot subscribe the consumer {name}"))?;
    }
    let relay = Relay::new(
        db,
        broker,
        schemas,
        Duration::from_millis(config.broker.relay_poll_ms.max(10)),
    )
    .start();

    let (shutdown, shutdown_rx) = watch::channel(false);
    let jobs = storage::jobs::start(
        crate::jobs::for_node(&state, &node_config.services),
        state.clock.clone(),
        shutdown_rx.clone(),
    );
    let mut servers = Vec::new();
    // Announced before serving, so the first readiness check of every peer counts this one.
    if let Err(why) = state.peers.check(&state.db).await {
        tracing::warn!(reason = %why, "this process does not agree with its peers");
    }
    servers.push(tokio::spawn(
        state
            .peers
            .clone()
            .run(state.db.clone(), shutdown_rx.clone()),
    ));
    // Held for as long as the process lives, from before it takes its first keyed request
    // until its last has ended.
    let (life_stop, life_stop_rx) = watch::channel(false);
    let life = tokio::spawn(state.life_line.clone().run(state.db.login(), life_stop_rx));
    let mut cluster = Vec::new();
    let (cluster_stop, cluster_stop_rx) = watch::channel(false);
    if let Some((membership, owner)) = membership {
        // The first round before serving: a fresh cluster's node starts with its share.
        cluster.push(membership.start(cluster_stop_rx).await);
        let timer = ReservationTimer::new(
            state.db.clone(),
            state.clock.clone(),
            owner,
            state.ticketing.deadlines(),
        );
        servers.push(tokio::spawn(timer.run(shutdown_rx.clone())));
        // The actors follow the shards: stopped when one is lost.
        servers.push(tokio::spawn(
            state.ticketing.clone().follow(shutdown_rx.clone()),
        ));
    }
    if let Some(map) = shard_map {
        let poll = Duration::from_millis(config.cluster.map_poll_ms.max(50));
        let timeout = Duration::from_millis(config.cluster.lease_ttl_ms);
        if let Err(e) = map.refresh(&state.db, timeout).await {
            tracing::warn!(error = %e, "shard map not read yet");
        }
        servers.push(tokio::spawn(map.run(
            state.db.clone(),
            poll,
            timeout,
            shutdown_rx.clone(),
        )));
    }
    // The gateway's memory of revoked tokens, read once before it serves.
    let revocations = node_config
        .services
        .contains(&Service::Gateway)
        .then(|| http::revocations::RevocationFeed::new(state.db.clone()));
    if let Some(feed) = &revocations {
        servers.push(feed.clone().start(shutdown_rx.clone()).await);
    }
    let mut addrs = BTreeMap::new();
    for service in &node_config.services {
        let addr = &config
            .address(&node_config, *service)
            .with_context(|| format!("{} has no address", service.name()))?
            .listen;
        let resolved = tokio::net::lookup_host(addr)
            .await
            .with_context(|| format!("{} cannot listen on {addr}", service.name()))?
            .next()
            .with_context(|| {
                format!(
                    "{} cannot listen on {addr}: it names no address",
                    service.name()
                )
            })?;
        let listener = http::serve::listen(resolved)
            .with_context(|| format!("{} cannot listen on {addr}", service.name()))?;
        let local = listener.local_addr()?;
        addrs.insert(*service, local);
        let router = match service {
            Service::Gateway => {
                let revocations = revocations
                    .clone()
                    .context("the gateway's revocation feed")?;
                let door = door(&state, revocations).await?;
                http::router::gateway(state.clone(), door, &node_config.services)
            }
            other => http::router::service(*other, state.clone()),
        };
        let stop = shutdown_rx.clone();
        let idle = Duration::from_secs(config.http.idle_connection_seconds);
        tracing::info!(service = service.name(), %local, "listening");
        servers.push(tokio::spawn(http::serve::serve(
            listener, router, idle, stop,
        )));
    }
    if let Some(parts) = state
        .notifications
        .as_ref()
        .filter(|_| config.messenger.poll_updates)
    {
        // Invites are accepted by the identity service: this process's when it runs here.
        let identity = match addrs.get(&Service::Identity) {
            Some(local) => format!("http://{local}"),
            None => config
                .services
                .get(&Service::Identity)
                .map(|a| a.url.clone())
                .unwrap_or_default(),
        };
        let bot = messenger::bot::Bot {
            db: state.db.clone(),
            telegram: parts.telegram.clone(),
            queue: parts.queue.clone(),
            invites: messenger::invites::Invites::new(
                &identity,
                config
                    .auth
                    .service_secret
                    .as_ref()
                    .map(|s| s.expose().as_bytes())
                    .unwrap_or_default(),
            ),
            clock: state.clock.clone(),
            username: config.messenger.bot_username.trim().to_string(),
            poll_timeout: config.messenger.poll_timeout_secs,
        };
        servers.push(tokio::spawn(bot.run(shutdown_rx.clone())));
    }
    Ok(Node {
        state,
        addrs,
        relay,
        shutdown,
        servers,
        jobs,
        cluster,
        cluster_stop,
        life,
        life_stop,
    })
}

/// The gateway's token check and rate limits; counts go to Redis when REDIS_URL is set.
async fn door(
    state: &AppState,
    revocations: Arc<http::revocations::RevocationFeed>,
) -> anyhow::Result<Door> {
    let gateway = &state.config.gateway;
    let counter: Box<dyn Counter> = match &state.config.redis.url {
        Some(url) => Box::new(
            RedisCounter::connect(url, &gateway.rate_limit_prefix)
                .await
                .map_err(|e| anyhow::anyhow!("cannot reach Redis at REDIS_URL: {e}"))?,
        ),
        None => Box::new(MemoryCounter::default()),
    };
    let mut trusted = Vec::new();
    for entry in &gateway.trusted_proxies {
        trusted.push(
            Network::parse(entry).with_context(|| {
                format!("gateway.trusted_proxies: `{entry}` is not an IP or CIDR")
            })?,
        );
    }
    let limiter = Arc::new(RateLimiter::new(counter, state.clock.clone(), gateway));
    // Redis expires its keys itself; only counts kept in memory need letting go.
    if state.config.redis.url.is_none() {
        tokio::spawn(http::ratelimit::forget_ended_windows(Arc::downgrade(
            &limiter,
        )));
    }
    Ok(Door {
        tokens: state.tokens.clone(),
        limiter,
        trusted: Arc::new(trusted),
        revocations,
    })
}

/// The analytics store the configuration names (ClickHouse when `clickhouse.url` is set,
/// `http://host:8123/?database=name`, database `bilet` by default) and its ingest actor.
async fn start_analytics(config: &Config, db: &storage::Database) -> anyhow::Result<Analytics> {
    let store = match &config.clickhouse.url {
        Some(url) => {
            let (base, database) = match url.split_once("?database=") {
                Some((base, db)) => (base.to_string(), db.to_string()),
                None => (url.clone(), "bilet".to_string()),
            };
            let store = analytics::store::clickhouse::ClickHouseStore::new(&base, &database);
            store.migrate().await.context(
                "cannot prepare the ClickHouse tables (is ClickHouse running at CLICKHOUSE_URL?)",
            )?;
            analytics::store::Store::ClickHouse(store)
        }
        None => {
            analytics::store::Store::Postgres(analytics::store::postgres::PgStore::new(db.clone()))
        }
    };
    let ingest = analytics::ingest::Ingest::start(store.clone())
        .await
        .context("cannot start the analytics ingest")?;
    Ok(Analytics { store, ingest })
}

/// The messenger and the send queue's actor (which takes up what an earlier process queued).
async fn start_notifications(
    config: &Config,
    db: &storage::Database,
    metrics: &Metrics,
) -> anyhow::Result<Notifications> {
    let telegram = messenger::Telegram::from_config(&config.messenger)?;
    if !telegram.is_on() {
        tracing::info!(
            "no MESSENGER_BOT_TOKEN: the bot is off and notifications are logged as skipped"
        );
    }
    let counters = messenger::SendCounters::new()?;
    metrics.register(Box::new(counters.0.clone()));
    let queue = messenger::SendQueue::start(messenger::SenderArgs {
        db: db.clone(),
        telegram: telegram.clone(),
        config: config.messenger.clone(),
        counters,
    })
    .await
    .context("cannot start the notification send queue")?;
    Ok(Notifications { queue, telegram })
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn wait_for_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(term) => term,
                Err(_) => {
                    let _ = ctrl_c.await;
                    return;
                }
            };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}

/// This process's fingerprint of the cluster secrets. Without a service secret it signs with a
/// random one (`Trust::from_config`) and so matches no other member, as its answers would not.
pub fn secrets_fingerprint(config: &domain::config::Config) -> String {
    let given = |secret: &Option<domain::config::Secret>| {
        secret
            .as_ref()
            .map(|s| s.expose().as_bytes().to_vec())
            .filter(|s| !s.is_empty())
    };
    let service =
        given(&config.auth.service_secret).unwrap_or_else(|| rand::random::<[u8; 32]>().to_vec());
    let jwt = given(&config.auth.jwt_secret).unwrap_or_default();
    domain::trust::cluster_fingerprint(&service, &jwt)
}
