//! Sign-in and account flows: messenger sign-in, email registration and login, refresh,
//! logout, email verification and password reset.

use super::dto::{
    AuthResponse, EmailRequest, LoginRequest, RefreshRequest, RegisterRequest,
    ResetPasswordRequest, VerifyEmailRequest,
};
use super::{passwords, session_response};
use crate::context::ClientLang;
use crate::error::ApiError;
use crate::extract::{Json, Query};
use crate::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use domain::error::{ErrorCode, Refusal};
use domain::i18n::Lang;
use domain::identity::refusals::IdentityRefusal;
use domain::identity::{limits, messenger, rules};
use domain::roles::Role;
use domain::validation::{FieldError, FieldErrors};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use storage::identity::mail_tokens::{self, TokenKind};
use storage::identity::{organizations, sessions, users};

/// Registers an email account and sends the verification mail.
#[utoipa::path(post, path = "/api/v1/auth/register", tag = "auth", request_body = RegisterRequest,
    responses((status = 201, body = super::dto::UserDto), (status = 400, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)))]
pub async fn register(
    State(state): State<AppState>,
    ClientLang(lang): ClientLang,
    Json(body): Json<RegisterRequest>,
) -> Result<(StatusCode, Json<super::dto::UserDto>), ApiError> {
    let mut errors = FieldErrors::new();
    let email = rules::normalize_email(&mut errors, "email", &body.email);
    rules::check_password(&mut errors, "password", &body.password);
    rules::check_name(&mut errors, "firstName", &body.first_name);
    rules::check_name(&mut errors, "lastName", &body.last_name);
    errors.into_result()?;
    let hash = passwords::hash(body.password, state.config.auth.bcrypt_cost).await?;
    let now = state.clock.now();
    // The account, its verification token and the request for the mail commit together;
    // the identity service's mail consumer sends it.
    let user = users::register_with_verification(
        &state.db,
        &email,
        &hash,
        body.first_name.trim(),
        body.last_name.trim(),
        lang,
        now,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(user.into())))
}

/// What signs in, as the session list shows it: the User-Agent.
fn client(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
}

/// Signs in with email and password.
#[utoipa::path(post, path = "/api/v1/auth/login", tag = "auth", request_body = LoginRequest,
    responses((status = 200, body = AuthResponse), (status = 401, body = crate::error::ErrorBody)))]
pub async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(body): Json<LoginRequest>,
) -> Result<Json<AuthResponse>, ApiError> {
    let mut errors = FieldErrors::new();
    let email = rules::normalize_email(&mut errors, "email", &body.email);
    if body.password.is_empty() {
        errors.add("password", FieldError::Required);
    }
    errors.into_result()?;
    let cost = state.config.auth.bcrypt_cost;
    let now = state.clock.now();
    let user = users::by_email(&state.db, &email).await?;
    let Some((user, hash)) = user.and_then(|u| u.password_hash.clone().map(|h| (u, h))) else {
        passwords::verify_nothing(body.password, cost).await;
        return Err(ApiError::new(ErrorCode::InvalidCredentials));
    };
    check_password(&state, &user, hash, body.password, now).await?;
    // Told only to whoever knows the password, so a guesser learns nothing from it.
    refuse_blocked(&user)?;
    users::login_succeeded(&state.db, user.id, now).await?;
    let issued = sessions::start(&state.db, user.id, client(&headers), now).await?;
    Ok(Json(session_response(
        &state,
        user,
        None,
        Vec::new(),
        issued,
    )?))
}

