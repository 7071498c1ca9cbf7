//! The OpenAPI document, generated from the handlers' annotations. Each service contributes
//! its part; the gateway serves the merged document at `/api/v1/openapi.json`.

use crate::error::ErrorBody;
use crate::health;
use axum::Json;
use utoipa::OpenApi;

#[derive(OpenApi)]
#[openapi(
    info(title = "bilet API", version = "1", description = "Event ticketing platform. Errors use the body {code, message, details}; messages are Russian unless Accept-Language: en."),
    paths(health::live, health::ready),
    components(schemas(ErrorBody, health::Health, health::Checks, health::Status)),
    tags((name = "health", description = "Liveness and readiness"))
)]
struct Platform;

/// The merged document of every service.
pub fn document() -> utoipa::openapi::OpenApi {
    let mut doc = Platform::openapi();
    doc.merge(crate::identity::openapi());
    doc.merge(crate::events::openapi());
    doc.merge(crate::media::openapi());
    doc.merge(crate::analytics::openapi());
    doc.merge(crate::notifications::openapi());
    doc.components
        .get_or_insert_with(Default::default)
        .security_schemes
        .insert(
            "bearer".into(),
            utoipa::openapi::security::SecurityScheme::Http(
                utoipa::openapi::security::HttpBuilder::new()
                    .scheme(utoipa::openapi::security::HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
    doc
}

/// `GET /api/v1/openapi.json`.
pub async fn serve() -> Json<utoipa::openapi::OpenApi> {
    Json(document())
}
