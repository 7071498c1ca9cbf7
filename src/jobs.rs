//! The periodic jobs of each service, declared where one can read them side by side; a node
//! runs the jobs of the services it runs (and its own outbox gauge), so a schema is cleaned
//! wherever its service runs and nowhere else.

use domain::config::Service;
use http::AppState;
use std::time::Duration;
use storage::Schema;
use storage::jobs::{Job, Outcome, Schedule};

const MINUTE: Schedule = Schedule::Every(Duration::from_secs(60));
const HOURLY: Schedule = Schedule::Every(Duration::from_secs(3600));
const DAILY: Schedule = Schedule::Every(Duration::from_secs(24 * 3600));
/// How often the outbox backlog gauge is refreshed.
const BACKLOG: Schedule = Schedule::Every(Duration::from_secs(10));
/// Consumers' claims of applied events are kept this many days.
const CLAIMS_KEPT_DAYS: i64 = 30;
/// Analytics records older than this many days are removed.
const ANALYTICS_RETENTION_DAYS: i64 = 365;

/// The jobs of the services this node runs, then the node's own.
pub fn for_node(state: &AppState, services: &[Service]) -> Vec<Job> {
    let mut jobs: Vec<Job> = services
        .iter()
        .flat_map(|service| of_service(state, *service))
        .collect();
    jobs.push(outbox_backlog(state, services));
    if services.iter().any(|service| service.schema().is_some()) {
        jobs.push(forget_claims(state, services));
        jobs.push(prepare_outbox_days(state, services));
        jobs.push(purge_outboxes(state, services));
    }
    jobs
}

/// The jobs one service declares.
pub fn of_service(state: &AppState, service: Service) -> Vec<Job> {
    match service {
        Service::Gateway => Vec::new(),
        Service::Identity => identity(state),
        Service::Events => events(state),
        Service::Notifications => notifications(state),
        Service::Media => media(state),
        Service::Analytics => analytics(state),
    }
}

fn identity(state: &AppState) -> Vec<Job> {
    let s = state.clone();
    vec![
        // Refresh tokens past their expiry, and mail tokens a day past theirs.
        Job::new("identity.expired_tokens", HOURLY, move || {
            let s = s.clone();
            async move { count(storage::identity::sessions::purge_expired(&s.db, s.clock.now()).await) }
        }),
        idempotency_keys("identity.idempotency_keys", state, Schema::UserService),
    ]
}

/// How often the admitter lets visitors of the waiting rooms in: an admission is late by at
/// most this much, and the rate holds whatever it is (`domain::events::waiting_room::owed`).
const ADMITTER: Schedule = Schedule::Every(Duration::from_millis(250));

/// How often the payments worker looks for refunds to send and provider payments to cancel.
const PAYMENTS: Schedule = Schedule::Every(Duration::from_secs(1));

fn events(state: &AppState) -> Vec<Job> {
    let (complete, remind, seats) = (state.clone(), state.clone(), state.clone());
    let (pay, rooms) = (state.clone(), state.clone());
    vec![
        // Refunds due at the provider, and the provider payments of reservations that ended.
        Job::new("events.payments", PAYMENTS, move || {
            let s = pay.clone();
            async move {
                s.payments
                    .run_due(s.clock.now())
                    .await
                    .map(|run| run.refunds + run.cancelled)
                    .map_err(|e| e.to_string())
            }
        }),
        // Published events whose end has passed become completed.
        Job::new("events.complete_ended", MINUTE, move || {
            let s = complete.clone();
            async move { count(storage::events::catalog::complete_ended(&s.db, s.clock.now()).await) }
        }),
        // Reminders of this node's events starting within 24 hours, once each (remembered in
        // the database), under the fence of the shards it holds.
        Job::new("events.reminders", MINUTE, move || {
            let s = remind.clone();
            async move {
                let fence = s.ticketing.ownership().fence();
                count(storage::events::catalog::remind_due(&s.db, &fence, s.clock.now()).await)
            }
        }),
        // Seat requests keep their own idempotency records, with the same lifetime as keys.
        Job::new("events.seat_requests", HOURLY, move || {
            let s = seats.clone();
            async move {
                let hours = s.config.http.idempotency_ttl_hours;
                count(storage::events::seats::purge(&s.db, hours).await)
            }
        }),
        // Waiting rooms: the pre-queue drawn at the on-sale time, visitors let in at each
        // room's rate (every node runs it; a room is worked by one at a time, under its lock).
        Job::new("events.waiting_rooms", ADMITTER, move || {
            let s = rooms.clone();
            async move {
                storage::events::waiting_room::admitter::run(&s.db, s.clock.now())
                    .await
                    // Draws are worth a line in the log; admissions, four times a second, are
                    // counted in each room instead.
                    .map(|run| run.drawn)
                    .map_err(|e| e.to_string())
            }
        }),
        idempotency_keys("events.idempotency_keys", state, Schema::EventService),
    ]
}

fn notifications(state: &AppState) -> Vec<Job> {
    vec![idempotency_keys(
        "notifications.idempotency_keys",
        state,
        Schema::NotificationService,
    )]
}

fn media(state: &AppState) -> Vec<Job> {
    let s = state.clone();
    vec![
        // Files uploaded but never attached, once they are older than a day.
        Job::new(
            "media.cleanup",
            Schedule::DailyAt(domain::media::CLEANUP_AT),
            move || {
                let s = s.clone();
                async move {
                    storage::media::uploads::cleanup(&s.db, &s.objects, s.clock.now())
                        .await
                        .map_err(|e| e.to_string())
                }
            },
        ),
        idempotency_keys("media.idempotency_keys", state, Schema::MediaService),
    ]
}

