//! Forwarding from the gateway to a service in another process: the request goes to the
//! service's address from cluster.toml with the trusted headers the gateway set and the same
//! correlation id; a service that does not answer yields 503 in the error format. Requests
//! about one event go to the events node that owns the event's shard (the shard map); while a
//! shard has no owner, every request is held until one takes it, and a request that may be
//! sent again is also sent again when its owner moved on (`crate::handover`); only once the
//! hand-over time is spent is 503 with Retry-After passed on.

use crate::conventions::{CORRELATION_ID, CorrelationId};
use crate::error::ApiError;
use crate::handover;
use crate::state::AppState;
use crate::trust::Trust;
use actors::cluster::ShardMap;
use axum::Router;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use domain::ErrorCode;
use domain::config::Service;
use domain::error::Refusal;
use domain::refusals::PlatformRefusal;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

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
            "/api/v1/wallet",
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
    /// How long a request that may be sent again is held through a hand-over.
    hand_over: Duration,
}

/// A client for forwarding to the installation's own processes, with the gateway's timeouts.
///
/// It speaks HTTP/2 to them (every process serves it beside HTTP/1.1 on the same port): all
/// requests to a node share one connection. Over HTTP/1.1 each request in flight needed a
/// connection of its own, and in a burst the client opened and dropped them by the thousand a
/// second (a TCP handshake, then a close with nothing sent): tens of thousands in TIME-WAIT, each
/// new `connect()` slower, until the gateway stopped answering (docs/decisions.md).
pub fn client(timeout: Duration) -> reqwest::Client {
    reqwest::Client::builder()
        .http2_prior_knowledge()
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
    hand_over: Duration,
) -> Router<AppState> {
    let upstream = Upstream {
        client: client(timeout),
        base: base_url.trim_end_matches('/').into(),
        service: service.name(),
        trust,
        shards: shards.filter(|_| service == Service::Events),
        hand_over,
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
    let Ok(body) = to_bytes(body, MAX_FORWARDED_BODY).await else {
        return ApiError::new(ErrorCode::PayloadTooLarge).into_response();
    };
    let Some(map) = &upstream.shards else {
        return send(
            &upstream.client,
            &upstream.base,
            upstream.service,
            &parts,
            body,
            Some(&upstream.trust),
            &[],
        )
        .await;
    };
    let path = parts.uri.path();
    let event = crate::events::owner::event_in_path(path);
    let read = parts.method == Method::GET || parts.method == Method::HEAD;
    let patient = handover::may_resend(&parts.method, path, &parts.headers);
    let deadline = Instant::now() + upstream.hand_over;
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let Some(base) = handover::target(map, event, read) else {
            // Nothing of this request has been sent (a request that may not be sent again
            // returns after its first sending), so any request may wait for an owner: a shard
            // passing between two live members (an event published evens the load out) has
            // none for up to a round.
            if Instant::now() < deadline {
                handover::pause(map, attempt, deadline).await;
                continue;
            }
            return ApiError::moved(&"the event's shard has no owner yet").into_response();
        };
        let base = base.trim_end_matches('/');
        let sent = send(
            &upstream.client,
            base,
            upstream.service,
            &parts,
            body.clone(),
            Some(&upstream.trust),
            &[],
        );
        if !patient {
            // A write that may not be sent twice is sent again only when the node says it did
            // not run it (the shard had just left it, and nobody held it yet).
            let answer = sent.await;
            let not_served = answer
                .headers()
                .contains_key(crate::events::owner::NOT_SERVED);
            if !not_served || Instant::now() >= deadline {
                return without_internal(answer);
            }
            discard(answer).await;
            handover::pause(map, attempt, deadline).await;
            tracing::debug!(path, attempt, "not served by a former owner; sending again");
            continue;
        }
        // A paused owner answers nothing: once the map has moved on, the copy that waits on
        // it is dropped and the request goes to the new owner (the key makes it one seat). An
        // owner that is only slow (a long export) is waited for, up to the forward timeout:
        // the hand-over time bounds waiting for an owner, not serving.
        let answered = tokio::select! {
            answer = sent => Some(answer),
            _ = handover::moved_away(map, event, read, base) => None,
        };
        match answered {
            Some(answer) if answer.status() != StatusCode::SERVICE_UNAVAILABLE => return answer,
            Some(answer) if Instant::now() >= deadline => return without_internal(answer),
            Some(answer) => {
                discard(answer).await;
                handover::pause(map, attempt, deadline).await;
            }
            None if Instant::now() >= deadline => {
                return ApiError::moved(&"the event's shard moved on after the hand-over time")
                    .into_response();
            }
            None => {}
        }
        tracing::debug!(path, attempt, "held through a hand-over; sending again");
    }
}

/// Reads an answer that is not passed on to its end, so its connection goes back to the
/// client's pool: dropped unread, the connection is closed, and a burst of 503 sent again
/// opened thousands of connections a second to the nodes (tens of thousands left waiting in
/// TIME-WAIT, each new connect slower than the last, until the gateway stopped answering).
async fn discard(answer: Response) {
    let read = to_bytes(answer.into_body(), MAX_DISCARDED);
    let _ = tokio::time::timeout(Duration::from_secs(1), read).await;
}

/// The most of an unused answer that is read to keep its connection (an error body is small).
const MAX_DISCARDED: usize = 64 * 1024;

/// The answer as a client gets it: the nodes' own headers to each other stay between them.
fn without_internal(mut answer: Response) -> Response {
    answer
        .headers_mut()
        .remove(crate::events::owner::NOT_SERVED);
    answer
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
