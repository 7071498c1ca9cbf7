//! The gateway's door: every header a service trusts is stripped from the client's request,
//! internal routes are hidden, the bearer token is checked (HS256 only, signature, expiry,
//! required claims, not revoked), the caller's identity is passed on as X-User-Id, X-Tenant-Id
//! and X-User-Roles, and the rate limits are applied. Routes outside the public list need a
//! valid token; on public routes a token that fails the check is ignored, so a client that
//! sends its expired token everywhere can still refresh and sign in.

use crate::context::{TENANT_ID, USER_ID, USER_ROLES};
use crate::error::ApiError;
use crate::ratelimit::{Bucket, Network, RateLimiter, client_ip};
use crate::revocations::{RevocationFeed, Verdict};
use crate::tokens::Tokens;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::error::Refusal;
use domain::identity::tokens::Claims;
use domain::refusals::PlatformRefusal;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Limit of the request's bucket.
pub const RATE_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
/// What is left of it in the current window.
pub const RATE_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");

/// What the door needs.
#[derive(Clone)]
pub struct Door {
    /// Token keys.
    pub tokens: Arc<Tokens>,
    /// Rate limits.
    pub limiter: Arc<RateLimiter>,
    /// Proxies whose X-Forwarded-For is believed.
    pub trusted: Arc<Vec<Network>>,
    /// Tokens revoked before their expiry.
    pub revocations: Arc<RevocationFeed>,
}

/// Routes for other services only, never served to clients.
pub fn is_internal(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    path == "/api/v1/notifications/send" || path.starts_with("/internal/") || path == "/internal"
}

/// Routes outside every rate limit: health checks and metrics are polled by machines, and the
/// web front's built-in files cost nothing (one page load fetches a dozen of them).
fn is_operational(path: &str) -> bool {
    path.starts_with("/health/") || path == "/metrics" || crate::web::is_page(path)
}

/// Uploads have their own, smaller budget.
/// Taking a place in a waiting room's queue: counted per client IP and per account too, so a
/// bot farm behind one address, or one account asking again and again, is slowed down.
fn is_queue_join(method: &Method, path: &str) -> bool {
    if method != Method::POST {
        return false;
    }
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    matches!(segments.as_slice(), ["api", "v1", "events", id, "queue"] if uuid::Uuid::parse_str(id).is_ok())
}

fn is_upload(method: &Method, path: &str) -> bool {
    method == Method::POST && path.trim_end_matches('/') == "/api/v1/media/upload"
}

/// The payment provider's notifications: its signature is the credential, so `Authorization`
/// (some providers send Basic credentials) is not looked at, and it has its own budget.
fn is_webhook(method: &Method, path: &str) -> bool {
    method == Method::POST
        && (path.trim_end_matches('/') == "/api/v1/payments/webhook"
            || is_provider_notification(path))
}

/// The segments of `path` below `/api/v1/payments/`, when it is there. Read without
/// collecting: every request passes these checks, the seat POSTs of an on-sale among them.
fn below_payments(path: &str) -> Option<std::str::Split<'_, char>> {
    path.trim_matches('/')
        .strip_prefix("api/v1/payments/")
        .map(|rest| rest.split('/'))
}

/// `/api/v1/payments/providers/{provider}/notifications[/{organization}]`.
fn is_provider_notification(path: &str) -> bool {
    let Some(mut s) = below_payments(path) else {
        return false;
    };
    s.next() == Some("providers")
        && s.next().is_some_and(|provider| !provider.is_empty())
        && s.next() == Some("notifications")
        && match s.next() {
            None => true,
            Some(organization) => !organization.is_empty() && s.next().is_none(),
        }
}

/// The test provider's payment page (`/api/v1/payments/test/{payment}`): reached by the link
/// the checkout gave, like a provider's hosted page.
fn is_test_payment_page(path: &str) -> bool {
    let Some(mut s) = below_payments(path) else {
        return false;
    };
    s.next() == Some("test")
        && s.next().is_some_and(|payment| !payment.is_empty())
        && s.next().is_none()
}

/// Identity's writes, after which this gateway reads the revocations at once, so that the
/// caller's own next request already sees what the change revoked (other gateways see it when
/// notified, within `revocations::STALE_AFTER` at worst).
fn may_revoke(method: &Method, path: &str) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
        && ["/api/v1/auth/", "/api/v1/users/", "/api/v1/organizations/"]
            .iter()
            .any(|prefix| path.starts_with(prefix))
}

