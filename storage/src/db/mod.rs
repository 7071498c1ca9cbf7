//! The PostgreSQL pool. Services connect as the installation's application role
//! (`database.app_role`, `bilet_app_<database>` by default), which owns no table, so row level
//! security applies to every query they make; migrations run as the owner given by
//! `database.url`.

pub mod contention;
mod gate;
mod listen;
mod migrate;
pub mod page;
mod scope;

pub use gate::Connection;
pub use listen::listen;
pub use migrate::{LEGACY_V1_CHECKSUMS, migrate, outbox_by_day_sql, pending};
pub use scope::{Scope, Tx};

use deadpool_postgres::{Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod};
use domain::config::DatabaseConfig;
use std::time::Duration;

/// A failure talking to PostgreSQL.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The URL in the configuration does not parse.
    #[error("database url is invalid: {0}")]
    Url(String),
    /// No connection could be taken from the pool.
    #[error("no database connection: {0}")]
    Pool(#[from] deadpool_postgres::PoolError),
    /// A statement failed.
    #[error("database error: {}", describe(.0))]
    Query(#[from] tokio_postgres::Error),
    /// The connection failed while a COMMIT was on its way: the transaction may or may not
    /// have committed.
    #[error("the outcome of a commit is unknown: {0}")]
    CommitUnknown(tokio_postgres::Error),
    /// The application role is not this installation's to change.
    #[error("{0}")]
    AppRole(String),
    /// A migration failed.
    #[error("migration of schema {schema} failed: {reason}")]
    Migration {
        /// The schema being migrated.
        schema: &'static str,
        /// What went wrong.
        reason: String,
    },
}

/// The server's message and SQLSTATE when there is one; tokio-postgres's own text says only
/// "db error".
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{} ({})", db.message(), db.code().code()),
        None => error.to_string(),
    }
}

impl DbError {
    /// The SQLSTATE of a failed statement, to tell constraint violations from outages.
    pub fn sqlstate(&self) -> Option<&tokio_postgres::error::SqlState> {
        match self {
            DbError::Query(e) => e.code(),
            _ => None,
        }
    }

    /// Whether the database could not be reached or ended the session: worth a retry.
    pub fn is_unavailable(&self) -> bool {
        match self {
            DbError::Pool(_) | DbError::CommitUnknown(_) => true,
            // The session ended under the statement: the server restarted, or it ended a
            // session left idle inside a transaction (a paused process).
            DbError::Query(e) => {
                e.is_closed()
                    || e.code().is_some_and(|c| {
                        c.code().starts_with("57P")
                        || c
                            == &tokio_postgres::error::SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT
                    })
            }
            _ => false,
        }
    }

    /// Whether a transaction may have committed although this call failed (the connection
    /// went while its COMMIT was on the way): what it guarded must not be released for a
    /// second try.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, DbError::CommitUnknown(_))
    }

    /// Whether PostgreSQL aborted the transaction for a lock race it lost (a deadlock, a
    /// serialization failure, a lock wait past `lock_timeout`): run again, it will likely pass.
    pub fn is_contention(&self) -> bool {
        use tokio_postgres::error::SqlState;
        self.sqlstate().is_some_and(|code| {
            [
                SqlState::T_R_DEADLOCK_DETECTED,
                SqlState::T_R_SERIALIZATION_FAILURE,
                SqlState::LOCK_NOT_AVAILABLE,
            ]
            .contains(code)
        })
    }

    /// Whether a unique index refused the write.
    pub fn is_unique_violation(&self) -> bool {
        self.sqlstate() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION)
    }

    /// The constraint or unique index the server named as refusing the write.
    pub fn constraint(&self) -> Option<&str> {
        match self {
            DbError::Query(e) => e.as_db_error().and_then(|db| db.constraint()),
            _ => None,
        }
    }
}

/// The schema each service owns. Only these constants are ever spliced into SQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Schema {
    /// Identity: users, organizations, groups.
    UserService,
    /// Events, ticket types, registrations.
    EventService,
    /// Notification templates, queue and log.
    NotificationService,
    /// Media metadata.
    MediaService,
    /// Analytics rows (embedded store).
    AnalyticsService,
}

impl Schema {
    /// Every schema, in migration order.
    pub const ALL: [Schema; 5] = [
        Schema::UserService,
        Schema::EventService,
        Schema::NotificationService,
        Schema::MediaService,
        Schema::AnalyticsService,
    ];

