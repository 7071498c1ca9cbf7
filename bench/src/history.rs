//! The history of a platform that has sold registrations for a week, seeded straight into a
//! benchmark's database with SQL (the owner connection), so that a burst can be measured
//! against full tables instead of empty ones (`HISTORY` of the `outside` benchmark).
//!
//! For `n` registrations, of one tenant of their own: `ceil(n / 10,000)` COMPLETED events
//! (started and ended in the past), each with one ticket type of 10,000 seats whose
//! `sold_count` is its registrations; `n` CONFIRMED registrations made over the past week;
//! what each left behind as the burst's registrations do: its seat request (idempotency
//! record, all within the purge's 24 hours: the worst case), its `registration.created` outbox
//! row (written, then stamped published as the relay does, within the relay's 7 days), the
//! claims of the `notifications` and `analytics` consumers, its participant and its SKIPPED
//! ticket message (with its send log) in the notification service, and its
//! `registration.completed` analytics record with `PAGE_VIEWS` page views (the node of
//! `outside` keeps analytics in PostgreSQL). The events are also in the notification service's
//! and analytics' projections.
//!
//! Ids are time-ordered (UUIDv7 at the row's time, as the services make them), so the burst's
//! new ids land after the history in the indexes as they would in production; confirmation
//! codes are distinct by construction and drawn from the services' alphabet. Rows are written
//! in slices of `SLICE` registrations (a few `INSERT … SELECT` over a temporary table each),
//! then the tables are vacuumed and analyzed so the burst does not pay for the load's hint
//! bits, visibility map or missing statistics, and a checkpoint is asked for so the load's WAL
//! is not flushed during the burst.

use anyhow::Context;
use chrono::{DateTime, Utc};
use domain::analytics::TrackType;
use domain::contract::Kind as EventKind;
use domain::events::registrations::{CODE_ALPHABET, RegistrationStatus};
use domain::notifications::Kind as MessageKind;
use domain::notifications::delivery::SkipReason;
use std::time::Instant;
use tokio_postgres::Client;
use uuid::Uuid;

/// Registrations per seeded event: its one ticket type's seats.
pub const PER_EVENT: usize = 10_000;

/// Registrations written per round of statements.
pub const SLICE: usize = 200_000;

/// Page views recorded per registration, besides its registration record.
pub const PAGE_VIEWS: i64 = 3;

/// The most registrations seeded: codes are a bijection of the index, computed in `int8`.
pub const MAX: usize = 100_000_000;

/// The notification service's consumer (`messenger::consumers::Notifier::NAME`).
const NOTIFICATIONS: &str = "notifications";

/// The analytics consumer (`analytics::consumers::Recorder::NAME`).
const ANALYTICS: &str = "analytics";

/// The tables seeded: vacuumed and analyzed afterwards, their sizes printed.
pub const TABLES: [&str; 13] = [
    "event_service.events",
    "event_service.ticket_types",
    "event_service.registrations",
    "event_service.seat_requests",
    "event_service.outbox",
    "notification_service.processed_events",
    "notification_service.events",
    "notification_service.participants",
    "notification_service.messages",
    "notification_service.send_log",
    "analytics_service.processed_events",
    "analytics_service.analytics_events",
    "analytics_service.tracked_events",
];

/// The session: row level security passes (`app.system`, for an owner that is no superuser),
/// commits do not wait for the disk, and temporary tables and functions of the seeding.
const SETUP: &str = r#"
SET app.system = 'on';
SET synchronous_commit = off;
DROP TABLE IF EXISTS pg_temp.history_events;
DROP TABLE IF EXISTS pg_temp.history_slice;
CREATE TEMP TABLE history_events (
    k              int8 PRIMARY KEY,
    event_id       uuid NOT NULL,
    ticket_type_id uuid NOT NULL,
    tenant_id      uuid NOT NULL,
    organizer_id   uuid NOT NULL,
    title          text NOT NULL,
    slug           text NOT NULL,
    created_at     timestamptz NOT NULL,
    published_at   timestamptz NOT NULL,
    starts_at      timestamptz NOT NULL,
    ends_at        timestamptz NOT NULL,
    quantity       int4 NOT NULL,
    sold           int4 NOT NULL
);
CREATE TEMP TABLE history_slice (
    i               int8 NOT NULL,
    k               int8 NOT NULL,
    registration_id uuid NOT NULL,
    outbox_id       uuid NOT NULL,
    user_id         uuid NOT NULL,
    key             uuid NOT NULL,
    code            text NOT NULL,
    at              timestamptz NOT NULL,
    requested_at    timestamptz NOT NULL
);
-- A UUIDv7 of the time `at`: its milliseconds in the first 48 bits, version 7, random rest.
CREATE OR REPLACE FUNCTION pg_temp.history_uuid7(at timestamptz) RETURNS uuid
LANGUAGE sql VOLATILE AS $$
    SELECT encode(set_byte(overlay(b PLACING substring(int8send(floor(extract(epoch FROM at) * 1000)::int8) FROM 3)
                                   FROM 1 FOR 6),
                           6, (get_byte(b, 6) & 15) | 112), 'hex')::uuid
    FROM (SELECT uuid_send(gen_random_uuid()) AS b) r
