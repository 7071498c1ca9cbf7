//! Health endpoints. `/health/live` says the process answers; `/health/ready` says it can do
//! its work: the database and the broker both answer within two seconds, and an events node
//! holds its share of the event shards.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use std::time::Duration;

const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// State of a process or of one dependency.
#[derive(Serialize, utoipa::ToSchema, PartialEq, Eq, Clone, Copy, Debug)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// Working.
    Up,
    /// Not working.
    Down,
}

/// Body of the health endpoints.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Health {
    /// Overall state.
    pub status: Status,
    /// State of each dependency (readiness only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checks: Option<Checks>,
}

/// Dependencies checked for readiness.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Checks {
    /// PostgreSQL.
    pub database: Status,
    /// The message broker.
    pub broker: Status,
    /// On an events node: whether it holds its whole share of the event shards (after a
    /// restart it waits for the leases of its former self to run out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shards: Option<Status>,
}

/// The process is alive.
#[utoipa::path(get, path = "/health/live", tag = "health", responses((status = 200, body = Health)))]
pub async fn live() -> Json<Health> {
    Json(Health {
        status: Status::Up,
        checks: None,
    })
}

/// The process can serve: database and broker answer.
#[utoipa::path(get, path = "/health/ready", tag = "health", responses(
    (status = 200, body = Health, description = "ready"),
    (status = 503, body = Health, description = "a dependency is down"),
))]
pub async fn ready(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let (database, broker) = tokio::join!(
        tokio::time::timeout(CHECK_TIMEOUT, state.db.ping()),
        tokio::time::timeout(CHECK_TIMEOUT, state.broker.ready()),
    );
    let database = if matches!(database, Ok(Ok(()))) {
        Status::Up
    } else {
        Status::Down
    };
    let broker = if matches!(broker, Ok(true)) {
        Status::Up
    } else {
        Status::Down
    };
    let owner = state.ticketing.ownership();
    let shards = owner.takes_part().then(|| {
        if owner.is_settled() {
            Status::Up
        } else {
            Status::Down
        }
    });
    let status = if database == Status::Up && broker == Status::Up && shards != Some(Status::Down) {
        Status::Up
    } else {
        Status::Down
    };
    let code = if status == Status::Up {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        Json(Health {
            status,
            checks: Some(Checks {
                database,
                broker,
                shards,
            }),
        }),
    )
}
