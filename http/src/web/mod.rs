//! The web front, served by the gateway on the API's origin: the files of `web/` are built
//! into the binary (so `make run` needs nothing else), `/app/…` serves them (below this
//! release's version for a year, at their plain address revalidated by ETag), compressed when
//! the browser takes gzip; every page address of the single-page app answers `index.html`,
//! whose router draws the page, and any other address outside the API answers it too with
//! 404, so a visitor sees the front's own "not found" page. Pages are public; what they show
//! comes from the API under its own rules.

mod files;
mod preview;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use files::{Prepared, bundle};

/// Page addresses the front's router draws (everything else outside the API is not a page).
const PAGES: &[&str] = &[
    "/",
    "/signin",
    "/signin/telegram",
    "/signup",
    "/verify-email",
    "/forgot-password",
    "/reset-password",
    "/org",
    "/admin",
    "/door",
    "/docs",
];
/// Address prefixes of pages with a parameter (`/e/{slug}`) or a section: the participant's
/// (`/me/…`), the organizer's (`/org/…`), the platform administrator's (`/admin/…`) and the
/// door's (`/door/…`).
const PAGE_PREFIXES: &[&str] = &["/e/", "/me/", "/org/", "/admin/", "/door/"];
/// Files browsers and crawlers ask for at the site's root.
const ROOT_FILES: &[&str] = &["/favicon.ico", "/robots.txt"];

/// Whether `path` is a page or a file of the web front: public, GET only, outside the rate
/// limits (a page load fetches a dozen files).
pub fn is_page(path: &str) -> bool {
    PAGES.contains(&path)
        || PAGE_PREFIXES.iter().any(|p| path.starts_with(p))
        || path.starts_with("/app/")
        || ROOT_FILES.contains(&path)
}

/// Whether `path` belongs to the front rather than to a machine: everything but the API,
/// health, metrics and internal routes. A GET of it is public; one that is not a page gets
/// the front's 404 page.
pub fn is_front(path: &str) -> bool {
    let under = |prefix: &str| {
        path.strip_prefix(prefix)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    };
    !(under("/api") || under("/health") || under("/internal") || path == "/metrics")
}

/// What the browser may run and load: only this origin's scripts and styles; images from
/// anywhere over HTTP(S) (covers come from the S3 store's presigned links).
const CSP: &str = "default-src 'self'; img-src 'self' data: blob: https: http:; \
     object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";
/// Powerful features the front does not use are off; the camera is for the door's scanner.
const PERMISSIONS: &str = "camera=(self), microphone=(), geolocation=(), payment=(), usb=(), \
     interest-cohort=()";
/// Once a browser has reached bilet over TLS it uses nothing else for half a year. Sent only
/// when the public address is https (a plain-HTTP development node must stay reachable).
const HSTS: &str = "max-age=15552000";

/// How a file may be kept.
#[derive(Clone, Copy)]
enum Keep {
    /// Revalidated at every use (its ETag makes that a 304).
    Revalidate,
    /// A file of this release at its versioned address: never changes.
    Year,
}

/// Whether the request takes gzip (a `q=0` turns it down).
fn takes_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|coding| {
            let mut parts = coding.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q <= 0.0)
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !refused
        })
}

