//! `X-Idempotency-Key` on creating POSTs. The first request with a key is processed and its
//! response stored; the same key from the same caller with the same request gets that
//! response again (marked `Idempotent-Replayed: true`); with a different request it is
//! refused with 422; while the first is still running, a second gets 409. A key whose request
//! failed is released for a retry only when the failure is known to have changed nothing; one
//! whose outcome is unknown stays claimed (409) until its process is gone or five minutes pass,
//! so a request is never applied twice.

use crate::context::USER_ID;
use crate::error::ApiError;
use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::validation::FieldError;
use sha2::{Digest, Sha256};
use storage::idempotency::{self, Claim, StoredResponse};
use storage::{Database, Schema};
use uuid::Uuid;

/// The request header.
pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("x-idempotency-key");
/// Set on a response that is a replay of a stored one.
pub const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");
/// Responses larger than this are not stored (and the key is released).
const MAX_STORED_RESPONSE: usize = 1024 * 1024;

/// Configuration of the layer for one service.
#[derive(Clone)]
pub struct Idempotency {
    /// The pool.
    pub db: Database,
    /// The schema of the service the layer wraps.
    pub schema: Schema,
    /// Largest request body hashed (the JSON body limit).
    pub body_limit: usize,
    /// This process's life line, recorded with each claim.
    pub holder: storage::liveness::LifeLine,
}

/// Middleware: applies to POST requests that carry the header.
pub async fn layer(State(config): State<Idempotency>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let Some(raw_key) = request.headers().get(&IDEMPOTENCY_KEY).cloned() else {
        return next.run(request).await;
    };
    match handle(config, raw_key, request, next).await {
        Ok(response) | Err(response) => response,
    }
}

async fn handle(
    config: Idempotency,
    raw_key: HeaderValue,
    request: Request,
    next: Next,
) -> Result<Response, Response> {
    let key = raw_key
        .to_str()
        .ok()
        .and_then(|k| Uuid::parse_str(k.trim()).ok())
        .ok_or_else(|| {
            ApiError::field("X-Idempotency-Key", FieldError::InvalidFormat).into_response()
        })?;
    let owner = request
        .headers()
        .get(USER_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| Uuid::parse_str(v).ok())
        .unwrap_or(Uuid::nil());
    let (parts, body) = request.into_parts();
    let bytes = to_bytes(body, config.body_limit)
        .await
        .map_err(|_| ApiError::new(ErrorCode::PayloadTooLarge).into_response())?;
    let mut hasher = Sha256::new();
    hasher.update(parts.method.as_str());
    hasher.update([0]);
    hasher.update(parts.uri.path());
    hasher.update([0]);
    hasher.update(&bytes);
    let hash = hasher.finalize().to_vec();

    let claim = idempotency::claim(
        &config.db,
        config.schema,
        owner,
        key,
        &hash,
        config.holder.key(),
    )
    .await
    .map_err(|e| ApiError::from(e).into_response())?;
    match claim {
        Claim::Replay(stored) => return Ok(replay(stored)),
        Claim::InProgress => {
            return Err(ApiError::new(ErrorCode::IdempotencyInProgress).into_response());
        }
        Claim::Mismatch => {
            return Err(ApiError::new(ErrorCode::IdempotencyKeyReused).into_response());
        }
        Claim::Fresh => {}
    }

    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let (parts, body) = response.into_parts();
    let status = parts.status;
    let body = match to_bytes(body, MAX_STORED_RESPONSE).await {
        Ok(body) => body,
        Err(e) => {
            let _ = idempotency::release(&config.db, config.schema, owner, key).await;
            return Err(ApiError::internal(&e).into_response());
        }
    };
    if status.is_server_error() {
        // A failure on our side must not be replayed forever: the key goes back for a retry,
        // but only when nothing was done; else a retry could apply the request twice.
        let error = parts.extensions.get::<std::sync::Arc<ApiError>>();
        if releasable(error.map(|e| e.as_ref())) {
            let _ = idempotency::release(&config.db, config.schema, owner, key).await;
        } else {
            tracing::warn!(%key, status = status.as_u16(),
                "a keyed request failed with an unknown outcome: its key stays claimed");
        }
    } else {
        let stored = StoredResponse {
            status: status.as_u16(),
            content_type: parts
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            body: body.to_vec(),
        };
        if let Err(e) = idempotency::complete(&config.db, config.schema, owner, key, &stored).await
        {
            tracing::error!(error = %e, "could not store idempotent response");
        }
    }
    Ok(Response::from_parts(parts, Body::from(body)))
}

/// Whether a key whose request answered a server error may be used again: only when the error
/// says the request changed nothing.
fn releasable(error: Option<&ApiError>) -> bool {
    error.is_some_and(|e| e.uncommitted)
}

fn replay(stored: StoredResponse) -> Response {
    let mut response = Response::new(Body::from(stored.body));
    *response.status_mut() = axum::http::StatusCode::from_u16(stored.status).unwrap_or_default();
    if let Some(ct) = stored
        .content_type
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        response.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    response
        .headers_mut()
        .insert(REPLAYED, HeaderValue::from_static("true"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_failure_known_to_have_changed_nothing_releases_its_key() {
        let moved = ApiError::moved(&"test");
        assert!(releasable(Some(&moved)));
        assert!(!releasable(Some(&ApiError::internal(
            &"a bug after the commit?"
        ))));
        assert!(!releasable(Some(&ApiError::unavailable())));
        assert!(
            !releasable(None),
            "a panic or a foreign answer tells nothing"
        );
    }
}
