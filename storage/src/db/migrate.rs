//! Migrations: one folder per schema under `migrations/`, applied by refinery with a history
//! table inside each schema. The infrastructure tables every schema has (outbox, inbox,
//! idempotency keys) come from one template so they cannot drift apart.
//!
//! The application role is this installation's own (`DatabaseConfig::app_role_name`): created
//! here with a comment naming the database, and afterwards changed (its password) only when
//! that comment is still there. Roles belong to the whole PostgreSQL server, so a role without
//! the comment is another installation's, or someone's, and is never touched. Its grants are
//! made after the migrations, on every run, rather than inside them: the migrations' text (and
//! so their checksums) no longer depends on the role's name.

use super::{DbError, Schema};
use domain::config::DatabaseConfig;
use refinery_core::{Migration, Runner};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls};

/// Arbitrary key of the advisory lock that keeps two processes from migrating at once.
const MIGRATION_LOCK: i64 = 0x000b_11e7_0001;

/// The schemas holding no service's data, each with migrations of its own.
const SHARED_SCHEMAS: [&str; 2] = ["broker", "platform"];

/// The checksums refinery recorded for each schema's V1 while its text still granted to the
/// fixed role `bilet_app`. An installation migrated then has them in its history: they are
/// taken over for the present text (same tables; the grants now follow the migrations), where
/// any other difference still stops the migration.
pub const LEGACY_V1_CHECKSUMS: [(&str, u64); 6] = [
    ("user_service", LEGACY_USER),
    ("event_service", LEGACY_EVENT),
    ("notification_service", LEGACY_NOTIFICATION),
    ("media_service", LEGACY_MEDIA),
    ("analytics_service", LEGACY_ANALYTICS),
    ("broker", LEGACY_BROKER),
];

const LEGACY_USER: u64 = 14666504465356201427;
const LEGACY_EVENT: u64 = 89589666607446050;
const LEGACY_NOTIFICATION: u64 = 10111248942058097679;
const LEGACY_MEDIA: u64 = 17273738154388133169;
const LEGACY_ANALYTICS: u64 = 5622034444939623662;
const LEGACY_BROKER: u64 = 7080413216470345851;

/// Creates the database if missing, this installation's application role, every schema and
/// applies every pending migration, as the owner in `config.url`.
pub async fn migrate(config: &DatabaseConfig) -> Result<(), DbError> {
    ensure_database(&config.url).await?;
    let mut client = connect(&config.url).await?;
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    let result = migrate_locked(&mut client, config).await;
    // The lock is released with the connection anyway; unlock explicitly for clarity.
    let _ = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .await;
    result
}

/// The migrations not applied yet to the database of `config.url` (`schema/name`), read as
/// its owner without changing anything: a production node that is not told to migrate starts
/// only when there are none.
pub async fn pending(config: &DatabaseConfig) -> Result<Vec<String>, DbError> {
    let client = connect(&config.url).await?;
    let mut pending = Vec::new();
    for (schema, migrations) in every_set()? {
        let table = format!("{schema}.refinery_schema_history");
        let exists: bool = client
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
            .await?
            .get(0);
        let applied: Vec<i32> = if exists {
            client
                .query(&format!("SELECT version FROM {table}"), &[])
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect()
        } else {
            Vec::new()
        };
        for migration in migrations {
            if !applied.contains(&migration.version()) {
                pending.push(format!(
                    "{schema}/V{}__{}",
                    migration.version(),
                    migration.name()
                ));
            }
        }
    }
    Ok(pending)
}

async fn migrate_locked(client: &mut Client, config: &DatabaseConfig) -> Result<(), DbError> {
    let role = config.app_role_name();
    ensure_role(
        client,
        &role,
        &config.database_name(),
        config.app_password.as_ref().map(|p| p.expose()),
    )
    .await?;
    for (schema, migrations) in every_set()? {
        client
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await?;
        adopt_legacy_checksum(client, schema, &migrations[0]).await?;
        let mut runner = Runner::new(&migrations);
        runner.set_migration_table_name(format!("{schema}.refinery_schema_history"));
        runner
            .run_async(client)
            .await
            .map_err(|e| DbError::Migration {
                schema,
                reason: e.to_string(),
            })?;
    }
    grant(client, &role).await
}