/// Routes reachable without a token: sign-in and registration flows, health, metrics, the
/// API document and every address of the web front (its unknown ones answer its 404 page).
pub fn is_public(method: &Method, path: &str) -> bool {
    const PUBLIC_POSTS: &[&str] = &[
        "/api/v1/auth/messenger",
        "/api/v1/auth/register",
        "/api/v1/auth/login",
        "/api/v1/auth/refresh",
        "/api/v1/auth/logout",
        "/api/v1/auth/forgot-password",
        "/api/v1/auth/reset-password",
        "/api/v1/auth/verify-email",
        "/api/v1/auth/resend-verification",
        // Page views of public events come from visitors without an account too.
        "/api/v1/analytics/track",
        // The payment provider: its signature is the credential.
        "/api/v1/payments/webhook",
    ];
    const PUBLIC_GETS: &[&str] = &[
        "/health/live",
        "/health/ready",
        "/metrics",
        "/api/v1/openapi.json",
        "/api/v1/auth/verify-email",
        // The web front asks whether to offer messenger sign-in before anyone is signed in.
        "/api/v1/auth/messenger",
    ];
    let path = path.trim_end_matches('/');
    match *method {
        Method::POST => {
            PUBLIC_POSTS.contains(&path)
                || is_provider_notification(path)
                || is_test_payment_page(path)
        }
        Method::GET | Method::HEAD => {
            PUBLIC_GETS.contains(&path)
                || is_public_event_read(path)
                || is_test_payment_page(path)
                || crate::web::is_front(path)
        }
        _ => false,
    }
}

/// Reads of events and their ticket types: what they show depends on who asks (published
/// public events for anyone), so they are open without a token.
fn is_public_event_read(path: &str) -> bool {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["api", "v1", "events"] => true,
        ["api", "v1", "events", id] => uuid::Uuid::parse_str(id).is_ok(),
        ["api", "v1", "events", id, "ticket-types"] => uuid::Uuid::parse_str(id).is_ok(),
        // A waiting room's settings and progress: what the queue page shows before sign-in.
        ["api", "v1", "events", id, "waiting-room"] => uuid::Uuid::parse_str(id).is_ok(),
        // The web front's readable event addresses.
        ["api", "v1", "events", "by-slug", slug] => !slug.is_empty(),
        // Signed links of the local media store: the signature is the credential.
        ["api", "v1", "media", "files", ..] => true,
        // A link to an attached file (an event's cover): shown wherever its event is, so a
        // visitor's event page shows it; unattached files stay their owner's.
        ["api", "v1", "media", id, "url" | "image"] => uuid::Uuid::parse_str(id).is_ok(),
        _ => false,
    }
}

/// Whether a client-sent header could be mistaken for one the gateway sets.
fn is_trusted_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.starts_with("x-user-")
        || name.starts_with("x-tenant-")
        || name.starts_with("x-internal-")
        || name == domain::trust::HEADER
}

/// Sign-in and sign-up routes: always counted per client IP, token or not, so a valid token
/// (anyone's) cannot lift a password guesser into the much larger per-user budget.
fn is_sign_in(method: &Method, path: &str) -> bool {
    method == Method::POST && path.starts_with("/api/v1/auth/") && is_public(method, path)
        || method == Method::GET && path.trim_end_matches('/') == "/api/v1/auth/verify-email"
}

fn ambiguous_path(why: crate::paths::AmbiguousPath) -> Response {
    ApiError::from(Refusal::from(PlatformRefusal::AmbiguousPath))
        .with_details(serde_json::json!({"path": why.reason()}))
        .into_response()
}

/// Why a bearer was not accepted.
enum BadBearer {
    /// Not a token of ours, tampered with, or expired.
    Invalid,
    /// Revoked before its expiry.
    Revoked,
    /// Revocations could not be read lately; the token itself verified, for this user.
    Unknown(uuid::Uuid),
}

impl BadBearer {
    fn response(&self) -> Response {
        let refusal = match self {
            BadBearer::Invalid => PlatformRefusal::AccessTokenInvalid,
            BadBearer::Revoked => PlatformRefusal::AccessRevoked,
            BadBearer::Unknown(_) => PlatformRefusal::RevocationsUnknown,
        };
        let mut error = ApiError::from(Refusal::from(refusal));
        if matches!(self, BadBearer::Unknown(_)) {
            error.retry_after = Some(1);
        }
        error.into_response()
    }

    /// Whose budget the refusal is counted against: a token the platform could not check
    /// is its signed user's (the fault is ours, and everyone behind one address would
    /// otherwise run out of it together); a bad or revoked one the address's.
    fn counted_for(&self) -> Option<uuid::Uuid> {
        match self {
            BadBearer::Unknown(user) => Some(*user),
            BadBearer::Invalid | BadBearer::Revoked => None,
        }
    }
}