$$;
-- When registration `i` of `n` was made: evenly over the week before `anchor`, 3 hours clear
-- of both ends (the relay deletes published outbox rows after 7 days).
CREATE OR REPLACE FUNCTION pg_temp.history_at(i int8, n int8, anchor timestamptz) RETURNS timestamptz
LANGUAGE sql STABLE AS $$
    SELECT anchor - interval '7 days' + interval '3 hours' + (i::float8 / n::float8) * interval '162 hours'
$$;
"#;

/// The events, one per `$6` registrations: created a day before their first registration,
/// published an hour later, started an hour after their last and ended an hour after that.
/// $1 events, $2 registrations, $3 anchor, $4 tenant, $5 organizer, $6 per event.
const EVENTS_FILL: &str = r#"
INSERT INTO history_events (k, event_id, ticket_type_id, tenant_id, organizer_id, title, slug,
                            created_at, published_at, starts_at, ends_at, quantity, sold)
SELECT k, pg_temp.history_uuid7(t.created), pg_temp.history_uuid7(t.created + interval '1 minute'),
       $4::uuid, $5::uuid, 'History ' || (k + 1), 'history-' || (k + 1),
       t.created, t.created + interval '1 hour', t.last + interval '1 hour', t.last + interval '2 hours',
       $6::int8::int4, least($6::int8, $2::int8 - k * $6::int8)::int4
FROM generate_series(0::int8, $1::int8 - 1) AS k,
     LATERAL (SELECT pg_temp.history_at(k * $6::int8, $2::int8, $3::timestamptz) - interval '1 day' AS created,
                     pg_temp.history_at(least((k + 1) * $6::int8, $2::int8) - 1, $2::int8, $3::timestamptz) AS last) AS t
"#;

/// The events in the event service and in the projections of notifications and analytics.
const EVENTS_COPY: &str = r#"
INSERT INTO event_service.events (id, tenant_id, organizer_id, title, slug, status, starts_at, ends_at,
                                  timezone, published_at, created_at, updated_at, reminder_sent_at)
SELECT event_id, tenant_id, organizer_id, title, slug, 'COMPLETED', starts_at, ends_at,
       'UTC', published_at, created_at, ends_at, starts_at - interval '24 hours'
FROM history_events ORDER BY k;
INSERT INTO event_service.ticket_types (id, tenant_id, event_id, name, quantity, sold_count, created_at, updated_at)
SELECT ticket_type_id, tenant_id, event_id, 'Standard', quantity, sold, created_at, ends_at
FROM history_events ORDER BY k;
INSERT INTO notification_service.events (event_id, tenant_id, title, slug, starts_at, updated_at, timezone)
SELECT event_id, tenant_id, title, slug, starts_at, published_at, 'UTC' FROM history_events ORDER BY k;
INSERT INTO analytics_service.tracked_events (event_id, tenant_id, published_at, draft, status_at)
SELECT event_id, tenant_id, published_at, false, published_at FROM history_events ORDER BY k;
"#;

/// Registrations `$1` to `$2` (excluded) of `$3`: ids, people, idempotency keys, times and
/// confirmation codes. A code is `(i × m + c) mod 2^40` (m odd: distinct for every i) written
/// in the 32 symbols of `$6`, most significant first. Seat requests are spread over the last
/// 23 hours (the purge keeps 24). $4 anchor, $5 per event.
const SLICE_FILL: &str = r#"
INSERT INTO history_slice (i, k, registration_id, outbox_id, user_id, key, code, at, requested_at)
SELECT i, i / $5::int8, pg_temp.history_uuid7(t.at), pg_temp.history_uuid7(t.at), gen_random_uuid(), gen_random_uuid(),
       substr($6::text, ((c.x >> 35) & 31)::int4 + 1, 1) || substr($6::text, ((c.x >> 30) & 31)::int4 + 1, 1)
    || substr($6::text, ((c.x >> 25) & 31)::int4 + 1, 1) || substr($6::text, ((c.x >> 20) & 31)::int4 + 1, 1)
    || substr($6::text, ((c.x >> 15) & 31)::int4 + 1, 1) || substr($6::text, ((c.x >> 10) & 31)::int4 + 1, 1)
    || substr($6::text, ((c.x >> 5) & 31)::int4 + 1, 1) || substr($6::text, (c.x & 31)::int4 + 1, 1),
       t.at, $4::timestamptz - interval '23 hours' + (i::float8 / $3::int8::float8) * interval '22 hours'