/// Checks a password of `user` against its `hash` under the lockout rule, for login and for
/// the current password of a password change (both guess the same secret). A locked account
/// is refused before the password is looked at, so the answer says nothing about whether the
/// password was right; a wrong password counts toward the lock.
pub(super) async fn check_password(
    state: &AppState,
    user: &users::User,
    hash: String,
    password: String,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<(), ApiError> {
    if let Some(until) = user.locked_until.filter(|until| *until > now) {
        return Err(locked(until));
    }
    if !passwords::verify(password, hash).await {
        return Err(match users::login_failed(&state.db, user.id, now).await? {
            Some(until) => locked(until),
            None => ApiError::new(ErrorCode::InvalidCredentials),
        });
    }
    Ok(())
}

/// A blocked account gets no new session (its old ones ended when it was blocked).
fn refuse_blocked(user: &users::User) -> Result<(), ApiError> {
    if user.blocked {
        return Err(Refusal::from(IdentityRefusal::AccountBlocked).into());
    }
    Ok(())
}

fn locked(until: chrono::DateTime<chrono::Utc>) -> ApiError {
    ApiError::new(ErrorCode::AccountLocked).with_details(serde_json::json!({"lockedUntil": until}))
}

/// Exchanges a refresh token for a new pair; the old token stops working.
#[utoipa::path(post, path = "/api/v1/auth/refresh", tag = "auth", request_body = RefreshRequest,
    responses((status = 200, body = AuthResponse), (status = 401, body = crate::error::ErrorBody)))]
pub async fn refresh(
    State(state): State<AppState>,
    Json(body): Json<RefreshRequest>,
) -> Result<Json<AuthResponse>, ApiError> {
    let now = state.clock.now();
    let rotated = sessions::rotate(&state.db, body.refresh_token.trim(), now).await?;
    let user = users::by_id(&state.db, rotated.user)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized))?;
    // The session keeps its organization only while the user is still a member there.
    let (tenant, roles) = match rotated.tenant {
        Some(tenant) => {
            let client = state.db.client().await?;
            match organizations::require_role(&client, tenant, user.id, organizations::ANY_MEMBER)
                .await
            {
                Ok(role) => (Some(tenant), vec![role]),
                Err(_) => (None, Vec::<Role>::new()),
            }
        }
        None => (None, Vec::new()),
    };
    Ok(Json(session_response(
        &state,
        user,
        tenant,
        roles,
        rotated.issued,
    )?))
}

/// Ends the session of a refresh token.
#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "auth", request_body = RefreshRequest, responses((status = 204)))]
pub async fn logout(
    State(state): State<AppState>,
    Json(body): Json<RefreshRequest>,
) -> Result<StatusCode, ApiError> {
    sessions::end_session(&state.db, body.refresh_token.trim(), state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// How the web front offers messenger sign-in: the bot and Telegram's sign-in page.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessengerSignInDto {
    /// The bot's numeric id, which Telegram's sign-in page takes as `bot_id`.
    pub bot_id: u64,
    /// The bot's username.
    pub bot_username: String,
    /// Telegram's sign-in page; it returns to the caller's `return_to` with the signed account
    /// in the fragment `#tgAuthResult=`, to be sent to `POST /api/v1/auth/messenger`.
    pub auth_url: String,
}

/// Whether messenger sign-in is offered, and with which bot (404 when no bot is configured).
#[utoipa::path(get, path = "/api/v1/auth/messenger", tag = "auth",
    responses((status = 200, body = MessengerSignInDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn messenger_sign_in_offer(
    State(state): State<AppState>,
) -> Result<Json<MessengerSignInDto>, ApiError> {
    let messenger = &state.config.messenger;
    let bot_id = messenger
        .bot_token
        .as_ref()
        .and_then(|token| messenger::bot_id(token.expose()))
        .ok_or_else(ApiError::not_found)?;
    Ok(Json(MessengerSignInDto {
        bot_id,
        bot_username: messenger.bot_username.clone(),
        auth_url: messenger.login_url.clone(),
    }))
}

/// The Telegram Login Widget payload, for the document only: the handler reads the body as a
/// map, since every field Telegram sends is part of what it signed, named or not.
pub struct MessengerSignInRequest;

impl utoipa::PartialSchema for MessengerSignInRequest {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, SchemaType, Type};
        let integer = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                .description(Some(description))
        };
        let text = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(description))
        };
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "The Telegram Login Widget payload as Telegram returns it (`#tgAuthResult=`). \
                 Every field is signed, so fields not named here are taken too, as strings, \
                 numbers or booleans; null, arrays and objects are refused.",
            ))
            .property("id", integer("The messenger account's id."))
            .required("id")
            .property(
                "auth_date",
                integer("When Telegram signed the payload, Unix seconds; at most 10 minutes old."),
            )
            .required("auth_date")
            .property(
                "hash",
                text(
                    "HMAC-SHA256 (hex) of the other fields sorted as `key=value` lines, keyed with \
                     SHA-256 of the bot token.",
                )
                .pattern(Some("^[0-9a-fA-F]{64}$")),
            )
            .required("hash")
            .property("first_name", text("First name."))
            .property("last_name", text("Last name."))
            .property("username", text("Username."))
            .property("photo_url", text("Profile photo URL."))
            .additional_properties(Some(ObjectBuilder::new().schema_type(
                SchemaType::from_iter([Type::String, Type::Number, Type::Boolean]),
            )))
            .into()
    }
}

