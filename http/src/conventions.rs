//! The layers every router gets: a correlation id on every request, response and log line;
//! errors rendered in the client's language; panics turned into a 500 in the error format;
//! the JSON body limit; and 404/405 answered in the error format.

use crate::error::ApiError;
use crate::metrics::{self, Metrics};
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderName, HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use domain::{ErrorCode, Lang};
use std::sync::Arc;
use std::time::Instant;
use tower_http::catch_panic::CatchPanicLayer;
use tracing::Instrument;

/// Header carrying the correlation id.
pub const CORRELATION_ID: HeaderName = HeaderName::from_static("x-correlation-id");

/// The correlation id of the current request, available to handlers as an extension.
#[derive(Clone, Debug)]
pub struct CorrelationId(pub String);

/// Wraps a router in the shared conventions.
pub fn apply(router: Router, body_limit: usize) -> Router {
    layers(fallbacks(router), body_limit, None)
}

/// 404 and 405 in the error format. Set them before adding layers, so the layers (the
/// gateway's door, rate limits, metrics) also see requests no route matches.
pub fn fallbacks<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .fallback(fallback_not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

/// The layers every router gets, outermost last; `metrics` counts its requests under the
/// router's name.
pub fn layers(
    router: Router,
    body_limit: usize,
    metrics: Option<(Metrics, &'static str)>,
) -> Router {
    router
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal(&"handler panicked").into_response()
        }))
        .layer(middleware::from_fn_with_state(metrics, frame))
}

/// Accepts a client's id if it is short and printable, otherwise makes one.
fn correlation_id_of(request: &Request) -> String {
    request
        .headers()
        .get(&CORRELATION_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| {
            !v.is_empty()
                && v.len() <= 128
                && v.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
        })
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::now_v7().to_string())
}

/// What every request passes through first: its correlation id (on the request, the response
/// and every log line), its answer counted, and an error answer rendered in the client's
/// language. One layer rather than three: on the seat path each layer costs a boxed future,
/// a clone of the inner service and a copy of the request's state, thousands of times a second.
async fn frame(
    State(metrics): State<Option<(Metrics, &'static str)>>,
    mut request: Request,
    next: Next,
) -> Response {
    let id = correlation_id_of(&request);
    let lang = request
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .map(Lang::from_accept_language)
        .unwrap_or_default();
    let counted = metrics
        .as_ref()
        .map(|(metrics, service)| (metrics, *service, metrics::Counted::of(&request)));
    request.extensions_mut().insert(CorrelationId(id.clone()));
    let span = tracing::info_span!(
        "request",
        correlation_id = %id,
        method = %request.method(),
        path = %request.uri().path(),
    );
    let started = Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    if let Some((metrics, service, counted)) = counted {
        metrics.record(service, counted, response.status(), started.elapsed());
    }
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request finished"
        )
    });
    let mut response = localized(response, lang);
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(CORRELATION_ID, value);
    }
    response
}

/// An error answer in the client's language (handlers render Russian, the default).
fn localized(response: Response, lang: Lang) -> Response {
    if lang == Lang::Ru {
        return response;
    }
    let Some(error) = response.extensions().get::<Arc<ApiError>>().cloned() else {
        return response;
    };
    let (parts, _) = response.into_parts();
    let mut localized = error.render(lang);
    for (name, value) in parts.headers.iter() {
        if name != header::CONTENT_LENGTH && name != header::CONTENT_TYPE {
            localized.headers_mut().insert(name.clone(), value.clone());
        }
    }
    localized
}

async fn fallback_not_found() -> ApiError {
    ApiError::not_found()
}

/// 405 in the error body's shape.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(ErrorCode::MethodNotAllowed)
}