/// Whether the browser's copy (`If-None-Match`) is `etag`.
fn still_fresh(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

fn send(
    file: &Prepared,
    request: &HeaderMap,
    status: StatusCode,
    keep: Keep,
    secure: bool,
) -> Response {
    let zipped = file.gzip.as_ref().filter(|_| takes_gzip(request));
    let etag = if zipped.is_some() {
        &file.gzip_etag
    } else {
        &file.etag
    };
    // A 404 page is not a copy worth keeping or revalidating.
    let mut response = if status == StatusCode::OK && still_fresh(request, etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (status, zipped.unwrap_or(&file.body).clone()).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(file.content_type),
    );
    if zipped.is_some() {
        headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if file.gzip.is_some() {
        headers.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    if status == StatusCode::OK
        && let Ok(tag) = HeaderValue::from_str(etag)
    {
        headers.insert(header::ETAG, tag);
    }
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(match (status, keep) {
            (StatusCode::OK, Keep::Year) => "public, max-age=31536000, immutable",
            (StatusCode::OK, Keep::Revalidate) => "no-cache",
            _ => "no-store",
        }),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    headers.insert(
        header::HeaderName::from_static("permissions-policy"),
        HeaderValue::from_static(PERMISSIONS),
    );
    if secure {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    response
}

/// The file at `path` below `web/`, or a 404 for machines (a missing file is not a page).
fn file(path: &str, request: &HeaderMap, keep: Keep, secure: bool) -> Response {
    match bundle().get(path) {
        Some(found) => send(found, request, StatusCode::OK, keep, secure),
        None => crate::error::ApiError::not_found().into_response(),
    }
}

fn shell(request: &HeaderMap, status: StatusCode, secure: bool) -> Response {
    match bundle().get("index.html") {
        Some(found) => send(found, request, status, Keep::Revalidate, secure),
        None => crate::error::ApiError::not_found().into_response(),
    }
}

/// `/app/{rest}`: this release's files below its version, kept for a year; at their plain
/// address (or below an older release's version, asked by a page loaded before a release),
/// today's file, revalidated.
fn asset(rest: &str, request: &HeaderMap, secure: bool) -> Response {
    // Only the app's own files: no empty or hidden segment, nothing out of `app/`.
    if rest
        .split('/')
        .any(|segment| segment.is_empty() || segment.starts_with('.'))
    {
        return crate::error::ApiError::not_found().into_response();
    }
    let versioned = rest
        .split_once('/')
        .filter(|(first, _)| first.len() == 12 && first.bytes().all(|b| b.is_ascii_hexdigit()));
    match versioned {
        Some((version, inner)) => {
            let keep = if version == bundle().version {
                Keep::Year
            } else {
                Keep::Revalidate
            };
            file(&format!("app/{inner}"), request, keep, secure)
        }
        None => file(&format!("app/{rest}"), request, Keep::Revalidate, secure),
    }
}

/// An event page: the shell with the event's link preview when there is one to show.
async fn event_page(
    state: &crate::state::AppState,
    slug: Option<String>,
    request: &HeaderMap,
    secure: bool,
) -> Response {
    let page = match (slug, bundle().get("index.html")) {
        (Some(slug), Some(plain)) => preview::page(state, &plain.body, &slug).await,
        _ => None,
    };
    match page {
        Some(page) => send(&page, request, StatusCode::OK, Keep::Revalidate, secure),
        None => shell(request, StatusCode::OK, secure),
    }
}

/// The routes of the web front; `secure`: the public address is https (HSTS is sent). Event
/// pages read their event's preview through `state`.
pub fn routes<S: Clone + Send + Sync + 'static>(
    secure: bool,
    state: crate::state::AppState,
) -> Router<S> {
    // Prepared now, not by the first visitor's request.
    bundle();
    let index = move |request: HeaderMap| async move { shell(&request, StatusCode::OK, secure) };
    let mut router = Router::new()
        .route(
            "/app/{*rest}",
            get(
                move |Path(rest): Path<String>, request: HeaderMap| async move {
                    asset(&rest, &request, secure)
                },
            ),
        )
        .route(
            "/favicon.ico",
            get(move |request: HeaderMap| async move {
                file("favicon.ico", &request, Keep::Revalidate, secure)
            }),
        )
        .route(
            "/robots.txt",
            get(move |request: HeaderMap| async move {
                file("robots.txt", &request, Keep::Revalidate, secure)
            }),
        );
    // Each section's own address with its trailing slash (`/door/`) is a page too.
    for page in PAGES.iter().chain(PAGE_PREFIXES) {
        router = router.route(page, get(index));
    }
    router
        .route(
            "/e/{*slug}",
            get(
                // An address whose slug does not decode is still the front's page.
                move |slug: Result<Path<String>, axum::extract::rejection::PathRejection>,
                      request: HeaderMap| async move {
                    event_page(&state, slug.ok().map(|Path(s)| s), &request, secure).await
                },
            ),
        )
        .route("/me/{*section}", get(index))
        .route("/org/{*section}", get(index))
        .route("/admin/{*section}", get(index))
        .route("/door/{*section}", get(index))
}

/// What the gateway answers for an address nothing else took: the front's 404 page for a
/// browser's GET of an address outside the API, the API's 404 otherwise.
pub fn fallback(
    secure: bool,
) -> impl Fn(Method, Uri, HeaderMap) -> std::future::Ready<Response> + Clone + Send + Sync + 'static
{
    move |method: Method, uri: Uri, request: HeaderMap| {
        std::future::ready(
            if matches!(method, Method::GET | Method::HEAD) && is_front(uri.path()) {
                shell(&request, StatusCode::NOT_FOUND, secure)
            } else {
                crate::error::ApiError::not_found().into_response()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_files_are_known_and_the_api_is_not() {
        for path in [
            "/",
            "/signin",
            "/e/rock-night",
            "/me/tickets",
            "/app/main.js",
            "/favicon.ico",
            "/robots.txt",
        ] {
            assert!(is_page(path), "{path}");
        }
        for path in [
            "/api/v1/events",
            "/health/ready",
            "/metrics",
            "/internal/x",
            "/e",
            "/about",
        ] {
            assert!(!is_page(path), "{path}");
        }
    }

    #[test]
    fn everything_outside_the_api_and_operations_is_the_fronts() {
        for path in [
            "/about",
            "/favicon.png",
            "/e",
            "/apiary",
            "/healthz",
            "/x/y",
        ] {
            assert!(is_front(path), "{path}");
        }
        for path in [
            "/api",
            "/api/v1/events",
            "/health/live",
            "/internal/x",
            "/metrics",
        ] {
            assert!(!is_front(path), "{path}");
        }
    }

    #[test]
    fn gzip_is_taken_unless_refused() {
        let with = |value: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                header::ACCEPT_ENCODING,
                HeaderValue::from_str(value).unwrap(),
            );
            takes_gzip(&h)
        };
        assert!(with("gzip, deflate, br"));
        assert!(with("br;q=1.0, gzip;q=0.8"));
        assert!(with("*"));
        assert!(!with("gzip;q=0"));
        assert!(!with("br, deflate"));
        assert!(!takes_gzip(&HeaderMap::new()));
    }

    #[test]
    fn a_copy_is_fresh_by_its_own_tag_only() {
        let mut h = HeaderMap::new();
        h.insert(
            header::IF_NONE_MATCH,
            HeaderValue::from_static("\"a\", W/\"b\""),
        );
        assert!(still_fresh(&h, "\"a\""));
        assert!(still_fresh(&h, "\"b\""));
        assert!(!still_fresh(&h, "\"c\""));
    }
}
