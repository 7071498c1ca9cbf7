//! An organization's own payment provider accounts over HTTP: organizers see them (never their
//! keys), the owner sets and removes them. Stored sealed by `payments::accounts`.

use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::ErrorCode;
use domain::events::checkout::ProviderKind;
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use domain::validation::{FieldError, FieldErrors};
use payments::accounts::{AccountInput, AccountView};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Longest key or id taken.
const KEY_MAX: usize = 256;
/// Longest shop id taken.
const SHOP_MAX: usize = 64;

/// An account as shown: never its keys.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountDto {
    /// `yookassa` or `stripe`.
    pub provider: ProviderKind,
    /// YooKassa's shop id ("" for Stripe).
    pub shop_id: String,
    /// 54-FZ receipts are sent with its YooKassa payments.
    pub receipts: bool,
    /// The address to give the provider for its notifications.
    pub notification_url: String,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl From<AccountView> for AccountDto {
    fn from(a: AccountView) -> AccountDto {
        AccountDto {
            provider: a.provider,
            shop_id: a.shop_id,
            receipts: a.receipts,
            notification_url: a.notification_url,
            updated_at: a.updated_at,
        }
    }
}

/// An account's keys, as the provider issued them.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AccountRequest {
    /// YooKassa's shop id (required for YooKassa): letters, digits, `-`, `_`, at most 64.
    pub shop_id: Option<String>,
    /// The secret API key, at most 256 characters without spaces.
    pub secret_key: String,
    /// Stripe's webhook signing secret (`whsec_…`, required for Stripe).
    pub webhook_secret: Option<String>,
    /// Send 54-FZ receipts with YooKassa payments (default false).
    pub receipts: Option<bool>,
}

fn owner(caller: &Caller) -> Result<(TenantId, UserId), ApiError> {
    let user = caller.require_user()?;
    match caller.tenant {
        Some(tenant) if caller.has_any_role(&[Role::Owner]) => Ok((tenant, user)),
        _ => Err(ApiError::new(ErrorCode::Forbidden)),
    }
}

fn account_provider(name: &str) -> Result<ProviderKind, ApiError> {
    match ProviderKind::parse(name) {
        Some(kind @ (ProviderKind::YooKassa | ProviderKind::Stripe)) => Ok(kind),
        _ => Err(ApiError::not_found()),
    }
}

fn key(errors: &mut FieldErrors, field: &'static str, value: Option<&str>) -> String {
    match value.map(str::trim) {
        None | Some("") => {
            errors.add(field, FieldError::Required);
            String::new()
        }
        Some(v) if v.chars().count() > KEY_MAX => {
            errors.add(field, FieldError::TooLong { max: KEY_MAX });
            String::new()
        }
        Some(v) if v.chars().any(|c| c.is_whitespace() || c.is_control()) => {
            errors.add(field, FieldError::InvalidFormat);
            String::new()
        }
        Some(v) => v.to_string(),
    }
}

fn input(provider: ProviderKind, body: &AccountRequest) -> Result<AccountInput, ApiError> {
    let mut errors = FieldErrors::new();
    let secret_key = key(&mut errors, "secretKey", Some(&body.secret_key));
    let (shop_id, webhook_secret) = match provider {
        ProviderKind::YooKassa => {
            let shop = body.shop_id.as_deref().map(str::trim).unwrap_or("");
            if shop.is_empty() {
                errors.add("shopId", FieldError::Required);
            } else if shop.chars().count() > SHOP_MAX {
                errors.add("shopId", FieldError::TooLong { max: SHOP_MAX });
            } else if !shop
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                errors.add("shopId", FieldError::InvalidFormat);
            }
            (shop.to_string(), None)
        }
        _ => (
            String::new(),
            Some(key(
                &mut errors,
                "webhookSecret",
                body.webhook_secret.as_deref(),
            )),
        ),
    };
    errors.into_result()?;
    Ok(AccountInput {
        provider,
        shop_id,
        secret_key,
        webhook_secret,
        receipts: body.receipts.unwrap_or(false),
    })
}

/// The organization's own provider accounts (organizers); none: its events are paid through
/// the platform's.
#[utoipa::path(get, path = "/api/v1/payments/accounts", tag = "registrations",
    responses((status = 200, body = Vec<AccountDto>), (status = 403, body = crate::error::ErrorBody)))]
pub async fn list(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<Vec<AccountDto>>, ApiError> {
    let (tenant, _) = organizer(&caller)?;
    let found = state.payments.accounts(tenant).await?;
    Ok(Json(found.into_iter().map(Into::into).collect()))
}

/// Sets the organization's own account at `yookassa` or `stripe` (the owner): its events'
/// payments in that provider's currencies then go to it. The keys are stored sealed and never
/// shown again; without `PAYMENTS_CREDENTIALS_KEY` on the installation: 503.
#[utoipa::path(put, path = "/api/v1/payments/accounts/{provider}", tag = "registrations", request_body = AccountRequest,
    params(("provider" = ProviderKind, Path, description = "yookassa or stripe (test: 404)")),
    responses((status = 200, body = AccountDto), (status = 400, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)))]
pub async fn put(
    State(state): State<AppState>,
    caller: Caller,
    Path(provider): Path<String>,
    Json(body): Json<AccountRequest>,
) -> Result<Json<AccountDto>, ApiError> {
    let (tenant, user) = owner(&caller)?;
    let input = input(account_provider(&provider)?, &body)?;
    let saved = state
        .payments
        .save_account(tenant, user, &input, state.clock.now())
        .await?;
    Ok(Json(saved.into()))
}

/// Removes the organization's own account at a provider (the owner).
#[utoipa::path(delete, path = "/api/v1/payments/accounts/{provider}", tag = "registrations",
    params(("provider" = ProviderKind, Path, description = "yookassa or stripe (test: 404)")),
    responses((status = 204), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(provider): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (tenant, user) = owner(&caller)?;
    state
        .payments
        .delete_account(tenant, user, account_provider(&provider)?)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
