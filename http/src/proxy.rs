//! Forwarding from the gateway to a service in another process: the request goes to the
//! service's address from cluster.toml with the trusted headers the gateway set and the same
//! correlation id; a service that does not answer yields 503 in the error format. Requests
//! about one event go to the events node that owns the event's shard (the shard map); while a
//! shard has no owner the answer is 503 with Retry-After.

use crate::conventions::{CORRELATION_ID, CorrelationId};
use crate::error::ApiError;
use crate::state::AppState;
use crate::trust::Trust;
use actors::cluster::ShardMap;
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
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
pub(crate) const MAX_FORWARDED_BODY: usize = 16 * 1024 * 1024;

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
    /// For the events service: who owns which shard.
    shards: Option<ShardMap>,
}

impl Upstream {
    /// Where a request for `path` goes: the owner of the event it names, else a live member
    /// (or the configured address); none while the event's shard has no owner.
    fn base_for(&self, path: &str) -> Option<Arc<str>> {
        let Some(map) = &self.shards else {
            return Some(self.base.clone());
        };
        match crate::events::owner::event_in_path(path) {
            Some(event) => map
                .owner(domain::cluster::shard_of(event))
                .map(|owner| Arc::from(owner.trim_end_matches('/'))),
            None => Some(
                map.any_member()
                    .map(|m| Arc::from(m.trim_end_matches('/')))
                    .unwrap_or_else(|| self.base.clone()),
            ),
        }
    }
}

/// A client for forwarding, with the gateway's timeouts.
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(2))
        .timeout(timeout)
        .build()
        .unwrap_or_default()
}

/// Routes forwarding every prefix of `service` to `base_url` (or, for the events service
/// with a shard map, to the owner of the event), each request signed as the gateway's.
pub fn routes(
    service: Service,
    base_url: &str,
    timeout: Duration,
    trust: Trust,
    shards: Option<ShardMap>,
) -> Router<AppState> {
    let upstream = Upstream {
        client: client(timeout),
        base: base_url.trim_end_matches('/').into(),
        service: service.name(),
        trust,
        shards: shards.filter(|_| service == Service::Events),
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
    let mut error = ApiError::from(Refusal::from(PlatformRefusal::ServiceUnavailable))
        .with_details(serde_json::json!({"service": service}));
    error.retry_after = Some(1);
    error.into_response()
}

async fn forward(State(upstream): State<Upstream>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Some(base) = upstream.base_for(parts.uri.path()) else {
        return ApiError::moved(&"the event's shard has no owner yet").into_response();
    };
    let Ok(body) = to_bytes(body, MAX_FORWARDED_BODY).await else {
        return ApiError::new(ErrorCode::PayloadTooLarge).into_response();
    };
    send(
        &upstream.client,
        &base,
        upstream.service,
        &parts,
        body,
        Some(&upstream.trust),
        &[],
    )
    .await
}

/// Sends the request of `parts` with `body` to the same path and query at `base` and streams
/// the answer back: signed as the gateway's with `sign`, else with the assertion it carries;
/// `extra` headers are added.
pub async fn send(
    client: &reqwest::Client,
    base: &str,
    service: &str,
    parts: &Parts,
    body: bytes::Bytes,
    sign: Option<&Trust>,
    extra: &[(HeaderName, HeaderValue)],
) -> Response {
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    // The door accepted this path as unambiguous; the URL parser must leave it as it is, or
    // the service would answer for another path than the one the door judged.
    let url = match reqwest::Url::parse(&format!("{base}{path}")) {
        Ok(url) if url.path() == parts.uri.path() => url,
        _ => {
            return ApiError::new(ErrorCode::ValidationError)
                .with_details(serde_json::json!({"path": "the path cannot be forwarded as it is"}))
                .into_response();
        }
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
    for (name, value) in extra {
        headers.insert(name.clone(), value.clone());
    }
    if let Some(trust) = sign {
        trust.sign(Service::Gateway, &parts.method, &url, &mut headers);
    }
    let outgoing = client
        .request(parts.method.clone(), url)
        .headers(headers)
        .body(body);
    let reply = match outgoing.send().await {
        Ok(reply) => reply,
        Err(e) => return unavailable(service, &e),
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