FROM generate_series($1::int8, $2::int8 - 1) AS i,
     LATERAL (SELECT pg_temp.history_at(i, $3::int8, $4::timestamptz) AS at) AS t,
     LATERAL (SELECT (i * 42403961751 + 25214903917) & 1099511627775 AS x) AS c
"#;

/// $1 the registrations' status.
const REGISTRATIONS: &str = r#"
INSERT INTO event_service.registrations (id, tenant_id, event_id, ticket_type_id, user_id, confirmation_code,
                                         status, price_cents, currency, created_at, updated_at)
SELECT s.registration_id, e.tenant_id, e.event_id, e.ticket_type_id, s.user_id, s.code,
       $1::text, 0, 'RUB', s.at, s.at
FROM history_slice s JOIN history_events e USING (k) ORDER BY s.i
"#;

const SEAT_REQUESTS: &str = r#"
INSERT INTO event_service.seat_requests (tenant_id, user_id, key, request_hash, outcome, registration_id, created_at)
SELECT e.tenant_id, s.user_id, s.key, sha256(uuid_send(s.key)), 'CREATED', s.registration_id, s.requested_at
FROM history_slice s JOIN history_events e USING (k) ORDER BY s.i
"#;

/// The payload as `domain::contract::events::Registration` writes it, not yet published. $1 the
/// event type, $2 the registrations' status.
const OUTBOX: &str = r#"
INSERT INTO event_service.outbox (id, event_type, tenant_id, actor_id, occurred_at, data)
SELECT s.outbox_id, $1::text, e.tenant_id, s.user_id, s.at,
       jsonb_build_object(
           'registrationId', s.registration_id, 'eventId', e.event_id, 'ticketTypeId', e.ticket_type_id,
           'userId', s.user_id, 'email', NULL, 'firstName', '', 'lastName', '',
           'confirmationCode', s.code, 'status', $2::text, 'priceCents', 0, 'currency', 'RUB',
           'expiresAt', NULL, 'cancellationReason', NULL, 'source', NULL,
           'event', jsonb_build_object('eventId', e.event_id, 'title', e.title, 'startsAt', e.starts_at,
                                       'endsAt', e.ends_at, 'timezone', 'UTC', 'locationAddress', NULL,
                                       'locationUrl', NULL, 'slug', e.slug))
FROM history_slice s JOIN history_events e USING (k) ORDER BY s.i
"#;

/// The relay's stamp on the rows `OUTBOX` wrote: each row of a day's table is written and then
/// rewritten once, and the old versions it leaves are what the table's pages are made of.
const OUTBOX_PUBLISHED: &str = r#"
UPDATE event_service.outbox o SET published_at = s.at + interval '50 milliseconds'
FROM history_slice s WHERE o.id = s.outbox_id
"#;

/// $1 the consumer.
const NOTIFICATION_CLAIMS: &str = r#"
INSERT INTO notification_service.processed_events (consumer, event_id, processed_at)
SELECT $1::text, s.outbox_id, s.at + interval '100 milliseconds' FROM history_slice s ORDER BY s.i
"#;

/// $1 the consumer.
const ANALYTICS_CLAIMS: &str = r#"
INSERT INTO analytics_service.processed_events (consumer, event_id, processed_at)
SELECT $1::text, s.outbox_id, s.at + interval '100 milliseconds' FROM history_slice s ORDER BY s.i
"#;

/// The registration's record (its id the broker event's, as the consumer writes it) and `$4`
/// page views by an anonymous visitor in the half hour before. $1 the registration's type,
/// $2 the page view's, $3 the registrations' status.
const ANALYTICS_EVENTS: &str = r#"
INSERT INTO analytics_service.analytics_events (id, tenant_id, event_type, event_id, user_id, properties,
                                                created_at, day, ticket_type, source, status, viewer)
SELECT s.outbox_id, e.tenant_id, $1::text, e.event_id, s.user_id,
       jsonb_build_object('registrationId', s.registration_id, 'ticketTypeId', e.ticket_type_id,
                          'status', $3::text, 'currency', 'RUB'),
       a.at, (a.at AT TIME ZONE 'UTC')::date, e.ticket_type_id::text, 'direct', $3::text, s.user_id::text
