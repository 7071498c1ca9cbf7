//! Paying and refunding over HTTP: a participant's checkout (the payment of their
//! registration at its provider), the providers' notifications, and refunds as the
//! organizer sees and asks for them. The work is `payments`'s; these only parse, authorize
//! and map.

use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use chrono::{DateTime, Utc};
use domain::ErrorCode;
use domain::error::Refusal;
use domain::events::checkout::{CheckoutStatus, ProviderKind};
use domain::events::refunds::RefundStatus;
use domain::events::refusals::EventRefusal;
use payments::notifications::{Applied, NotifyError};
use payments::provider::NotificationError;
use serde::Serialize;
use storage::Scope;
use storage::events::checkout::{Checkout, Settled};
use storage::events::refunds::{self, Refund, RefundFilter};
use utoipa::ToSchema;
use uuid::Uuid;

/// A payment opened at a provider for a registration.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutDto {
    /// The checkout.
    pub checkout_id: Uuid,
    /// The registration paid for.
    pub registration_id: Uuid,
    /// Where the participant pays (absent while the provider has not answered).
    pub payment_url: Option<String>,
    /// The provider.
    pub provider: ProviderKind,
    /// Amount due, in the smallest unit.
    pub amount_cents: i64,
    /// ISO 4217 code.
    pub currency: String,
    /// Until when the seat is held for this payment (none for a registration without a timer).
    pub expires_at: Option<DateTime<Utc>>,
    /// Where it stands.
    pub status: CheckoutStatus,
    /// 1 for the first payment of the registration, one more after each decline.
    pub attempt: i32,
}

impl From<Checkout> for CheckoutDto {
    fn from(c: Checkout) -> CheckoutDto {
        CheckoutDto {
            checkout_id: c.id,
            registration_id: c.registration_id,
            payment_url: c.payment_url,
            provider: c.provider,
            amount_cents: c.amount_cents,
            currency: c.currency,
            expires_at: c.expires_at,
            status: c.status,
            attempt: c.attempt,
        }
    }
}

/// A refund on its way to the participant.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefundDto {
    /// The refund (also its idempotency key at the provider).
    pub id: Uuid,
    /// The registration.
    pub registration_id: Uuid,
    /// Its event.
    pub event_id: Uuid,
    /// The provider, when the money went through one.
    pub provider: Option<ProviderKind>,
    /// The provider's id of the refund, once made.
    pub provider_refund_id: Option<String>,
    /// How much, in the smallest unit.
    pub amount_cents: i64,
    /// In what.
    pub currency: String,
    /// Why (`EVENT_CANCELLED`, `NO_SEAT`, `REFUNDED_BY_ORGANIZER`, …).
    pub reason: String,
    /// `REQUESTED`, `SENT`, `SUCCEEDED` or `FAILED`.
    pub status: RefundStatus,
    /// How often it was sent to the provider.
    pub sends: i32,
    /// The last failure.
    pub last_error: Option<String>,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<Refund> for RefundDto {
    fn from(r: Refund) -> RefundDto {
        RefundDto {
            id: r.id,
            registration_id: r.registration_id,
            event_id: r.event_id,
            provider: r.provider,
            provider_refund_id: r.provider_refund_id,
            amount_cents: r.amount_cents,
            currency: r.currency,
            reason: r.reason,
            status: r.status,
            sends: r.sends,
            last_error: r.last_error,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// Opens (or returns) the payment of one's own registration awaiting payment (RESERVED or
/// PENDING) at its provider: amount = price × prepayment in the ticket's currency. A provider
/// that does not answer is 503 and the same request later returns the same payment.
#[utoipa::path(post, path = "/api/v1/registrations/{id}/checkout", tag = "registrations",
    responses((status = 200, body = CheckoutDto), (status = 401, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 422, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)))]
pub async fn check_out(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<CheckoutDto>, ApiError> {
    let user = caller.require_user()?;
    let checkout = state
        .payments
        .check_out(user, id, state.clock.now())
        .await?;
    Ok(Json(checkout.into()))
}

/// The latest payment of a registration (its owner or the event's organizers): whether it is
/// open, paid or declined.
#[utoipa::path(get, path = "/api/v1/registrations/{id}/checkout", tag = "registrations",
    responses((status = 200, body = CheckoutDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn latest(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<CheckoutDto>, ApiError> {
    let scope = reader(&caller)?;
    storage::events::checkout::of_registration(&state.db, scope, id)
        .await?
        .into_iter()
        .next()
        .map(|c| Json(c.into()))
        .ok_or_else(ApiError::not_found)
}

/// The refunds of a registration (its owner or the event's organizers; anyone else's is 404),
/// newest first.
#[utoipa::path(get, path = "/api/v1/registrations/{id}/refunds", tag = "registrations",
    responses((status = 200, body = Vec<RefundDto>), (status = 401, body = crate::error::ErrorBody)))]
pub async fn of_registration(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<Vec<RefundDto>>, ApiError> {
    let scope = reader(&caller)?;
    // Someone else's registration is not found, rather than found without refunds.
    storage::events::registrations::get(&state.db, scope, id).await?;
    let filter = RefundFilter {
        registration: Some(id),
        ..RefundFilter::default()
    };
    let found = refunds::list(&state.db, scope, &filter, 100).await?;
    Ok(Json(found.into_iter().map(Into::into).collect()))
}

/// The refunds of an event (organizers of its organization; another's event is 404), newest first: what was asked, sent, returned or
/// failed, with the provider's ids.
#[utoipa::path(get, path = "/api/v1/events/{id}/refunds", tag = "registrations",
    responses((status = 200, body = Vec<RefundDto>), (status = 403, body = crate::error::ErrorBody)))]
pub async fn of_event(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<Vec<RefundDto>>, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let found = refunds::of_event(&state.db, tenant, user, id, 1000).await?;
    Ok(Json(found.into_iter().map(Into::into).collect()))
}

/// Gives back what was paid for one registration (organizers of its event): a registration
/// holding a seat is cancelled (`REFUNDED_BY_ORGANIZER`), and the refund is executed at the
/// provider. Nothing paid: 422; already refunded: 409.
#[utoipa::path(post, path = "/api/v1/registrations/{id}/refund", tag = "registrations",
    responses((status = 201, body = RefundDto), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn refund(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<(StatusCode, Json<RefundDto>), ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let refund =
        refunds::refund_registration(&state.db, tenant, user, id, state.clock.now()).await?;
    Ok((StatusCode::CREATED, Json(refund.into())))
}

/// What a notification did.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationResult {
    /// Whether it changed anything.
    pub applied: bool,
    /// `paid`, `declined`, `refund`, `unchanged` or `ignored`.
    pub effect: String,
    /// Why it was ignored.
    pub reason: Option<String>,
}

/// A payment provider's notification (`yookassa`, `stripe` or `test`). Stripe's and the test
/// provider's are signed; YooKassa's name a payment or refund that is read back from YooKassa
/// before anything changes. A payment bilet did not open is acknowledged (200) and ignored.
#[utoipa::path(post, path = "/api/v1/payments/providers/{provider}/notifications", tag = "registrations",
    request_body(content = Object, content_type = "application/json", description = "The notification as the provider sends it"),
    params(("provider" = ProviderKind, Path, description = "yookassa, stripe or test")),
    responses((status = 200, body = NotificationResult), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)))]