impl utoipa::ToSchema for MessengerSignInRequest {}

/// Signs in (or registers) with a messenger account: the Telegram Login Widget payload.
#[utoipa::path(post, path = "/api/v1/auth/messenger", tag = "auth", request_body = MessengerSignInRequest,
    responses((status = 200, body = AuthResponse), (status = 201, body = AuthResponse), (status = 401, body = crate::error::ErrorBody)))]
pub async fn messenger_sign_in(
    State(state): State<AppState>,
    headers: HeaderMap,
    Json(payload): Json<BTreeMap<String, serde_json::Value>>,
) -> Result<(StatusCode, Json<AuthResponse>), ApiError> {
    // Loading drops a blank or malformed token; a configuration built in code is held to the
    // same rule, since an empty token keys the widget's MAC with SHA-256 of "".
    let Some(bot_token) = state
        .config
        .messenger
        .bot_token
        .as_ref()
        .filter(|token| messenger::bot_id(token.expose()).is_some())
    else {
        return Err(Refusal::from(IdentityRefusal::MessengerNotConfigured).into());
    };
    let mut fields = BTreeMap::new();
    for (key, value) in payload {
        let text = match value {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            _ => {
                return Err(ApiError::field(
                    &key,
                    FieldError::WrongType {
                        expected: "string or number".into(),
                    },
                ));
            }
        };
        fields.insert(key, text);
    }
    let mut errors = FieldErrors::new();
    for required in ["id", "auth_date", "hash"] {
        if !fields.contains_key(required) {
            errors.add(required, FieldError::Required);
        }
    }
    errors.into_result()?;
    let now = state.clock.now();
    messenger::verify_widget(
        &fields,
        bot_token.expose(),
        now,
        limits::messenger_auth_max_age(),
    )
    .map_err(|e| {
        ApiError::from(Refusal::from(match e {
            messenger::WidgetError::Stale => IdentityRefusal::MessengerDataStale,
            _ => IdentityRefusal::MessengerSignatureInvalid,
        }))
    })?;
    let name = |key: &str| {
        fields
            .get(key)
            .map(|s| s.chars().take(100).collect::<String>())
            .unwrap_or_default()
    };
    let (user, created) = users::messenger_sign_in(
        &state.db,
        &fields["id"],
        &name("first_name"),
        &name("last_name"),
        now,
    )
    .await?;
    refuse_blocked(&user)?;
    let issued = sessions::start(&state.db, user.id, client(&headers), now).await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(session_response(&state, user, None, Vec::new(), issued)?),
    ))
}

/// Result of a verification.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifiedDto {
    /// Always true on success.
    pub email_verified: bool,
}

/// Verifies an email address with the token from the mail.
#[utoipa::path(post, path = "/api/v1/auth/verify-email", tag = "auth", request_body = VerifyEmailRequest,
    responses((status = 200, body = VerifiedDto), (status = 422, body = crate::error::ErrorBody)))]
