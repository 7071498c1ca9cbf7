//! Forwarding from the gateway to a service in another process: the request goes to the
//! service's address from cluster.toml with the trusted headers the gateway set and the same
//! correlation id; a service that does not answer yields 503 in the error format.

use crate::conventions::{CORRELATION_ID, CorrelationId};
use crate::error::ApiError;
use crate::state::AppState;
use crate::trust::Trust;
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use domain::ErrorCode;
use domain::config::Service;
use domain::error::Refusal;
use domain::refusals::PlatformRefusal;
use std::sync::Arc;
use std::time::Duration;

/// Largest request body forwarded (the upload limit of the media service, with headroom).
const MAX_FORWARDED_BODY: usize = 16 * 1024 * 1024;

/// The path prefixes each service answers under.
pub fn prefixes(service: Service) -> &'static [&'static str] {
    match service {
        Service::Identity => &[
            "/api/v1/auth",
            "/api/v1/users",
            "/api/v1/organization-requests",
            "/api/v1/organizations",
            "/api/v1/groups",
        ],
        Service::Events => &[
            "/api/v1/events",
            "/api/v1/registrations",
            "/api/v1/payments",
        ],
        Service::Notifications => &["/api/v1/notifications"],
        Service::Media => &["/api/v1/media"],
        Service::Analytics => &["/api/v1/analytics"],
        Service::Gateway => &[],
    }
}

#[derive(Clone)]
struct Upstream {
    client: reqwest::Client,
    base: Arc<str>,
    service: &'static str,
    trust: Trust,
}

/// Routes forwarding every prefix of `service` to `base_url`, each request signed as the
/// gateway's.
pub fn routes(
    service: Service,
    base_url: &str,
    timeout: Duration,
    trust: Trust,
) -> Router<AppState> {
    let client = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .timeout(timeout)
        .build()
        .unwrap_or_default();
    let upstream = Upstream {
        client,
        base: base_url.trim_end_matches('/').into(),
        service: service.name(),
        trust,
    };
    let mut router = Router::new();
    for prefix in prefixes(service) {
        router = router
            .route(prefix, any(forward).with_state(upstream.clone()))
            .route(
                &format!("{prefix}/{{*rest}}"),
                any(forward).with_state(upstream.clone()),
            );
    }
    router
}

fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-authenticate"
            | "proxy-authorization"
            | "te"
            | "trailer"
            | "transfer-encoding"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

fn unavailable(service: &str, cause: &dyn std::fmt::Display) -> Response {
    tracing::warn!(service, error = %cause, "service unreachable");
    ApiError::from(Refusal::from(PlatformRefusal::ServiceUnavailable))
        .with_details(serde_json::json!({"service": service}))
        .into_response()
}

async fn forward(State(upstream): State<Upstream>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    // The door accepted this path as unambiguous; the URL parser must leave it as it is, or
    // the service would answer for another path than the one the door judged.
    let url = match reqwest::Url::parse(&format!("{}{path}", upstream.base)) {
        Ok(url) if url.path() == parts.uri.path() => url,
        _ => {
            return ApiError::new(ErrorCode::ValidationError)
                .with_details(serde_json::json!({"path": "the path cannot be forwarded as it is"}))
                .into_response();
        }
    };
    let Ok(body) = to_bytes(body, MAX_FORWARDED_BODY).await else {
        return ApiError::new(ErrorCode::PayloadTooLarge).into_response();
    };
    let mut headers = axum::http::HeaderMap::new();
    for (name, value) in parts.headers.iter().filter(|(n, _)| !hop_by_hop(n)) {
        headers.append(name, value.clone());
    }
    if let Some(CorrelationId(id)) = parts.extensions.get::<CorrelationId>()
        && let Ok(value) = HeaderValue::from_str(id)
    {
        headers.insert(CORRELATION_ID, value);
    }
    upstream
        .trust
        .sign(Service::Gateway, &parts.method, &url, &mut headers);
    let outgoing = upstream
        .client
        .request(parts.method.clone(), url)
        .headers(headers)
        .body(body);
    let reply = match outgoing.send().await {
        Ok(reply) => reply,
        Err(e) => return unavailable(upstream.service, &e),
    };
    let mut response = Response::builder().status(reply.status());
    if let Some(headers) = response.headers_mut() {
        for (name, value) in reply.headers().iter().filter(|(n, _)| !hop_by_hop(n)) {
            headers.insert(name.clone(), value.clone());
        }
        headers
            .entry(header::CONTENT_TYPE)
            .or_insert(HeaderValue::from_static("application/json"));
    }
    response
        .body(Body::from_stream(reply.bytes_stream()))
        .unwrap_or_else(|e| ApiError::internal(&e).into_response())
}