FROM history_slice s JOIN history_events e USING (k),
     LATERAL (SELECT date_trunc('second', s.at) AS at) AS a
UNION ALL
SELECT pg_temp.history_uuid7(v.at), e.tenant_id, $2::text, e.event_id, NULL,
       jsonb_build_object('visitorId', v.visitor), v.at, (v.at AT TIME ZONE 'UTC')::date, '', 'direct', '',
       'v:' || v.visitor
FROM history_slice s JOIN history_events e USING (k),
     generate_series(1::int8, $4::int8) AS j,
     LATERAL (SELECT date_trunc('second', s.at - j::float8 * interval '7 minutes') AS at,
                     md5(s.user_id::text) AS visitor) AS v
"#;

const PARTICIPANTS: &str = r#"
INSERT INTO notification_service.participants (registration_id, tenant_id, event_id, user_id, first_name,
                                               confirmation_code, price_cents, currency, active, updated_at,
                                               ticket_sent_at)
SELECT s.registration_id, e.tenant_id, e.event_id, s.user_id, '', s.code, 0, 'RUB', true,
       s.at + interval '100 milliseconds', s.at + interval '100 milliseconds'
FROM history_slice s JOIN history_events e USING (k) ORDER BY s.i
"#;

/// The ticket each registration's event queued, skipped (no bot: `outside` runs without a
/// token), and its line in the send log. $1 the message kind, $2 the skip reason.
const MESSAGES: &str = r#"
WITH m AS (
    INSERT INTO notification_service.messages (id, tenant_id, user_id, kind, source_event_id, text, ticket_code,
                                               status, attempts, next_attempt_at, reason, created_at, finished_at)
    SELECT pg_temp.history_uuid7(p.at), e.tenant_id, s.user_id, $1::text, s.outbox_id,
           format('Your ticket to «%s», %s UTC. Show this code at the entrance: %s', e.title,
                  to_char(e.starts_at AT TIME ZONE 'UTC', 'DD.MM.YYYY HH24:MI'), s.code),
           s.code, 'SKIPPED', 0, p.at, $2::text, p.at, p.at
    FROM history_slice s JOIN history_events e USING (k),
         LATERAL (SELECT s.at + interval '100 milliseconds' AS at) AS p
    ORDER BY s.i
    RETURNING id, tenant_id, user_id, kind, reason, created_at
)
INSERT INTO notification_service.send_log (message_id, tenant_id, user_id, chat_id, kind, attempt, outcome, reason, at)
SELECT id, tenant_id, user_id, NULL, kind, 0, 'SKIPPED', reason, created_at FROM m
"#;

/// Row estimates (after ANALYZE) and total sizes, indexes and TOAST included, of `$1`; a
/// partitioned table (the outbox) sums its partitions.
const SIZES: &str = r#"
SELECT t.name, sum(greatest(c.reltuples, 0))::int8, sum(pg_total_relation_size(c.oid))::int8,
       pg_size_pretty(sum(pg_total_relation_size(c.oid)))
FROM unnest($1::text[]) WITH ORDINALITY AS t (name, ord)
CROSS JOIN LATERAL pg_partition_tree(t.name::regclass) p
JOIN pg_class c ON c.oid = p.relid
WHERE p.isleaf
GROUP BY t.name, t.ord
ORDER BY t.ord
"#;