pub async fn verify_email(
    State(state): State<AppState>,
    Json(body): Json<VerifyEmailRequest>,
) -> Result<Json<VerifiedDto>, ApiError> {
    mail_tokens::verify_email(&state.db, body.token.trim(), state.clock.now()).await?;
    Ok(Json(VerifiedDto {
        email_verified: true,
    }))
}

/// The token of a verification link.
#[derive(Deserialize, utoipa::IntoParams)]
pub struct TokenQuery {
    /// The token from the mail.
    pub token: String,
}

/// The verification link itself: opening it verifies the address.
#[utoipa::path(get, path = "/api/v1/auth/verify-email", tag = "auth", params(TokenQuery),
    responses((status = 200, body = VerifiedDto), (status = 422, body = crate::error::ErrorBody)))]
pub async fn verify_email_link(
    State(state): State<AppState>,
    Query(query): Query<TokenQuery>,
) -> Result<Json<VerifiedDto>, ApiError> {
    mail_tokens::verify_email(&state.db, query.token.trim(), state.clock.now()).await?;
    Ok(Json(VerifiedDto {
        email_verified: true,
    }))
}

/// Sends the verification mail again (same answer for unknown addresses).
#[utoipa::path(post, path = "/api/v1/auth/resend-verification", tag = "auth", request_body = EmailRequest,
    responses((status = 202), (status = 429, body = crate::error::ErrorBody)))]
pub async fn resend_verification(
    State(state): State<AppState>,
    ClientLang(lang): ClientLang,
    Json(body): Json<EmailRequest>,
) -> Result<StatusCode, ApiError> {
    mail_request(state, lang, &body.email, TokenKind::EmailVerification).await
}

/// Sends a password reset link (same answer for unknown addresses).
#[utoipa::path(post, path = "/api/v1/auth/forgot-password", tag = "auth", request_body = EmailRequest,
    responses((status = 202), (status = 429, body = crate::error::ErrorBody)))]
pub async fn forgot_password(
    State(state): State<AppState>,
    ClientLang(lang): ClientLang,
    Json(body): Json<EmailRequest>,
) -> Result<StatusCode, ApiError> {
    mail_request(state, lang, &body.email, TokenKind::PasswordReset).await
}

/// Sets a new password with the token from the reset mail; every session ends.
#[utoipa::path(post, path = "/api/v1/auth/reset-password", tag = "auth", request_body = ResetPasswordRequest,
    responses((status = 204), (status = 400, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody)))]
pub async fn reset_password(
    State(state): State<AppState>,
    Json(body): Json<ResetPasswordRequest>,
) -> Result<StatusCode, ApiError> {
    let mut errors = FieldErrors::new();
    rules::check_password(&mut errors, "newPassword", &body.new_password);
    errors.into_result()?;
    let hash = passwords::hash(body.new_password, state.config.auth.bcrypt_cost).await?;
    mail_tokens::reset_password(&state.db, body.token.trim(), &hash, state.clock.now()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Counts the request against the hourly limit and, for a known address, issues the token and
/// requests the mail in one transaction; the identity service's mail consumer sends it. The
/// answer is the same whether the address exists.
async fn mail_request(
    state: AppState,
    lang: Lang,
    raw_email: &str,
    kind: TokenKind,
) -> Result<StatusCode, ApiError> {
    let mut errors = FieldErrors::new();
    let email = rules::normalize_email(&mut errors, "email", raw_email);
    errors.into_result()?;
    if !mail_tokens::request(&state.db, &email, kind, lang, state.clock.now()).await? {
        let mut error = ApiError::from(Refusal::from(IdentityRefusal::TooManyMails));
        error.retry_after = Some(limits::mail_window().num_seconds() as u64);
        return Err(error);
    }
    Ok(StatusCode::ACCEPTED)
}
