//! A request whose transaction lost a lock race (a deadlock or serialization failure that
//! PostgreSQL resolved by rolling it back) runs again, a few milliseconds later, before its
//! client sees anything: an organizer saving a ticket type while a sale takes its seats gets
//! their answer, not a 500. The handler's transaction was rolled back whole, so running the
//! handler again is running it for the first time. Only requests small enough to hold are
//! replayed (an upload goes once); a race lost `ATTEMPTS` times answers 503 Retry-After.

use crate::error::ApiError;
use axum::body::Body;
use axum::extract::Request;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use storage::db::contention::{ATTEMPTS, backoff};

/// The largest body held for a replay: every JSON request is far smaller.
const REPLAYABLE: usize = 256 * 1024;

/// Runs the request again while its answer says it lost a lock race.
pub async fn retry(request: Request, next: Next) -> Response {
    if !replayable(&request) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, REPLAYABLE).await {
        Ok(bytes) => bytes,
        // Over the limit the outer layers set: their refusal, as without this layer.
        Err(_) => {
            return axum::response::IntoResponse::into_response(ApiError::new(
                domain::ErrorCode::PayloadTooLarge,
            ));
        }
    };
    let mut attempt = 1;
    loop {
        let request = Request::from_parts(parts.clone(), Body::from(body.clone()));
        let response = next.clone().run(request).await;
        if attempt >= ATTEMPTS || !lost_race(&response) {
            return response;
        }
        attempt += 1;
        tracing::debug!(path = %parts.uri.path(), attempt, "request lost a lock race; running it again");
        tokio::time::sleep(backoff(attempt)).await;
    }
}

/// A body of known, small length, or none.
fn replayable(request: &Request) -> bool {
    let headers = request.headers();
    match headers.get(header::CONTENT_LENGTH) {
        Some(length) => length
            .to_str()
            .ok()
            .and_then(|l| l.parse::<usize>().ok())
            .is_some_and(|l| l <= REPLAYABLE),
        None => !headers.contains_key(header::TRANSFER_ENCODING),
    }
}

fn lost_race(response: &Response) -> bool {
    response
        .extensions()
        .get::<Arc<ApiError>>()
        .is_some_and(|e| e.lost_race)
}
