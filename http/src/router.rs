//! Router assembly: the gateway on :8080 and one router per service on its own port. In one
//! process the gateway mounts the service routers directly.

use crate::conventions;
use crate::gateway;
use crate::health;
use crate::metrics;
use crate::openapi;
use crate::state::AppState;
use axum::Router;
use axum::middleware;
use axum::routing::get;
use domain::config::Service;

/// The API routes of a service (without health and metrics).
pub fn api_routes(service: Service, _state: &AppState) -> Router<AppState> {
    // Each service step adds its routes here.
    match service {
        Service::Identity => crate::identity::routes(),
        Service::Gateway
        | Service::Events
        | Service::Notifications
        | Service::Media
        | Service::Analytics => Router::new(),
    }
}

fn operational_routes() -> Router<AppState> {
    Router::new()
        .route("/health/live", get(health::live))
        .route("/health/ready", get(health::ready))
}

fn finish(router: Router<AppState>, state: AppState, name: &'static str) -> Router {
    let metrics_state = state.metrics.clone();
    let body_limit = state.config.http.json_body_limit;
    let router = router
        .route(
            "/metrics",
            get(metrics::serve).with_state(metrics_state.clone()),
        )
        .with_state(state)
        .layer(middleware::from_fn_with_state(
            (metrics_state, name),
            metrics::record,
        ));
    conventions::apply(router, body_limit)
}

/// The router a service listens with on its own port.
pub fn service(service: Service, state: AppState) -> Router {
    let router = operational_routes().merge(api_routes(service, &state));
    finish(router, state, service.name())
}

/// The gateway: health, metrics, the OpenAPI document and every service's API in-process.
pub fn gateway(state: AppState, services: &[Service]) -> Router {
    let mut router = operational_routes().route("/api/v1/openapi.json", get(openapi::serve));
    for service in services.iter().filter(|s| **s != Service::Gateway) {
        router = router.merge(api_routes(*service, &state));
    }
    // The door: applied inside the conventions so refusals carry correlation ids and speak
    // the client's language.
    let router = router.layer(middleware::from_fn_with_state(
        state.tokens.clone(),
        gateway::authenticate,
    ));
    finish(router, state, "gateway")
}