pub async fn notification(
    State(state): State<AppState>,
    Path(provider): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<NotificationResult>, ApiError> {
    notified(&state, &provider, None, &headers, &body).await
}

/// A payment provider's notification to an organization's own account (the address its
/// account settings show). Checked as the platform's are, with the organization's keys.
#[utoipa::path(post, path = "/api/v1/payments/providers/{provider}/notifications/{organization}", tag = "registrations",
    request_body(content = Object, content_type = "application/json", description = "The notification as the provider sends it"),
    params(("provider" = ProviderKind, Path, description = "yookassa or stripe (test: 404)"), ("organization" = Uuid, Path, description = "The organization")),
    responses((status = 200, body = NotificationResult), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 503, body = crate::error::ErrorBody)))]
pub async fn organization_notification(
    State(state): State<AppState>,
    Path((provider, organization)): Path<(String, Uuid)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<NotificationResult>, ApiError> {
    let account = Some(domain::ids::TenantId::from(organization));
    notified(&state, &provider, account, &headers, &body).await
}

async fn notified(
    state: &AppState,
    provider: &str,
    account: Option<domain::ids::TenantId>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Json<NotificationResult>, ApiError> {
    let kind = ProviderKind::parse(provider).ok_or_else(ApiError::not_found)?;
    let signature = payments::provider::signature_header(kind)
        .and_then(|name| headers.get(name))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let applied = state
        .payments
        .notify(
            provider,
            account,
            signature.as_deref(),
            body,
            state.clock.now(),
        )
        .await
        .map_err(notify_error)?;
    Ok(Json(match applied {
        Applied::Payment(Settled::Paid(_)) => result(true, "paid", None),
        Applied::Payment(Settled::Declined) => result(true, "declined", None),
        Applied::Payment(Settled::Unchanged) => result(false, "unchanged", None),
        Applied::Refund => result(true, "refund", None),
        Applied::Ignored(why) => result(false, "ignored", Some(why)),
    }))
}

fn result(applied: bool, effect: &str, reason: Option<String>) -> NotificationResult {
    NotificationResult {
        applied,
        effect: effect.into(),
        reason,
    }
}

fn notify_error(error: NotifyError) -> ApiError {
    match error {
        NotifyError::UnknownProvider(_) => ApiError::not_found(),
        NotifyError::Notification(NotificationError::Signature(why)) => {
            ApiError::from(Refusal::from(EventRefusal::PaymentSignatureInvalid))
                .with_details(serde_json::json!({"reason": why}))
        }
        NotifyError::Notification(NotificationError::Malformed(why)) => {
            ApiError::new(ErrorCode::ValidationError)
                .with_details(serde_json::json!({"reason": why}))
        }
        NotifyError::Notification(NotificationError::Unconfirmed(why)) => {
            ApiError::from(Refusal::from(EventRefusal::PaymentProviderUnavailable))
                .with_details(serde_json::json!({"reason": why}))
        }
        NotifyError::Storage(e) => e.into(),
    }
}

/// Who reads a registration's payments: an organizer of its event sees their organization's,
/// anyone else only their own (row level security decides).
fn reader(caller: &Caller) -> Result<Scope, ApiError> {
    let user = caller.require_user()?;
    Ok(match organizer(caller) {
        Ok((tenant, user)) => Scope::tenant(tenant, Some(user)),
        Err(_) => Scope::user(user),
    })
}
