//! Migrations: one folder per schema under `migrations/`, applied by refinery with a history
//! table inside each schema. The infrastructure tables every schema has (outbox, inbox,
//! idempotency keys) come from one template so they cannot drift apart.

use super::{DbError, Schema};
use refinery_core::{Migration, Runner};
use tokio_postgres::{Client, NoTls};

/// The role services connect as. It owns no table, so row level security binds it.
pub const APP_ROLE: &str = "bilet_app";

/// Arbitrary key of the advisory lock that keeps two processes from migrating at once.
const MIGRATION_LOCK: i64 = 0x000b_11e7_0001;

/// Creates the database if missing, the application role, every schema and applies every
/// pending migration, as the owner in `url`.
pub async fn migrate(url: &str, app_password: Option<&str>) -> Result<(), DbError> {
    ensure_database(url).await?;
    let mut client = connect(url).await?;
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let result = migrate_locked(&mut client, app_password).await;
    // The lock is released with the connection anyway; unlock explicitly for clarity.
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    result
}

async fn migrate_locked(client: &mut Client, app_password: Option<&str>) -> Result<(), DbError> {
    // Roles are cluster-wide and may be created concurrently by another database's migration.
    client
        .batch_execute(&format!(
            "DO $$ BEGIN
               CREATE ROLE {APP_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
             EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
             END $$;"
        ))
        .await?;
    if let Some(password) = app_password {
        client
            .batch_execute(&format!(
                "ALTER ROLE {APP_ROLE} PASSWORD {}",
                quote_literal(password)
            ))
            .await?;
    }
    for schema in Schema::ALL {
        let name = schema.name();
        client
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {name}"))
            .await?;
        let migrations = migrations(schema).map_err(|reason| DbError::Migration {
            schema: name,
            reason,
        })?;
        let mut runner = Runner::new(&migrations);
        runner.set_migration_table_name(format!("{name}.refinery_schema_history"));
        runner
            .run_async(client)
            .await
            .map_err(|e| DbError::Migration {
                schema: name,
                reason: e.to_string(),
            })?;
    }
    // The in-process broker's deliveries belong to no service: a schema of their own.
    client
        .batch_execute("CREATE SCHEMA IF NOT EXISTS broker")
        .await?;
    let failed = |reason: String| DbError::Migration {
        schema: "broker",
        reason,
    };
    let migrations = broker_migrations().map_err(failed)?;
    let mut runner = Runner::new(&migrations);
    runner.set_migration_table_name("broker.refinery_schema_history");
    runner
        .run_async(client)
        .await
        .map_err(|e| failed(e.to_string()))?;
    Ok(())
}

/// The migrations of the `broker` schema (the in-process broker's deliveries), in order.
fn broker_migrations() -> Result<Vec<Migration>, String> {
    [(
        "V1__deliveries",
        include_str!("../../../migrations/broker/V1__deliveries.sql"),
    )]
    .into_iter()
    .map(|(name, sql)| Migration::unapplied(name, sql).map_err(|e| e.to_string()))
    .collect()
}

async fn connect(url: &str) -> Result<Client, DbError> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "migration connection ended");
        }
    });
    Ok(client)
}

async fn ensure_database(url: &str) -> Result<(), DbError> {
    let config: tokio_postgres::Config = url
        .parse()
        .map_err(|e: tokio_postgres::Error| DbError::Url(e.to_string()))?;
    let Some(dbname) = config.get_dbname().map(str::to_owned) else {
        return Ok(());
    };
    let mut maintenance = config.clone();
    maintenance.dbname("postgres");
    let (client, connection) = maintenance.connect(NoTls).await?;
    tokio::spawn(connection);
    let exists = client
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&dbname])
        .await?
        .is_some();
    if !exists {
        let create = format!("CREATE DATABASE {}", quote_ident(&dbname));
        if let Err(e) = client.batch_execute(&create).await {
            // Another process may have created it in the meantime.
            if e.code() != Some(&tokio_postgres::error::SqlState::DUPLICATE_DATABASE) {
                return Err(e.into());
            }
        }
        tracing::info!(database = %dbname, "created database");
    }
    Ok(())
}

fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn quote_ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// The migrations of one schema, in order.
fn migrations(schema: Schema) -> Result<Vec<Migration>, String> {
    let files: &[(&str, &str)] = match schema {
        Schema::UserService => &[
            (
                "V2__users",
                include_str!("../../../migrations/user_service/V2__users.sql"),
            ),
            (
                "V3__identity",
                include_str!("../../../migrations/user_service/V3__identity.sql"),
            ),
            (
                "V4__mail_tokens_hashed",
                include_str!("../../../migrations/user_service/V4__mail_tokens_hashed.sql"),
            ),
            (
                "V5__access_revocations",
                include_str!("../../../migrations/user_service/V5__access_revocations.sql"),
            ),
            (
                "V6__organization_slug_live",
                include_str!("../../../migrations/user_service/V6__organization_slug_live.sql"),
            ),
        ],
        Schema::EventService => &[
            (
                "V2__events",
                include_str!("../../../migrations/event_service/V2__events.sql"),
            ),
            (
                "V3__events_visibility_ticket_types",
                include_str!(
                    "../../../migrations/event_service/V3__events_visibility_ticket_types.sql"
                ),
            ),
            (
                "V4__registrations",
                include_str!("../../../migrations/event_service/V4__registrations.sql"),
            ),
            (
                "V5__seat_requests",
                include_str!("../../../migrations/event_service/V5__seat_requests.sql"),
            ),
            (
                "V6__lifecycles",
                include_str!("../../../migrations/event_service/V6__lifecycles.sql"),
            ),
            (
                "V7__shard_leases",
                include_str!("../../../migrations/event_service/V7__shard_leases.sql"),
            ),
        ],
        Schema::MediaService => &[
            (
                "V2__files",
                include_str!("../../../migrations/media_service/V2__files.sql"),
            ),
            (
                "V3__attachments",
                include_str!("../../../migrations/media_service/V3__attachments.sql"),
            ),
        ],
        Schema::AnalyticsService => &[
            (
                "V2__analytics_events",
                include_str!("../../../migrations/analytics_service/V2__analytics_events.sql"),
            ),
            (
                "V3__recording",
                include_str!("../../../migrations/analytics_service/V3__recording.sql"),
            ),
            (
                "V4__tracked_drafts",
                include_str!("../../../migrations/analytics_service/V4__tracked_drafts.sql"),
            ),
        ],
        Schema::NotificationService => &[
            (
                "V2__preferences",
                include_str!("../../../migrations/notification_service/V2__preferences.sql"),
            ),
            (
                "V3__messenger_links",
                include_str!("../../../migrations/notification_service/V3__messenger_links.sql"),
            ),
            (
                "V4__send_queue",
                include_str!("../../../migrations/notification_service/V4__send_queue.sql"),
            ),
            (
                "V5__zones_tickets_mail",
                include_str!("../../../migrations/notification_service/V5__zones_tickets_mail.sql"),
            ),
        ],
    };
    let mut all = vec![Migration::unapplied(
        "V1__infrastructure",
        &infrastructure_sql(schema.name()),
    )];
    for (name, sql) in files {
        all.push(Migration::unapplied(name, sql));
    }
    all.into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())
}

/// Grants, outbox, inbox and idempotency keys of a schema.
fn infrastructure_sql(s: &str) -> String {
    format!(
        r#"
GRANT USAGE ON SCHEMA {s} TO {APP_ROLE};
ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {APP_ROLE};
ALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT USAGE, SELECT ON SEQUENCES TO {APP_ROLE};

-- Domain events written in the same transaction as the change they describe; the relay
-- publishes them in seq order and stamps published_at once the broker confirmed.
CREATE TABLE {s}.outbox (
    seq          BIGSERIAL PRIMARY KEY,
    id           UUID NOT NULL UNIQUE,
    event_type   TEXT NOT NULL,
    tenant_id    UUID,
    actor_id     UUID,
    occurred_at  TIMESTAMPTZ NOT NULL,
    data         JSONB NOT NULL,
    published_at TIMESTAMPTZ
);
CREATE INDEX outbox_pending ON {s}.outbox (seq) WHERE published_at IS NULL;

-- Event ids each consumer has already applied, so a redelivery changes nothing.
CREATE TABLE {s}.processed_events (
    consumer     TEXT NOT NULL,
    event_id     UUID NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, event_id)
);

-- X-Idempotency-Key: the first response to a key, replayed for the same request.
CREATE TABLE {s}.idempotency_keys (
    owner_id      UUID NOT NULL,
    key           UUID NOT NULL,
    request_hash  BYTEA NOT NULL,
    status        SMALLINT,
    content_type  TEXT,
    response_body BYTEA,
    created_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (owner_id, key)
);
CREATE INDEX idempotency_keys_created ON {s}.idempotency_keys (created_at);
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_has_valid_ordered_migrations() {
        for schema in Schema::ALL {
            let migrations = migrations(schema).unwrap();
            assert_eq!(migrations[0].name(), "infrastructure");
            let versions: Vec<_> = migrations.iter().map(|m| m.version()).collect();
            let mut sorted = versions.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(versions, sorted, "{schema:?} versions must increase");
        }
        assert!(!broker_migrations().unwrap().is_empty());
    }

    #[test]
    fn literals_are_quoted() {
        assert_eq!(quote_literal("a'b"), "'a''b'");
        assert_eq!(quote_ident("we\"ird"), "\"we\"\"ird\"");
    }
}