/// The claims of an `Authorization: Bearer` value, if it verifies and was not revoked.
fn check_bearer(door: &Door, value: &str) -> Result<Claims, BadBearer> {
    let claims = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .and_then(|token| door.tokens.verify(token.trim()).ok())
        .ok_or(BadBearer::Invalid)?;
    match door.revocations.verdict(&claims) {
        Verdict::Allowed => Ok(claims),
        Verdict::Revoked => Err(BadBearer::Revoked),
        Verdict::Unknown => Err(BadBearer::Unknown(claims.sub.as_uuid())),
    }
}

/// Passes the caller's identity on to the services.
fn set_identity(request: &mut Request, claims: &Claims) {
    let headers = request.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&claims.sub.to_string()) {
        headers.insert(USER_ID, v);
    }
    if let Some(tenant) = claims.tenant_id
        && let Ok(v) = HeaderValue::from_str(&tenant.to_string())
    {
        headers.insert(TENANT_ID, v);
    }
    let roles = claims
        .roles
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(",");
    if let Ok(v) = HeaderValue::from_str(&roles) {
        headers.insert(USER_ROLES, v);
    }
}

/// Middleware of the gateway router.
pub async fn authenticate(State(door): State<Door>, mut request: Request, next: Next) -> Response {
    // One path for everything below: taken as it came, or refused when some reader could
    // see another path in it.
    if let Err(why) = crate::paths::check(request.uri().path()) {
        return ambiguous_path(why);
    }
    let spoofed: Vec<_> = request
        .headers()
        .keys()
        .filter(|name| is_trusted_header(name.as_str()))
        .cloned()
        .collect();
    for name in spoofed {
        request.headers_mut().remove(name);
    }
    let path = request.uri().path().to_string();
    if is_internal(&path) {
        return ApiError::not_found().into_response();
    }
    let public = is_public(request.method(), &path);
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .filter(|_| !is_webhook(request.method(), &path))
        .map(|v| v.to_str().map(|v| v.trim().to_string()).unwrap_or_default());
    // A refusal at the door is still counted against the client's IP, so guessing tokens
    // or probing closed routes runs into the public limit like anything else; a valid token
    // the door could not check against the revocations is counted against its own user.
    let mut refusal: Option<Response> = None;
    let user = match bearer.map(|value| check_bearer(&door, &value)) {
        Some(Ok(claims)) => {
            set_identity(&mut request, &claims);
            Some(claims.sub.as_uuid())
        }
        Some(Err(_)) if public => {
            // Public routes answer as to anyone; the token no service may see goes.
            request.headers_mut().remove(header::AUTHORIZATION);
            None
        }
        Some(Err(why)) => {
            refusal = Some(why.response());
            why.counted_for()
        }
        None if public => None,
        None => {
            refusal = Some(ApiError::new(ErrorCode::Unauthorized).into_response());
            None
        }
    };
    count_and_answer(&door, request, user, &path, refusal, next).await
}

/// The client's IP budget: the peer, or the client a trusted proxy names.
fn ip_bucket(door: &Door, request: &Request) -> Bucket {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
    // Every X-Forwarded-For line counts: proxies may append a line instead of a hop.
    let forwarded = request
        .headers()
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let forwarded = (!forwarded.is_empty()).then_some(forwarded.as_str());
    Bucket::Public(client_ip(peer, forwarded, &door.trusted))
}

/// Applies the rate limit of the request's bucket, then answers with `refusal` or runs the
/// request; every counted answer carries the limit headers.
async fn count_and_answer(
    door: &Door,
    request: Request,
    user: Option<uuid::Uuid>,
    path: &str,
    refusal: Option<Response>,
    next: Next,
) -> Response {
    if is_operational(path) {
        return match refusal {
            Some(refusal) => refusal,
            None => next.run(request).await,
        };
    }
    let bucket = match user {
        _ if is_webhook(request.method(), path) => match ip_bucket(door, &request) {
            Bucket::Public(ip) => Bucket::Webhook(ip),
            other => other,
        },
        _ if is_sign_in(request.method(), path) => ip_bucket(door, &request),
        Some(user) if is_upload(request.method(), path) => Bucket::Upload(user),
        Some(user) => Bucket::User(user),
        None => ip_bucket(door, &request),
    };
    let mut decision = door.limiter.check(&bucket).await;
    if decision.allowed && refusal.is_none() && is_queue_join(request.method(), path) {
        let ip = ip_bucket(door, &request);
        decision = queue_join(door, ip, user).await.unwrap_or(decision);
    }
    let mut response = if !decision.allowed {
        let mut error = ApiError::new(ErrorCode::RateLimitExceeded);
        error.retry_after = Some(decision.reset_after);
        error.into_response()
    } else if let Some(refusal) = refusal {
        refusal
    } else if may_revoke(request.method(), path) {
        // Refusals too: a reused refresh token is refused and ends its session.
        let response = next.run(request).await;
        // Boxed: inline, this read after identity's writes would size every request's future.
        let read = Box::pin(door.revocations.refresh());
        match tokio::time::timeout(Duration::from_secs(1), read).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "revocations not read after a change"),
            Err(_) => tracing::warn!("revocations not read within 1 s after a change"),
        }
        response
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    headers.insert(RATE_LIMIT, HeaderValue::from(decision.limit));
    headers.insert(RATE_REMAINING, HeaderValue::from(decision.remaining));
    response
}