fn analytics(state: &AppState) -> Vec<Job> {
    let s = state.clone();
    vec![
        Job::new("analytics.retention", DAILY, move || {
            let s = s.clone();
            async move {
                // The store exists on every node that runs the analytics service.
                let Some(parts) = &s.analytics else {
                    return Err("the analytics store is not started".to_string());
                };
                let before = s.clock.now() - chrono::Duration::days(ANALYTICS_RETENTION_DAYS);
                // The store does not say how many records went.
                parts
                    .store
                    .purge(before)
                    .await
                    .map(|()| 0)
                    .map_err(|e| e.to_string())
            }
        }),
        idempotency_keys(
            "analytics.idempotency_keys",
            state,
            Schema::AnalyticsService,
        ),
    ]
}

/// Keys of `X-Idempotency-Key` older than their lifetime, in one service's schema.
fn idempotency_keys(name: &'static str, state: &AppState, schema: Schema) -> Job {
    let s = state.clone();
    Job::new(name, HOURLY, move || {
        let s = s.clone();
        async move {
            let hours = s.config.http.idempotency_ttl_hours;
            count(storage::idempotency::purge(&s.db, schema, hours).await)
        }
    })
}

/// The schemas of the services a node runs.
fn schemas_of(services: &[Service]) -> Vec<Schema> {
    services
        .iter()
        .filter_map(|service| service.schema())
        .filter_map(Schema::from_name)
        .collect()
}

/// Forgets the consumers' claims older than `CLAIMS_KEPT_DAYS` in the schemas of this node's
/// services: two or three claims per registration would otherwise pile up for ever.
fn forget_claims(state: &AppState, services: &[Service]) -> Job {
    let kept = chrono::Duration::days(CLAIMS_KEPT_DAYS);
    in_each_schema(
        "node.processed_events",
        DAILY,
        state,
        services,
        kept,
        |db, schema, before| async move { storage::inbox::forget_older_than(&db, schema, before).await },
    )
}

/// Makes the tables of the outboxes' coming days (`storage::outbox::DAYS_AHEAD`) in the
/// schemas of this node's services, so that a day's events are written to a table of their own.
fn prepare_outbox_days(state: &AppState, services: &[Service]) -> Job {
    in_each_schema(
        "node.outbox_days",
        HOURLY,
        state,
        services,
        chrono::Duration::zero(),
        |db, schema, now| async move { storage::outbox::prepare_days(&db, schema, now).await },
    )
}

/// Forgets the events published more than `storage::outbox::KEEP_PUBLISHED` ago from the
/// outboxes of this node's services, a whole day's table at a time.
fn purge_outboxes(state: &AppState, services: &[Service]) -> Job {
    let kept = storage::outbox::KEEP_PUBLISHED;
    in_each_schema(
        "node.outbox_published",
        HOURLY,
        state,
        services,
        kept,
        |db, schema, before| async move { storage::outbox::purge_published(&db, schema, before).await },
    )
}

/// A job that runs `clean` in each schema of this node's services with the instant `kept`
/// before now, and reports the rows (or tables) it removed or made in all.
fn in_each_schema<F, Fut>(
    name: &'static str,
    schedule: Schedule,
    state: &AppState,
    services: &[Service],
    kept: chrono::Duration,
    clean: F,
) -> Job
where
    F: Fn(storage::Database, Schema, chrono::DateTime<chrono::Utc>) -> Fut
        + Clone
        + Send
        + Sync
        + 'static,
    Fut: std::future::Future<Output = Result<u64, storage::DbError>> + Send + 'static,
{
    let s = state.clone();
    let schemas = schemas_of(services);
    Job::new(name, schedule, move || {
        let (s, schemas, clean) = (s.clone(), schemas.clone(), clean.clone());
        async move {
            let before = s.clock.now() - kept;
            let mut removed = 0u64;
            for schema in schemas {
                removed += clean(s.db.clone(), schema, before)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            count(Ok::<_, String>(removed))
        }
    })
}

/// Keeps `bilet_outbox_backlog` at the number of this node's events the broker has not
/// confirmed yet (a growing figure means the broker is unreachable).
fn outbox_backlog(state: &AppState, services: &[Service]) -> Job {
    let s = state.clone();
    let schemas = schemas_of(services);
    Job::new("node.outbox_backlog", BACKLOG, move || {
        let s = s.clone();
        let schemas = schemas.clone();
        async move {
            let mut total = 0;
            for schema in schemas {
                match storage::outbox::backlog(&s.db, schema).await {
                    Ok(n) => total += n,
                    // Every 10 s: a warning each time the database blinks would drown the log.
                    Err(e) => tracing::debug!(error = %e, "outbox backlog not read"),
                }
            }
            s.metrics.outbox_backlog.set(total);
            // A gauge, not work done: nothing to report.
            Ok(0)
        }
    })
}

/// A count of removed or changed rows as the runner reports it.
fn count<N: TryInto<usize>, E: std::fmt::Display>(result: Result<N, E>) -> Outcome {
    match result {
        Ok(n) => Ok(n.try_into().unwrap_or(usize::MAX)),
        Err(e) => Err(e.to_string()),
    }
}
