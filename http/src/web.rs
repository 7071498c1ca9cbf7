//! The web front, served by the gateway on the API's origin: the files of `web/` are built
//! into the binary (so `make run` needs nothing else), `/app/…` serves them with their content
//! types, and every page address of the single-page app answers `index.html`, whose router
//! draws the page. Pages are public; what they show comes from the API under its own rules.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use include_dir::{Dir, include_dir};

static WEB: Dir<'_> = include_dir!("$CARGO_MANIFEST_DIR/../web");

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

/// Whether `path` is a page or a file of the web front (public, GET only).
pub fn is_page(path: &str) -> bool {
    PAGES.contains(&path)
        || PAGE_PREFIXES.iter().any(|p| path.starts_with(p))
        || path.starts_with("/app/")
}

/// What the browser may run and load: only this origin's scripts and styles; images from
/// anywhere over HTTP(S) (covers come from the S3 store's presigned links).
const CSP: &str = "default-src 'self'; img-src 'self' data: blob: https: http:; \
     object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

fn file(path: &str) -> Response {
    let Some(found) = WEB.get_file(path) else {
        return crate::error::ApiError::not_found().into_response();
    };
    let mut response = (StatusCode::OK, found.contents()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(path)),
    );
    // Files keep their names across releases: the browser asks again (cheaply, by ETag-less
    // revalidation) rather than running yesterday's script against today's API.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
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
    response
}

async fn index() -> Response {
    file("index.html")
}

async fn asset(Path(rest): Path<String>) -> Response {
    // Only the app's own files: the tests and notes of `web/` are not served.
    if rest
        .split('/')
        .any(|segment| segment.is_empty() || segment.starts_with('.'))
    {
        return crate::error::ApiError::not_found().into_response();
    }
    file(&format!("app/{rest}"))
}

/// The routes of the web front.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new().route("/app/{*rest}", get(asset));
    // Each section's own address with its trailing slash (`/door/`) is a page too.
    for page in PAGES.iter().chain(PAGE_PREFIXES) {
        router = router.route(page, get(index));
    }
    router
        .route("/e/{*slug}", get(index))
        .route("/me/{*section}", get(index))
        .route("/org/{*section}", get(index))
        .route("/admin/{*section}", get(index))
        .route("/door/{*section}", get(index))
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
        ] {
            assert!(is_page(path), "{path}");
        }
        for path in [
            "/api/v1/events",
            "/health/ready",
            "/metrics",
            "/internal/x",
            "/e",
        ] {
            assert!(!is_page(path), "{path}");
        }
    }

    #[test]
    fn the_shell_and_its_script_are_built_in() {
        let index = WEB.get_file("index.html").map(|f| f.contents_utf8());
        assert!(
            index
                .flatten()
                .is_some_and(|html| html.contains("/app/main.js"))
        );
        assert!(WEB.get_file("app/main.js").is_some());
        assert_eq!(
            content_type("app/main.js"),
            "text/javascript; charset=utf-8"
        );
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
    }
}