/// The first of the queue-join budgets (the client IP's, then the account's) a join exceeds.
async fn queue_join(
    door: &Door,
    client: Bucket,
    user: Option<uuid::Uuid>,
) -> Option<crate::ratelimit::Decision> {
    let Bucket::Public(ip) = client else {
        return None;
    };
    let by_ip = door.limiter.check(&Bucket::QueueJoinIp(ip)).await;
    if !by_ip.allowed {
        return Some(by_ip);
    }
    let by_account = door.limiter.check(&Bucket::QueueJoinAccount(user?)).await;
    (!by_account.allowed).then_some(by_account)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_joins_are_told_apart() {
        let id = uuid::Uuid::now_v7();
        assert!(is_queue_join(
            &Method::POST,
            &format!("/api/v1/events/{id}/queue")
        ));
        assert!(!is_queue_join(
            &Method::GET,
            &format!("/api/v1/events/{id}/queue")
        ));
        assert!(!is_queue_join(&Method::POST, "/api/v1/events/x/queue"));
        assert!(!is_queue_join(
            &Method::POST,
            &format!("/api/v1/events/{id}/waitlist")
        ));
    }

    #[test]
    fn public_routes_are_an_explicit_list() {
        assert!(is_public(&Method::POST, "/api/v1/auth/login"));
        assert!(is_public(
            &Method::POST,
            "/api/v1/payments/providers/yookassa/notifications"
        ));
        assert!(is_public(
            &Method::POST,
            "/api/v1/payments/providers/stripe/notifications/x"
        ));
        assert!(!is_public(
            &Method::POST,
            "/api/v1/payments/providers/stripe/notifications/x/y"
        ));
        assert!(!is_public(
            &Method::POST,
            "/api/v1/payments/providers//notifications"
        ));
        assert!(is_public(&Method::GET, "/api/v1/payments/test/test_1"));
        assert!(!is_public(
            &Method::GET,
            "/api/v1/payments/test/test_1/more"
        ));
        assert!(!is_public(&Method::GET, "/api/v1/payments/accounts"));
        assert!(is_public(&Method::GET, "/health/ready"));
        assert!(!is_public(&Method::GET, "/api/v1/auth/login"));
        assert!(!is_public(&Method::GET, "/api/v1/users/me"));
        assert!(!is_public(&Method::DELETE, "/api/v1/auth/login"));
        let id = uuid::Uuid::now_v7();
        assert!(is_public(&Method::GET, "/api/v1/events"));
        assert!(is_public(&Method::GET, &format!("/api/v1/events/{id}")));
        assert!(is_public(
            &Method::GET,
            &format!("/api/v1/events/{id}/ticket-types")
        ));
        assert!(!is_public(
            &Method::GET,
            &format!("/api/v1/events/{id}/registrations")
        ));
        assert!(!is_public(&Method::POST, "/api/v1/events"));
        // The caller's own state needs a token.
        assert!(!is_public(
            &Method::GET,
            &format!("/api/v1/events/{id}/waitlist")
        ));
        assert!(!is_public(&Method::GET, "/api/v1/notifications/link"));
    }

    #[test]
    fn sign_in_routes_are_known() {
        for path in [
            "/api/v1/auth/login",
            "/api/v1/auth/register",
            "/api/v1/auth/messenger",
            "/api/v1/auth/forgot-password",
            "/api/v1/auth/reset-password",
            "/api/v1/auth/verify-email",
            "/api/v1/auth/resend-verification",
        ] {
            assert!(is_sign_in(&Method::POST, path), "{path}");
        }
        assert!(is_sign_in(&Method::GET, "/api/v1/auth/verify-email"));
        assert!(!is_sign_in(&Method::POST, "/api/v1/analytics/track"));
        assert!(!is_sign_in(&Method::GET, "/api/v1/events"));
        assert!(!is_sign_in(&Method::POST, "/api/v1/auth/change-password"));
    }

    #[test]
    fn trusted_header_prefixes() {
        assert!(is_trusted_header("X-User-Id"));
        assert!(is_trusted_header("x-tenant-id"));
        assert!(is_trusted_header("X-Internal-Call"));
        assert!(is_trusted_header("X-Bilet-Assertion"));
        assert!(
            !is_trusted_header("X-Bilet-Signature"),
            "the payment provider's signature reaches the webhook"
        );
        assert!(!is_trusted_header("x-correlation-id"));
    }
}
