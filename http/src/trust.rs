//! Services trust only signed callers. Whatever reaches a service's own port must carry an
//! assertion (`domain::trust`) made with the cluster's shared secret: by a gateway for client
//! requests, by another service for internal routes. Identity headers without one are refused
//! (401), so a service port reached directly, or a forged `X-User-Id`, gets nowhere. In one
//! process the gateway calls the service routers directly and nothing is signed or checked.

use crate::context::{TENANT_ID, USER_ID, USER_ROLES};
use crate::error::ApiError;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::config::{Config, Service};
use domain::error::Refusal;
use domain::refusals::PlatformRefusal;
use domain::trust::{self, TrustError};
use std::sync::Arc;

/// The shared secret, as the middleware and the signing clients hold it.
#[derive(Clone)]
pub struct Trust {
    secret: Arc<[u8]>,
}

impl Trust {
    /// The cluster's service secret; a process given none (tests building a configuration by
    /// hand) gets a random one, which only it knows.
    pub fn from_config(config: &Config) -> Trust {
        let secret: Vec<u8> = match &config.auth.service_secret {
            Some(s) if !s.expose().is_empty() => s.expose().as_bytes().to_vec(),
            _ => rand_secret(),
        };
        Trust {
            secret: secret.into(),
        }
    }

    /// A trust over `secret` (clients of other crates and tests).
    pub fn new(secret: &[u8]) -> Trust {
        Trust {
            secret: secret.into(),
        }
    }

    /// Adds the assertion `signer` gives for a request to `url` with `headers` (the identity
    /// headers it carries are part of what is signed).
    pub fn sign(
        &self,
        signer: Service,
        method: &Method,
        url: &reqwest::Url,
        headers: &mut HeaderMap,
    ) {
        let target = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        };
        let value = {
            let request = described(method, &target, headers);
            trust::sign(
                &self.secret,
                signer,
                chrono::Utc::now().timestamp(),
                &request,
            )
        };
        if let Ok(value) = HeaderValue::from_str(&value) {
            headers.insert(trust::HEADER, value);
        }
    }

    fn verify(&self, request: &Request) -> Result<Service, TrustError> {
        let target = request
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let assertion = request
            .headers()
            .get(trust::HEADER)
            .and_then(|v| v.to_str().ok());
        let described = described(request.method(), target, request.headers());
        trust::verify(
            &self.secret,
            assertion,
            chrono::Utc::now().timestamp(),
            &described,
        )
    }
}

fn rand_secret() -> Vec<u8> {
    let bytes: [u8; 32] = rand::random();
    bytes.to_vec()
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn described<'a>(
    method: &'a Method,
    target: &'a str,
    headers: &'a HeaderMap,
) -> trust::Request<'a> {
    trust::Request {
        method: method.as_str(),
        target,
        user: header(headers, USER_ID),
        tenant: header(headers, TENANT_ID),
        roles: header(headers, USER_ROLES),
    }
}

/// The signer an assertion names, for the log (unverified: never for a decision).
fn signer_named(request: &Request) -> &str {
    request
        .headers()
        .get(trust::HEADER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split('.').nth(1))
        .unwrap_or("")
}

/// Who signed the request a service is answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verified(pub Service);

/// Health checks and metrics answer anyone: they carry no one's data and are polled by
/// machines that hold no secret.
fn is_operational(path: &str) -> bool {
    path.starts_with("/health/") || path == "/metrics"
}

/// Middleware of a service's own port: no valid assertion, no answer.
pub async fn require(State(trust): State<Trust>, mut request: Request, next: Next) -> Response {
    if is_operational(request.uri().path()) {
        return next.run(request).await;
    }
    match trust.verify(&request) {
        Ok(signer) => {
            request.extensions_mut().insert(Verified(signer));
            next.run(request).await
        }
        Err(why) => {
            match why {
                // The assertion is well formed and fresh: the caller holds a secret, not ours
                // (or the request was altered on the way). Calling it unsigned sent operators
                // looking for a missing header.
                TrustError::BadSignature => tracing::warn!(
                    reason = %why,
                    path = request.uri().path(),
                    signer = signer_named(&request),
                    "request signed with another secret refused (is SERVICE_SECRET the same on every process?)"
                ),
                _ => {
                    tracing::warn!(reason = %why, path = request.uri().path(), "unsigned request refused")
                }
            }
            ApiError::from(Refusal::from(PlatformRefusal::UnsignedRequest))
                .with_details(serde_json::json!({"reason": why.to_string()}))
                .into_response()
        }
    }
}

/// A caller of an internal route: another service, never a gateway's client. Without a
/// verified assertion (the gateway's own process) the route does not exist.
#[derive(Clone, Copy, Debug)]
pub struct ServiceCall(pub Service);

impl<S: Send + Sync> FromRequestParts<S> for ServiceCall {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<ServiceCall, ApiError> {
        match parts.extensions.get::<Verified>() {
            Some(Verified(service)) if *service != Service::Gateway => Ok(ServiceCall(*service)),
            Some(_) => Err(Refusal::from(PlatformRefusal::ServicesOnly).into()),
            None => Err(ApiError::not_found()),
        }
    }
}
