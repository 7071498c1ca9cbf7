//! The layers every router gets: a correlation id on every request, response and log line;
//! errors rendered in the client's language; panics turned into a 500 in the error format;
//! the JSON body limit; and 404/405 answered in the error format.

use crate::error::ApiError;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request};
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
    layers(fallbacks(router), body_limit)
}

/// 404 and 405 in the error format. Set them before adding layers, so the layers (the
/// gateway's door, rate limits, metrics) also see requests no route matches.
pub fn fallbacks<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .fallback(fallback_not_found)
        .method_not_allowed_fallback(method_not_allowed)
}

/// The layers every router gets, outermost last.
pub fn layers(router: Router, body_limit: usize) -> Router {
    router
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(CatchPanicLayer::custom(|_| {
            ApiError::internal(&"handler panicked").into_response()
        }))
        .layer(middleware::from_fn(localize_errors))
        .layer(middleware::from_fn(correlate))
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

async fn correlate(mut request: Request, next: Next) -> Response {
    let id = correlation_id_of(&request);
    request.extensions_mut().insert(CorrelationId(id.clone()));
    let span = tracing::info_span!(
        "request",
        correlation_id = %id,
        method = %request.method(),
        path = %request.uri().path(),
    );
    let started = Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    span.in_scope(|| {
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request finished"
        )
    });
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(CORRELATION_ID, value);
    }
    response
}

async fn localize_errors(request: Request, next: Next) -> Response {
    let lang = request
        .headers()
        .get(header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .map(Lang::from_accept_language)
        .unwrap_or_default();
    let response = next.run(request).await;
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