/// Every schema with its migrations, in migration order.
fn every_set() -> Result<Vec<(&'static str, Vec<Migration>)>, DbError> {
    let mut sets = Vec::new();
    for schema in Schema::ALL {
        let name = schema.name();
        let migrations = migrations(schema).map_err(|reason| DbError::Migration {
            schema: name,
            reason,
        })?;
        sets.push((name, migrations));
    }
    for schema in SHARED_SCHEMAS {
        let migrations =
            shared_migrations(schema).map_err(|reason| DbError::Migration { schema, reason })?;
        sets.push((schema, migrations));
    }
    Ok(sets)
}

/// The text that marks a role as the application role of `database`.
fn mark(database: &str) -> String {
    format!("bilet application role of database {database}")
}

/// Creates `role` marked as `database`'s, or, when it exists with that mark, sets its
/// password; a role without the mark is refused untouched.
async fn ensure_role(
    client: &mut Client,
    role: &str,
    database: &str,
    password: Option<&str>,
) -> Result<(), DbError> {
    let mark = mark(database);
    let ident = quote_ident(role);
    // Twice at most: another database's migration may create the same (configured) role
    // between our look and our CREATE; the second look then finds its mark.
    for _ in 0..2 {
        let existing = client
            .query_opt(
                "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1",
                &[&role],
            )
            .await?;
        if let Some(row) = existing {
            let comment: Option<String> = row.get(0);
            if comment.as_deref() != Some(mark.as_str()) {
                return Err(DbError::AppRole(foreign_role(
                    role,
                    comment.as_deref(),
                    &mark,
                )));
            }
            if let Some(password) = password {
                client
                    .batch_execute(&format!(
                        "ALTER ROLE {ident} PASSWORD {}",
                        quote_literal(password)
                    ))
                    .await?;
            }
            return Ok(());
        }
        let password = password
            .map(|p| format!(" PASSWORD {}", quote_literal(p)))
            .unwrap_or_default();
        // One transaction: a role never exists without its mark.
        let tx = client.transaction().await?;
        let created = tx
            .batch_execute(&format!(
                "CREATE ROLE {ident} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE{password};
                 COMMENT ON ROLE {ident} IS {};",
                quote_literal(&mark)
            ))
            .await;
        match created {
            Ok(()) => {
                tx.commit().await?;
                tracing::info!(role, database, "created the application role");
                return Ok(());
            }
            Err(e)
                if e.code() == Some(&SqlState::DUPLICATE_OBJECT)
                    || e.code() == Some(&SqlState::UNIQUE_VIOLATION) =>
            {
                drop(tx);
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(DbError::AppRole(format!(
        "the role {role} appeared and vanished while it was being created; run the migration again"
    )))
}

/// Why the existing role `role` is not taken over.
fn foreign_role(role: &str, comment: Option<&str>, mark: &str) -> String {
    let whose = match comment {
        Some(comment) => format!("its comment says \"{comment}\""),
        None => format!(
            "it has no comment marking it as this installation's. If it is this installation's \
             alone (the `bilet_app` of an earlier version, say), mark it as the database owner: \
             COMMENT ON ROLE {} IS {}",
            quote_ident(role),
            quote_literal(mark)
        ),
    };
    format!(
        "the role {role} exists and is not this installation's ({whose}); its password is left \
         alone. Give this installation a role of its own with database.app_role \
         (DATABASE_APP_ROLE), or leave it unset for bilet_app_<database>"
    )
}

/// The app role's rights: using every schema and changing the rows of its tables (not the
/// migration history), now and in tables created later.
async fn grant(client: &Client, role: &str) -> Result<(), DbError> {
    let r = quote_ident(role);
    let mut sql = String::new();
    for schema in Schema::ALL.iter().map(|s| s.name()).chain(SHARED_SCHEMAS) {
        sql.push_str(&format!(
            "GRANT USAGE ON SCHEMA {schema} TO {r};
             GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {r};
             GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {r};
             REVOKE ALL ON {schema}.refinery_schema_history FROM {r};
             ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {r};
             ALTER DEFAULT PRIVILEGES IN SCHEMA {schema} GRANT USAGE, SELECT ON SEQUENCES TO {r};
"
        ));
    }
    for schema in Schema::ALL.iter().map(|s| s.name()) {
        for function in OUTBOX_FUNCTIONS {
            sql.push_str(&format!(
                "GRANT EXECUTE ON FUNCTION {schema}.{function} TO {r};\n"
            ));
        }
    }
    client.batch_execute(&sql).await?;
    Ok(())
}

/// Takes over the V1 checksum an installation recorded before the grants left the migrations.
async fn adopt_legacy_checksum(
    client: &Client,
    schema: &str,
    first: &Migration,
) -> Result<(), DbError> {
    let Some((_, legacy)) = LEGACY_V1_CHECKSUMS.iter().find(|(s, _)| *s == schema) else {
        return Ok(());
    };
    let table = format!("{schema}.refinery_schema_history");
    let exists: bool = client
        .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])
        .await?
        .get(0);
    if !exists {
        return Ok(());
    }
    let adopted = client
        .execute(
            &format!("UPDATE {table} SET checksum = $1 WHERE version = 1 AND checksum = $2"),
            &[&first.checksum().to_string(), &legacy.to_string()],
        )
        .await?;
    if adopted > 0 {
        tracing::info!(
            schema,
            "took over the checksum of V1 from before the configurable role"
        );
    }
    Ok(())
}

/// The migrations of a schema that belongs to no service, in order: `broker` (the in-process
/// broker's deliveries) and `platform` (what processes tell each other).
fn shared_migrations(schema: &str) -> Result<Vec<Migration>, String> {
    let files: &[(&str, &str)] = match schema {
        "broker" => &[
            (
                "V1__deliveries",
                include_str!("../../../migrations/broker/V1__deliveries.sql"),
            ),
            (
                "V2__deliveries_point_at_the_outbox",
                include_str!("../../../migrations/broker/V2__deliveries_point_at_the_outbox.sql"),
            ),
            (
                "V3__deliveries_of_a_publish",
                include_str!("../../../migrations/broker/V3__deliveries_of_a_publish.sql"),
            ),
        ],
        "platform" => &[
            (
                "V1__peers",
                include_str!("../../../migrations/platform/V1__peers.sql"),
            ),
            (
                "V2__peer_connections",
                include_str!("../../../migrations/platform/V2__peer_connections.sql"),
            ),
        ],
        other => return Err(format!("no migrations for schema {other}")),
    };
    files
        .iter()
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
            (
                "V7__idempotency_holder",
                include_str!("../../../migrations/user_service/V7__idempotency_holder.sql"),
            ),
            (
                "V8__session_clients",
                include_str!("../../../migrations/user_service/V8__session_clients.sql"),
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
            (
                "V8__member_secrets",
                include_str!("../../../migrations/event_service/V8__member_secrets.sql"),
            ),
            (
                "V9__idempotency_holder",
                include_str!("../../../migrations/event_service/V9__idempotency_holder.sql"),
            ),
            (
                "V10__member_clocks",
                include_str!("../../../migrations/event_service/V10__member_clocks.sql"),
            ),
            (
                "V11__checkouts_refunds",
                include_str!("../../../migrations/event_service/V11__checkouts_refunds.sql"),
            ),
            (
                "V12__registration_search",
                include_str!("../../../migrations/event_service/V12__registration_search.sql"),
            ),
            (
                "V13__registration_search_off_the_seat_path",
                include_str!(
                    "../../../migrations/event_service/V13__registration_search_off_the_seat_path.sql"
                ),
            ),
            (
                "V14__registration_search_prefixes",
                include_str!(
                    "../../../migrations/event_service/V14__registration_search_prefixes.sql"
                ),
            ),
            (
                "V16__registrations_parents_checked_by_the_seat_lock",
                include_str!(
                    "../../../migrations/event_service/V16__registrations_parents_checked_by_the_seat_lock.sql"
                ),
            ),
            (
                "V17__room_for_new_versions",
                include_str!("../../../migrations/event_service/V17__room_for_new_versions.sql"),
            ),
            (
                "V18__ticket_types_visible_after_the_tenant",
                include_str!(
                    "../../../migrations/event_service/V18__ticket_types_visible_after_the_tenant.sql"
                ),
            ),
            (
                "V19__events_on_sale_by_shard",
                include_str!("../../../migrations/event_service/V19__events_on_sale_by_shard.sql"),
            ),
            (
                "V21__waiting_rooms",
                include_str!("../../../migrations/event_service/V21__waiting_rooms.sql"),
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
            (
                "V4__idempotency_holder",
                include_str!("../../../migrations/media_service/V4__idempotency_holder.sql"),
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
            (
                "V5__idempotency_holder",
                include_str!("../../../migrations/analytics_service/V5__idempotency_holder.sql"),
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
            (
                "V6__idempotency_holder",
                include_str!("../../../migrations/notification_service/V6__idempotency_holder.sql"),
            ),
            (
                "V7__message_buttons",
                include_str!("../../../migrations/notification_service/V7__message_buttons.sql"),
            ),
            (
                "V9__send_log_written_with_its_message",
                include_str!(
                    "../../../migrations/notification_service/V9__send_log_written_with_its_message.sql"
                ),
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
    all.push(Migration::unapplied(
        &format!("V{}__outbox_by_day", outbox_by_day_version(schema)),
        &outbox_by_day_sql(schema.name()),
    ));
    all.push(Migration::unapplied(
        &format!("V{}__outbox_half_pages", outbox_half_pages_version(schema)),
        &outbox_half_pages_sql(schema.name()),
    ));
    let mut all = all
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    all.sort_by_key(|m| m.version());
    Ok(all)
}

/// The migration that partitions the outbox of `schema` by day, the same in every schema
/// (public for the test of an installation's upgrade).
pub fn outbox_by_day_sql(schema: &str) -> String {
    include_str!("../../../migrations/every_service/outbox_by_day.sql").replace("{s}", schema)
}

/// The version `outbox_by_day_sql` has in each schema: the one after its files of the time.
fn outbox_by_day_version(schema: Schema) -> u32 {
    match schema {
        Schema::UserService => 9,
        Schema::EventService => 15,
        Schema::MediaService => 5,
        Schema::AnalyticsService => 6,
        Schema::NotificationService => 8,
    }
}

/// The version of `outbox_half_pages_sql` in each schema: after every migration before it.
fn outbox_half_pages_version(schema: Schema) -> u32 {
    match schema {
        Schema::UserService => 10,
        Schema::EventService => 20,
        Schema::MediaService => 6,
        Schema::AnalyticsService => 7,
        Schema::NotificationService => 10,
    }
}

/// The migration that keeps half of each page of the outbox's tables for the row's rewrite.
fn outbox_half_pages_sql(schema: &str) -> String {
    include_str!("../../../migrations/every_service/outbox_half_pages.sql").replace("{s}", schema)
}

/// The functions of `outbox_by_day_sql` the application calls: they run as the owner.
const OUTBOX_FUNCTIONS: [&str; 2] = [
    "outbox_cover(TIMESTAMPTZ, TIMESTAMPTZ)",
    "outbox_drop_published(TIMESTAMPTZ)",
];

/// Outbox, inbox and idempotency keys of a schema (the grants are made by `grant`).
fn infrastructure_sql(s: &str) -> String {
    format!(
        r#"
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
        for schema in SHARED_SCHEMAS {
            assert!(!shared_migrations(schema).unwrap().is_empty(), "{schema}");
        }
    }

    #[test]
    fn literals_are_quoted() {
        assert_eq!(quote_literal("a'b"), "'a''b'");
        assert_eq!(quote_ident("we\"ird"), "\"we\"\"ird\"");
    }
}

#[cfg(test)]
mod legacy {
    use super::*;

    /// The V1 texts as they were, rebuilt from today's: the grant lines were their only
    /// difference, so taking their checksums over changes nothing else.
    fn legacy_v1(schema: &str) -> String {
        let grants = |s: &str| {
            format!(
                "GRANT USAGE ON SCHEMA {s} TO bilet_app;\nALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO bilet_app;\nALTER DEFAULT PRIVILEGES IN SCHEMA {s} GRANT USAGE, SELECT ON SEQUENCES TO bilet_app;\n"
            )
        };
        match Schema::from_name(schema) {
            Some(_) => format!("\n{}{}", grants(schema), infrastructure_sql(schema)),
            None => {
                let today = include_str!("../../../migrations/broker/V1__deliveries.sql");
                let (head, rest) = today.split_at(today.find("\nCREATE TABLE").unwrap_or(0));
                format!(
                    "{head}--\n-- The grants name the application role (storage::db::APP_ROLE) because this schema belongs\n-- to no service and so gets no infrastructure template.\n{}{rest}",
                    grants(schema)
                )
            }
        }
    }

    #[test]
    fn the_legacy_checksums_are_those_of_the_former_texts() {
        for (schema, checksum) in LEGACY_V1_CHECKSUMS {
            let name = if schema == "broker" {
                "V1__deliveries"
            } else {
                "V1__infrastructure"
            };
            let former = Migration::unapplied(name, &legacy_v1(schema)).unwrap();
            assert_eq!(former.checksum(), checksum, "{schema}");
            let today = every_set().unwrap();
            let (_, migrations) = today.iter().find(|(s, _)| *s == schema).unwrap();
            assert_ne!(
                migrations[0].checksum(),
                checksum,
                "{schema} no longer names bilet_app"
            );
            assert!(
                !migrations[0]
                    .sql()
                    .unwrap_or_default()
                    .contains("bilet_app"),
                "{schema}"
            );
        }
    }
}