    /// Its SQL name.
    pub fn name(self) -> &'static str {
        match self {
            Self::UserService => "user_service",
            Self::EventService => "event_service",
            Self::NotificationService => "notification_service",
            Self::MediaService => "media_service",
            Self::AnalyticsService => "analytics_service",
        }
    }

    /// The schema of a name, if it is one of ours.
    pub fn from_name(name: &str) -> Option<Schema> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// The connection pool of one process.
#[derive(Clone)]
pub struct Database {
    pool: Pool,
    gate: std::sync::Arc<gate::Gate>,
    /// How its connections log in (the application role), for connections of their own.
    config: std::sync::Arc<tokio_postgres::Config>,
    settings: PoolSettings,
}

/// How many connections a pool keeps, and for how long.
#[derive(Clone, Copy)]
struct PoolSettings {
    size: usize,
    idle: Duration,
    lifetime: Duration,
    /// Kept open however quiet the pool is (at most `size`).
    warm: usize,
}

/// Closes the pool's connections no one has taken for `idle`, and those older than `lifetime`
/// that are not taken, until the pool is dropped. A process would otherwise keep every
/// connection a burst made it open, holding a share of PostgreSQL's connection limit that the
/// other processes of the installation may need; and the connections a quiet node still uses
/// would keep their buffers, grown to the largest message each ever sent or read, for good.
/// It also gives back the places the gate withheld after refusals, so the pool tries again.
///
/// `warm` of them stay open however quiet the pool is, opened at once and renewed one at a
/// time when they reach their lifetime: a burst after a quiet spell (an on-sale's first
/// second) would otherwise wait for PostgreSQL to start a backend for each of its first
/// requests, while the machine is at its busiest (bench/README.md, thirty-fifth sitting).
async fn close_idle(
    pool: deadpool_postgres::WeakPool,
    gate: std::sync::Arc<gate::Gate>,
    settings: PoolSettings,
) {
    let PoolSettings {
        idle,
        lifetime,
        size,
        warm,
    } = settings;
    let warm = warm.min(size);
    let every = (idle.min(lifetime) / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    loop {
        {
            let Some(pool) = pool.upgrade() else { return };
            let status = pool.status();
            // Those taken now count towards the warm ones: only idle connections are looked at.
            let floor = warm.saturating_sub(status.size.saturating_sub(status.available));
            let mut kept = 0;
            let mut renewed = false;
            pool.retain(|_, used| {
                let young = used.age() < lifetime;
                let keep = if young && used.last_used() < idle {
                    true
                } else if kept >= floor {
                    false
                } else if young {
                    true
                } else {
                    // One warm connection past its lifetime is renewed a round, so they do
                    // not all close together.
                    let first = !renewed;
                    renewed = true;
                    !first
                };
                kept += usize::from(keep);
                keep
            });
            gate.reopen();
            open_warm(&pool, &gate, warm).await;
        }
        tokio::time::sleep(every).await;
    }
}

/// Opens connections until the pool holds `warm` (taken or not); a failure waits for the
/// next round (the server may be down, or have no room for another).
async fn open_warm(pool: &Pool, gate: &gate::Gate, warm: usize) {
    let missing = warm.saturating_sub(pool.status().size);
    let opened = futures_util::future::join_all((0..missing).map(|_| async {
        let client = gate.get(pool, Duration::ZERO).await?;
        client.simple_query("SELECT 1").await?;
        Ok::<_, DbError>(())
    }))
    .await;
    if let Some(Err(e)) = opened.into_iter().find(Result::is_err) {
        tracing::debug!(error = %e, "a warm connection did not open; trying again next round");
    }
}

/// How long a request waits for a connection before it answers 503.
const WAIT: Duration = Duration::from_secs(3);

impl Database {
    /// Builds the pool of application-role connections from the owner URL. Connections open
    /// lazily.
    pub fn connect(config: &DatabaseConfig) -> Result<Database, DbError> {
        let mut pg: tokio_postgres::Config = config
            .url
            .parse()
            .map_err(|e: tokio_postgres::Error| DbError::Url(e.to_string()))?;
        pg.user(config.app_role_name());
        match &config.app_password {
            Some(pw) => pg.password(pw.expose()),
            // With trust or peer authentication no password is needed; never reuse the
            // owner's password for the application role.
            None => pg.password(""),
        };
        pg.application_name("bilet");
        pg.options(format!(
            "-c statement_timeout={} -c idle_in_transaction_session_timeout={}",
            config.statement_timeout_ms, config.idle_in_transaction_ms
        ));
        pg.connect_timeout(Duration::from_secs(5));
        let settings = PoolSettings {
            size: config.pool_size.max(1),
            idle: Duration::from_millis(config.idle_connection_ms.max(1)),
            lifetime: Duration::from_millis(config.connection_lifetime_ms.max(1)),
            warm: config.warm_connections,
        };
        Database::pooled(std::sync::Arc::new(pg), settings)
    }

    fn pooled(
        pg: std::sync::Arc<tokio_postgres::Config>,
        settings: PoolSettings,
    ) -> Result<Database, DbError> {
        let manager = Manager::from_config(
            (*pg).clone(),
            tokio_postgres::NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(settings.size)
            // A request that cannot get a connection waits briefly, then answers 503.
            .wait_timeout(Some(WAIT))
            .create_timeout(Some(Duration::from_secs(5)))
            .recycle_timeout(Some(Duration::from_secs(5)))
            // The connection returned last is taken first, so those a burst opened beyond what
            // the load now needs stay untouched and `close_idle` closes them.
            .queue_mode(QueueMode::Lifo)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(|e| DbError::Url(e.to_string()))?;
        let gate = std::sync::Arc::new(gate::Gate::new(settings.size));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(close_idle(pool.weak(), gate.clone(), settings));
        }
        Ok(Database {
            pool,
            gate,
            config: pg,
            settings,
        })
    }

    /// Another pool of `size` connections with the same login. A connection's I/O is driven by
    /// the runtime that opened it, so work on a runtime of its own (the seat committer) takes
    /// its connections from a pool of its own, made on that runtime.
    pub fn separate(&self, size: usize) -> Result<Database, DbError> {
        let settings = PoolSettings {
            size: size.max(1),
            ..self.settings
        };
        Database::pooled(self.config.clone(), settings)
    }

    /// Connections open in the pool now, taken or not.
    pub fn open_connections(&self) -> usize {
        self.pool.status().size
    }

    /// A login for a long-lived connection of its own (LISTEN), as the application role: no
    /// process needs the owner's credentials to listen.
    pub fn login(&self) -> tokio_postgres::Config {
        (*self.config).clone()
    }

    /// A connection outside any transaction, for infrastructure work (outbox, inbox).
    pub async fn client(&self) -> Result<Connection, DbError> {
        Ok(self.gate.get(&self.pool, WAIT).await?)
    }

    /// Opens a transaction that sees only what `scope` may see.
    pub async fn begin(&self, scope: Scope) -> Result<Tx, DbError> {
        Tx::begin(self.client().await?, scope, "").await
    }

    /// Opens a transaction that sees only what `scope` may see, and runs `first` in it with
    /// the BEGIN sent ahead of `first`'s statements instead of a round trip before them. A
    /// connection answers in the order it was asked, so whatever `first` sends runs inside
    /// the transaction; if the BEGIN fails, `first`'s answer is dropped and so is the
    /// transaction. For a hot path whose first statements are all it reads (a seat batch).
    /// `settings` (constant SQL, transaction-local `SET LOCAL`s) runs right after the BEGIN.
    pub async fn begin_with<T, E: From<DbError>>(
        &self,
        scope: Scope,
        settings: &'static str,
        first: impl AsyncFnOnce(&Tx) -> Result<T, E>,
    ) -> Result<(Tx, T), E> {
        let tx = Tx::unopened(self.client().await?);
        // Biased: polled in the order written, so the BEGIN goes out first.
        let (opened, first) = tokio::join!(biased; tx.open(scope, settings), first(&tx));
        opened?;
        Ok((tx, first?))
    }

    /// A transaction whose commit does not wait for the WAL flush, for bookkeeping whose
    /// loss in a crash is harmless (see `idempotency`).
    pub async fn begin_unflushed(&self, scope: Scope) -> Result<Tx, DbError> {
        Tx::begin(
            self.client().await?,
            scope,
            "SET LOCAL synchronous_commit TO OFF;",
        )
        .await
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), DbError> {
        self.client().await?.simple_query("SELECT 1").await?;
        Ok(())
    }
}
