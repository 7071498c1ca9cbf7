//! The notification service over HTTP (port 8084): the message templates, each user's
//! notification settings, the deep link that binds a messenger chat, and the internal send
//! endpoint (hidden by the gateway).

use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::Json;
use crate::paging::PageParams;
use crate::state::AppState;
use axum::Router;
use axum::extract::State;
use axum::routing::get;
use domain::error::Refusal;
use domain::i18n::Lang;
use domain::notifications::refusals::NotificationRefusal;
use domain::notifications::templates;
use domain::notifications::{Kind, OptOut, Preferences};
use domain::paging::{Page, SortDir, SortField, SortWhitelist};
use serde::{Deserialize, Serialize};
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
        .route("/api/v1/notifications/link", get(link_state).post(link))
        .route("/api/v1/notifications/send", axum::routing::post(send))
}

#[derive(OpenApi)]
#[openapi(
    paths(list_templates, get_preferences, put_preferences, link_state, link, send),
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

/// Templates are sorted by name (the only field), ascending unless asked otherwise.
pub(crate) const TEMPLATE_SORT: SortWhitelist = SortWhitelist {
    fields: &[SortField {
        api: "name",
        column: "name",
    }],
    default: ("name", SortDir::Asc),
};

fn template(kind: Kind) -> TemplateDto {
    TemplateDto {
        name: kind,
        opt_out: kind.opt_out(),
        variables: templates::variables(kind),
        texts: TemplateTexts {
            ru: templates::text(kind, Lang::Ru),
            en: templates::text(kind, Lang::En),
        },
    }
}

/// Lists the message templates, paged like every list.
#[utoipa::path(get, path = "/api/v1/notifications/templates", tag = "notifications", params(PageParams),
    responses((status = 200, description = "a page of TemplateDto"), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_templates(
    caller: Caller,
    paging: PageParams,
) -> Result<Json<Page<TemplateDto>>, ApiError> {
    caller.require_user()?;
    let page = paging.resolve(&TEMPLATE_SORT)?;
    let mut kinds = Kind::ALL.to_vec();
    kinds.sort_by_key(|k| k.as_str());
    if page.sort.dir == SortDir::Desc {
        kinds.reverse();
    }
    let total = kinds.len() as u64;
    let data = kinds
        .into_iter()
        .skip(usize::try_from(page.offset()).unwrap_or(usize::MAX))
        .take(usize::try_from(page.limit()).unwrap_or(usize::MAX))
        .map(template)
        .collect();
    Ok(Json(Page::new(data, &page, total)))
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

/// Whether a messenger chat is bound to the caller's account.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkStateDto {
    /// A chat receives the caller's notifications.
    pub linked: bool,
    /// When it was bound; null when none is.
    pub linked_at: Option<chrono::DateTime<chrono::Utc>>,
}

/// Whether a messenger chat is bound to the caller (by the deep link, or by signing in with
/// the messenger), and since when.
#[utoipa::path(get, path = "/api/v1/notifications/link", tag = "notifications",
    responses((status = 200, body = LinkStateDto), (status = 401, body = crate::error::ErrorBody)))]
pub async fn link_state(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<LinkStateDto>, ApiError> {
    let user = caller.require_user()?;
    let linked_at = storage::notifications::links::linked_at(&state.db, user).await?;
    Ok(Json(LinkStateDto {
        linked: linked_at.is_some(),
        linked_at,
    }))
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
        return Err(Refusal::from(NotificationRefusal::BotNotConfigured).into());
    }
    let (token, expires_at) =
        storage::notifications::links::create(&state.db, user, state.clock.now()).await?;
    Ok(Json(LinkDto {
        url: format!("https://t.me/{}?start={token}", bot.bot_username.trim()),
        expires_at,
    }))
}

/// Longest value of a template variable, in characters.
const MAX_VALUE_CHARS: usize = 1000;

/// A message to one user (internal callers only: the gateway does not expose this route).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendRequest {
    /// The recipient.
    pub user_id: uuid::Uuid,
    /// The template.
    pub template: Kind,
    /// Values of the template's variables (a missing one is shown as a dash).
    #[serde(default)]
    pub variables: std::collections::BTreeMap<String, String>,
    /// The organization the message concerns, if any.
    #[serde(default)]
    pub tenant_id: Option<uuid::Uuid>,
}

/// What became of a message.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendResponse {
    /// The message.
    pub id: uuid::Uuid,
    /// QUEUED or SKIPPED (a repeated key shows the message's current status).
    pub status: String,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
}

/// Queues a template message to one user; only other services may call it (a signed service
/// assertion). An `X-Idempotency-Key` (uuid) makes a repeat return the first message instead
/// of queuing another.
#[utoipa::path(post, path = "/api/v1/notifications/send", tag = "notifications", request_body = SendRequest,
    responses((status = 202, body = SendResponse), (status = 200, body = SendResponse, description = "repeated key"),
        (status = 400, body = crate::error::ErrorBody), (status = 401, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)))]
pub async fn send(
    _caller: crate::trust::ServiceCall,
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    Json(body): Json<SendRequest>,
) -> Result<(axum::http::StatusCode, Json<SendResponse>), ApiError> {
    use domain::validation::FieldError;
    let key = match headers.get("x-idempotency-key") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<uuid::Uuid>().ok())
                .ok_or_else(|| {
                    ApiError::field(
                        "X-Idempotency-Key",
                        FieldError::WrongType {
                            expected: "uuid".into(),
                        },
                    )
                })?,
        ),
    };
    let allowed = templates::variables(body.template);
    for (name, value) in &body.variables {
        if !allowed.contains(name) {
            return Err(ApiError::field(
                &format!("variables.{name}"),
                FieldError::NotAllowed {
                    allowed: allowed.clone(),
                },
            ));
        }
        if value.chars().count() > MAX_VALUE_CHARS {
            return Err(ApiError::field(
                &format!("variables.{name}"),
                FieldError::TooLong {
                    max: MAX_VALUE_CHARS,
                },
            ));
        }
    }
    let Some(parts) = &state.notifications else {
        return Err(ApiError::new(domain::ErrorCode::ServiceUnavailable));
    };
    let queued = messenger::direct::send(
        &state.db,
        &parts.queue,
        parts.telegram.is_on(),
        messenger::direct::Request {
            user: domain::ids::UserId(body.user_id),
            kind: body.template,
            values: body.variables,
            tenant: body.tenant_id.map(domain::ids::TenantId),
            key,
        },
    )
    .await?;
    let status = if queued.replayed {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::ACCEPTED
    };
    Ok((
        status,
        Json(SendResponse {
            id: queued.id,
            status: queued.status.as_str().to_string(),
            reason: queued.reason,
        }),
    ))
}