/// Seeds the history of `n` registrations through `client`, an owner connection to the
/// database a node has migrated, printing its progress, how long it took and the tables'
/// sizes afterwards. Leaves the session with `app.system` on and `synchronous_commit` off.
pub async fn seed(client: &Client, n: usize) -> anyhow::Result<()> {
    anyhow::ensure!(
        n > 0 && n <= MAX,
        "HISTORY must be from 1 to {MAX} registrations"
    );
    for consumer in [NOTIFICATIONS, ANALYTICS] {
        anyhow::ensure!(
            bilet::consumers::NAMES.contains(&consumer),
            "no consumer is named `{consumer}` any more: update bench/src/history.rs"
        );
    }
    let started = Instant::now();
    client
        .batch_execute(SETUP)
        .await
        .context("history: temporary tables and functions")?;
    let anchor: DateTime<Utc> = client.query_one("SELECT now()", &[]).await?.get(0);
    // The outbox's tables of the week's days, as a node running through that week made them
    // (one that started today has only today's and the days ahead). A build from before the
    // days has one table (measuring it against one with them is the point of a before run).
    let days: bool = client
        .query_one(
            "SELECT to_regproc('event_service.outbox_cover') IS NOT NULL",
            &[],
        )
        .await?
        .get(0);
    if days {
        client
            .query_one(
                "SELECT event_service.outbox_cover($1::timestamptz - interval '8 days', $1)",
                &[&anchor],
            )
            .await
            .context("history: the outbox's tables of the past week")?;
    }
    let total = n as i64;
    let per_event = PER_EVENT as i64;
    let events = n.div_ceil(PER_EVENT) as i64;
    let tenant = Uuid::now_v7();
    let organizer = Uuid::now_v7();
    let alphabet = std::str::from_utf8(CODE_ALPHABET).context("the code alphabet")?;
    let confirmed = RegistrationStatus::Confirmed.as_str();
    let created = EventKind::RegistrationCreated.as_str();
    let completed = TrackType::RegistrationCompleted.as_str();
    let page_view = TrackType::PageView.as_str();
    let ticket = MessageKind::RegistrationConfirmed.as_str();
    let skipped = SkipReason::BotDisabled.as_str();
    client
        .execute(
            EVENTS_FILL,
            &[&events, &total, &anchor, &tenant, &organizer, &per_event],
        )
        .await
        .context("history: events")?;
    client
        .batch_execute(EVENTS_COPY)
        .await
        .context("history: events, ticket types and projections")?;
    let mut lo: i64 = 0;
    while lo < total {
        let hi = (lo + SLICE as i64).min(total);
        client.batch_execute("TRUNCATE history_slice").await?;
        client
            .execute(
                SLICE_FILL,
                &[&lo, &hi, &total, &anchor, &per_event, &alphabet],
            )
            .await
            .context("history: slice")?;
        client
            .execute(REGISTRATIONS, &[&confirmed])
            .await
            .context("history: registrations")?;
        client
            .execute(SEAT_REQUESTS, &[])
            .await
            .context("history: seat requests")?;
        // One transaction: the node's relay must never see the rows unpublished.
        client.batch_execute("BEGIN").await?;
        client
            .execute(OUTBOX, &[&created, &confirmed])
            .await
            .context("history: outbox")?;
        client
            .execute(OUTBOX_PUBLISHED, &[])
            .await
            .context("history: outbox published")?;
        client.batch_execute("COMMIT").await?;
        client
            .execute(NOTIFICATION_CLAIMS, &[&NOTIFICATIONS])
            .await
            .context("history: notification claims")?;
        client
            .execute(ANALYTICS_CLAIMS, &[&ANALYTICS])
            .await
            .context("history: analytics claims")?;
        client
            .execute(
                ANALYTICS_EVENTS,
                &[&completed, &page_view, &confirmed, &PAGE_VIEWS],
            )
            .await
            .context("history: analytics records")?;
        client
            .execute(PARTICIPANTS, &[])
            .await
            .context("history: participants")?;
        client
            .execute(MESSAGES, &[&ticket, &skipped])
            .await
            .context("history: messages and send log")?;
        lo = hi;
        println!(
            "history: {lo} of {total} registrations written ({:.1} s)",
            started.elapsed().as_secs_f64()
        );
    }
    client
        .batch_execute("DROP TABLE history_slice; DROP TABLE history_events")
        .await?;
    let written = started.elapsed();
    for table in TABLES {
        client
            .batch_execute(&format!("VACUUM ANALYZE {table}"))
            .await
            .with_context(|| format!("history: VACUUM ANALYZE {table}"))?;
    }
    let vacuumed = started.elapsed();
    // Needs superuser or pg_checkpoint: without it, a checkpoint of the load's WAL may fall
    // inside the burst.
    if let Err(e) = client.batch_execute("CHECKPOINT").await {
        println!("history: no CHECKPOINT after the load ({e}): one may fall inside the burst");
    }
    let checkpointed = started.elapsed();
    println!(
        "history: {total} registrations of {events} past events seeded in {:.1} s (rows {:.1} s, VACUUM ANALYZE {:.1} s, CHECKPOINT {:.1} s)\n",
        checkpointed.as_secs_f64(),
        written.as_secs_f64(),
        (vacuumed - written).as_secs_f64(),
        (checkpointed - vacuumed).as_secs_f64(),
    );
    let names: Vec<&str> = TABLES.to_vec();
    let rows = client
        .query(SIZES, &[&names])
        .await
        .context("history: table sizes")?;
    println!("| table | rows (estimate) | total size |\n|---|---|---|");
    let mut bytes: i64 = 0;
    for row in rows {
        let (name, tuples, size, pretty): (String, i64, i64, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        bytes += size;
        println!("| {name} | {tuples} | {pretty} |");
    }
    println!("| all | | {:.1} MB |\n", bytes as f64 / (1024.0 * 1024.0));
    Ok(())
}
