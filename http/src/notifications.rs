//! The notification service over HTTP (port 8084): the message templates and each user's
//! notification settings. Sending and the bot arrive with the rest of the service.

use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::Json;
use crate::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::routing::get;
use domain::i18n::Lang;
use domain::notifications::templates;
use domain::notifications::{Kind, OptOut, Preferences};
use serde::Serialize;
use storage::notifications::preferences;
use utoipa::OpenApi;

/// The routes of the notification service.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/notifications/templates", get(list_templates))
        .route(
            "/api/v1/notifications/preferences",
            get(get_preferences).put(put_preferences),
        )
        .route("/api/v1/notifications/link", axum::routing::post(link))
}

#[derive(OpenApi)]
#[openapi(
    paths(list_templates, get_preferences, put_preferences, link),
    tags((name = "notifications", description = "Templates and notification settings"))
)]
struct NotificationsApi;

/// The notification service's part of the OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    NotificationsApi::openapi()
}

/// A template's texts.
#[derive(Serialize, utoipa::ToSchema)]
pub struct TemplateTexts {
    /// Russian (MarkdownV2).
    pub ru: &'static str,
    /// English (MarkdownV2).
    pub en: &'static str,
}

/// One template.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TemplateDto {
    /// Its name (the kind of notification).
    pub name: Kind,
    /// The setting that silences it; absent for service notices, which always go out.
    pub opt_out: Option<OptOut>,
    /// The `{{variables}}` it uses.
    pub variables: Vec<String>,
    /// The texts.
    pub texts: TemplateTexts,
}

/// Lists the message templates.
#[utoipa::path(get, path = "/api/v1/notifications/templates", tag = "notifications",
    responses((status = 200, body = [TemplateDto]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_templates(caller: Caller) -> Result<Json<Vec<TemplateDto>>, ApiError> {
    caller.require_user()?;
    Ok(Json(
        Kind::ALL
            .into_iter()
            .map(|kind| TemplateDto {
                name: kind,
                opt_out: kind.opt_out(),
                variables: templates::variables(kind),
                texts: TemplateTexts {
                    ru: templates::text(kind, Lang::Ru),
                    en: templates::text(kind, Lang::En),
                },
            })
            .collect(),
    ))
}

/// The caller's notification settings.
#[utoipa::path(get, path = "/api/v1/notifications/preferences", tag = "notifications",
    responses((status = 200, body = Preferences), (status = 401, body = crate::error::ErrorBody)))]
pub async fn get_preferences(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Preferences>, ApiError> {
    let user = caller.require_user()?;
    Ok(Json(preferences::get(&state.db, user).await?))
}

/// Replaces the caller's notification settings (every field is required).
#[utoipa::path(put, path = "/api/v1/notifications/preferences", tag = "notifications", request_body = Preferences,
    responses((status = 200, body = Preferences), (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody)))]
pub async fn put_preferences(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<Preferences>,
) -> Result<Json<Preferences>, ApiError> {
    let user = caller.require_user()?;
    Ok(Json(
        preferences::put(&state.db, user, &body, state.clock.now()).await?,
    ))
}

/// The deep link that binds a messenger chat to the caller's account.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkDto {
    /// `https://t.me/<bot>?start=<token>`: open it and press Start.
    pub url: String,
    /// The token stops working then (it also works only once).
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// A one-time deep link to the bot that binds the chat it is opened in to the caller.
#[utoipa::path(post, path = "/api/v1/notifications/link", tag = "notifications",
    responses((status = 200, body = LinkDto), (status = 401, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn link(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<LinkDto>, ApiError> {
    let user = caller.require_user()?;
    let bot = &state.config.messenger;
    if bot.bot_token.is_none() || bot.bot_username.trim().is_empty() {
        return Err(
            ApiError::new(domain::ErrorCode::BusinessRule).with_text(domain::i18n::Text {
                ru: "Бот мессенджера не настроен",
                en: "The messenger bot is not configured",
            }),
        );
    }
    let (token, expires_at) =
        storage::notifications::links::create(&state.db, user, state.clock.now()).await?;
    Ok(Json(LinkDto {
        url: format!("https://t.me/{}?start={token}", bot.bot_username.trim()),
        expires_at,
    }))
}
