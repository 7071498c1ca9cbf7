//! The media service over HTTP (port 8085): uploads, metadata, signed links, deletion, the
//! signed links of the local store, the internal attachability check, and the client other
//! services make that check with.

pub mod attachable;
pub mod dto;
pub mod files;
pub mod internal;

use crate::state::AppState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use utoipa::OpenApi;

/// The routes of the media service.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/media/upload",
            // The multipart envelope around the largest accepted file.
            post(files::upload).layer(DefaultBodyLimit::max(
                domain::media::MAX_PDF_BYTES + 64 * 1024,
            )),
        )
        .route("/api/v1/media/{id}", get(files::get).delete(files::delete))
        .route("/api/v1/media/{id}/url", get(files::url))
        .route("/api/v1/media/{id}/image", get(files::image))
        .route("/api/v1/media/files/{*key}", get(files::serve_local))
        .route(internal::ATTACHABLE, get(internal::attachable))
}

#[derive(OpenApi)]
#[openapi(
    paths(files::upload, files::get, files::url, files::image, files::delete, files::serve_local),
    components(schemas(dto::UploadForm)),
    tags((name = "media", description = "Uploads, image variants and signed links"))
)]
struct MediaApi;

/// The media service's part of the OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    MediaApi::openapi()
}
