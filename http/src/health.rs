//! Health endpoints. `/health/live` says the process answers; `/health/ready` says it can do
//! its work: the database and the broker both answer within two seconds, an events node
//! holds its share of the event shards, and its service secret is the one its peers use
//! (`crate::peers`), so it can verify their calls and they its own.

use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use std::collections::BTreeMap;
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
    /// Why a check is DOWN, by check, where there is more to say than DOWN.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub reasons: BTreeMap<&'static str, String>,
    /// What the operator should fix although the process is ready (readiness only): e.g.
    /// `connections`, when the processes' pools together can exceed what PostgreSQL allows.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub warnings: BTreeMap<&'static str, String>,
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
    /// Whether this process's service secret is the one its live peers use (the most
    /// common fingerprint among the processes of the installation).
    pub peers: Status,
}

/// The process is alive.
#[utoipa::path(get, path = "/health/live", tag = "health", responses((status = 200, body = Health)))]
pub async fn live() -> Json<Health> {
    Json(Health {
        status: Status::Up,
        checks: None,
        reasons: BTreeMap::new(),
        warnings: BTreeMap::new(),
    })
}

/// The process can serve: database and broker answer, its peers share its secret.
#[utoipa::path(get, path = "/health/ready", tag = "health", responses(
    (status = 200, body = Health, description = "ready"),
    (status = 503, body = Health, description = "a dependency is down"),
))]
pub async fn ready(State(state): State<AppState>) -> (StatusCode, Json<Health>) {
    let (database, broker, peers, connections) = tokio::join!(
        tokio::time::timeout(CHECK_TIMEOUT, state.db.ping()),
        tokio::time::timeout(CHECK_TIMEOUT, state.broker.ready()),
        tokio::time::timeout(CHECK_TIMEOUT, state.peers.check(&state.db)),
        tokio::time::timeout(CHECK_TIMEOUT, state.peers.connection_warning(&state.db)),
    );
    let mut warnings = BTreeMap::new();
    if let Ok(Some(warning)) = connections {
        warnings.insert("connections", warning);
    }
    let mut reasons = BTreeMap::new();
    let peers = match peers {
        Ok(Ok(())) => Status::Up,
        Ok(Err(why)) => {
            reasons.insert("peers", why);
            Status::Down
        }
        Err(_) => {
            reasons.insert(
                "peers",
                "the other processes could not be read in time".into(),
            );
            Status::Down
        }
    };
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
        let counts = owner.counts();
        if counts.refused {
            reasons.insert(
                "shards",
                "this node's SERVICE_SECRET or JWT_SECRET differ from the cluster's".into(),
            );
        }
        if counts.skewed {
            reasons.insert(
                "shards",
                "this node's clock differs from the database's by more than a second".into(),
            );
        }
        if owner.is_settled() {
            Status::Up
        } else {
            Status::Down
        }
    });
    let status = if database == Status::Up
        && broker == Status::Up
        && shards != Some(Status::Down)
        && peers == Status::Up
    {
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
                peers,
            }),
            reasons,
            warnings,
        }),
    )
}
