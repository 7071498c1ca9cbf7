//! Router assembly: the gateway on :8080 and one router per service on its own port. In one
//! process the gateway mounts the service routers directly.

use crate::conventions;
use crate::gateway::{self, Door};
use crate::health;
use crate::metrics;
use crate::openapi;
use crate::proxy;
use crate::state::AppState;
use axum::Router;
use axum::middleware;
use axum::routing::get;
use domain::config::Service;
use std::time::Duration;

/// The API routes of a service (without health and metrics).
pub fn api_routes(service: Service, state: &AppState) -> Router<AppState> {
    // Innermost: a handler whose transaction lost a lock race runs again before the
    // idempotency record or the client sees its answer.
    let retried =
        |routes: Router<AppState>| routes.layer(middleware::from_fn(crate::contention::retry));
    // Each service step adds its routes here.
    match service {
        Service::Identity => retried(crate::identity::routes()),
        Service::Events => retried(crate::events::routes())
            .layer(axum::middleware::from_fn_with_state(
                crate::idempotency::Idempotency {
                    db: state.db.clone(),
                    schema: storage::Schema::EventService,
                    body_limit: state.config.http.json_body_limit,
                    holder: state.life_line.clone(),
                },
                crate::idempotency::layer,
            ))
            // Not `retried`: a seat request's lock races are its ticket type's actor's, which
            // runs its group commit again itself; holding the body and copying the request
            // for a replay would cost every seat request and never replay one.
            .merge(crate::events::self_idempotent_routes())
            // Outermost: a request for an event of a shard held elsewhere goes there as it is.
            .layer(axum::middleware::from_fn_with_state(
                state.clone(),
                crate::events::owner::route_to_owner,
            )),
        Service::Media => retried(crate::media::routes()),
        Service::Analytics => retried(crate::analytics::routes()),
        Service::Notifications => retried(crate::notifications::routes()),
        Service::Gateway => Router::new(),
    }
}

fn operational_routes() -> Router<AppState> {
    Router::new()
        .route("/health/live", get(health::live))
        .route("/health/ready", get(health::ready))
}

/// Adds metrics and the shared layers; `router` already has its fallbacks.
fn finish(router: Router<AppState>, state: AppState, name: &'static str) -> Router {
    let metrics_state = state.metrics.clone();
    let body_limit = state.config.http.json_body_limit;
    let router = router
        .route(
            "/metrics",
            get(metrics::serve).with_state(metrics_state.clone()),
        )
        .with_state(state);
    conventions::layers(router, body_limit, Some((metrics_state, name)))
}

/// The router a service listens with on its own port: it answers only requests signed by a
/// gateway or another service of the cluster.
pub fn service(service: Service, state: AppState) -> Router {
    let trust = crate::trust::Trust::from_config(&state.config);
    let router = conventions::fallbacks(operational_routes().merge(api_routes(service, &state)))
        .layer(middleware::from_fn_with_state(trust, crate::trust::require));
    finish(router, state, service.name())
}

/// The gateway: health, metrics, the OpenAPI document, and every service's API: mounted
/// directly when the service runs in this process (`local`), forwarded over HTTP otherwise.
pub fn gateway(state: AppState, door: Door, local: &[Service]) -> Router {
    let secure = state.config.http.public_url.starts_with("https://");
    let mut router = operational_routes()
        .route("/api/v1/openapi.json", get(openapi::serve))
        .merge(crate::web::routes(secure, state.clone()));
    let timeout = Duration::from_millis(state.config.gateway.forward_timeout_ms);
    let trust = crate::trust::Trust::from_config(&state.config);
    for service in Service::ALL.into_iter().filter(|s| *s != Service::Gateway) {
        if local.contains(&service) {
            router = router.merge(api_routes(service, &state));
        } else if let Some(addr) = state.config.services.get(&service) {
            router = router.merge(proxy::routes(
                service,
                &addr.url,
                timeout,
                trust.clone(),
                state.shard_map.clone(),
                state.config.hand_over_wait(),
            ));
        }
    }
    // The door: applied inside the conventions so refusals carry correlation ids and speak
    // the client's language.
    // An address nothing took: the front's 404 page for a browser, the API's for a machine.
    let router = router
        .fallback(crate::web::fallback(secure))
        .method_not_allowed_fallback(conventions::method_not_allowed)
        .layer(middleware::from_fn_with_state(door, gateway::authenticate));
    finish(router, state, "gateway")
}
