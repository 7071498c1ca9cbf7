//! Payments over HTTP: the provider's signed webhook (public, checked by its signature) and an
//! organizer confirming a cash or bank payment. Both feed `storage::events::payments`, the
//! same path as payment events from the broker.

use super::organizer;
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Path, parse_json};
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use domain::error::Refusal;
use domain::events::payments::{Channel, PaymentKind, PaymentOutcome, verify_signature};
use domain::events::refusals::{EventFieldText, EventRefusal};
use domain::validation::{FieldError, FieldErrors};
use serde::{Deserialize, Serialize};
use storage::Scope;
use storage::events::payments::{self, Notice};
use utoipa::ToSchema;
use uuid::Uuid;

/// Header of the provider's signature.
pub const SIGNATURE: &str = "x-bilet-signature";

/// What the provider says.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookRequest {
    /// The provider's id of the payment: the same id twice takes effect once. At most 200
    /// characters with at least one that is not whitespace (stored trimmed), no NUL.
    #[schema(
        max_length = 200,
        pattern = r"^[^\x00]*[^\x00\t-\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00]*$"
    )]
    pub id: String,
    /// `payment.completed`, `payment.failed` or `payment.refunded`.
    #[serde(rename = "type")]
    pub kind: WebhookType,
    /// The registration paid for.
    pub registration_id: Uuid,
    /// The amount in the currency's smallest unit, not negative.
    #[schema(minimum = 0)]
    pub amount_cents: i64,
    /// ISO 4217 code: three upper-case Latin letters.
    #[schema(pattern = r"^[A-Z]{3}$")]
    pub currency: String,
}

/// The webhook's types.
#[derive(Clone, Copy, Deserialize, ToSchema)]
pub enum WebhookType {
    /// The money arrived.
    #[serde(rename = "payment.completed")]
    Completed,
    /// The payment did not go through.
    #[serde(rename = "payment.failed")]
    Failed,
    /// The money went back.
    #[serde(rename = "payment.refunded")]
    Refunded,
}

impl From<WebhookType> for PaymentKind {
    fn from(t: WebhookType) -> PaymentKind {
        match t {
            WebhookType::Completed => PaymentKind::Completed,
            WebhookType::Failed => PaymentKind::Failed,
            WebhookType::Refunded => PaymentKind::Refunded,
        }
    }
}

/// What the payment did.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentResult {
    /// The payment's id.
    pub payment_id: String,
    /// The registration.
    pub registration_id: Uuid,
    /// Its effect.
    pub outcome: PaymentOutcome,
    /// The registration's status afterwards.
    pub registration_status: domain::events::registrations::RegistrationStatus,
}

/// Cash or a bank transfer an organizer received.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MarkPaidRequest {
    /// The amount received, not negative; the ticket's price when absent.
    #[schema(minimum = 0)]
    pub amount_cents: Option<i64>,
    /// Its currency, three upper-case Latin letters; the ticket's when absent.
    #[schema(pattern = r"^[A-Z]{3}$")]
    pub currency: Option<String>,
}

fn check_amount(errors: &mut FieldErrors, amount: Option<i64>, currency: Option<&str>) {
    if amount.is_some_and(|a| a < 0) {
        errors.add(
            "amountCents",
            FieldError::OutOfRange {
                min: 0,
                max: i64::MAX,
            },
        );
    }
    if let Some(c) = currency
        && !(c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
    {
        errors.add("currency", FieldError::from(EventFieldText::CurrencyCode));
    }
}

/// Receives a payment from the provider. Signed as `X-Bilet-Signature: t=<unix seconds>,
/// v1=<hex HMAC-SHA256 of "<t>.<raw body>">` with `PAYMENTS_WEBHOOK_SECRET`; older than five
/// minutes or not matching: 401. A repeated payment id answers what the first did
/// (`Idempotent-Replayed: true`).
#[utoipa::path(post, path = "/api/v1/payments/webhook", tag = "registrations", request_body = WebhookRequest,
    params(("X-Bilet-Signature" = String, Header, description = "t=<unix seconds>,v1=<hex HMAC-SHA256>")),
    responses((status = 200, body = PaymentResult), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 413, body = crate::error::ErrorBody), (status = 503, body = crate::error::ErrorBody)))]
pub async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let Some(secret) = state
        .config
        .payments
        .webhook_secret
        .as_ref()
        .filter(|s| !s.expose().is_empty())
    else {
        return Err(Refusal::from(EventRefusal::PaymentsNotConfigured).into());
    };
    let signature = headers.get(SIGNATURE).and_then(|v| v.to_str().ok());
    // The signature's time is compared with the wall clock: it is the provider's clock.
    if let Err(why) = verify_signature(
        secret.expose().as_bytes(),
        signature,
        &body,
        chrono::Utc::now().timestamp(),
    ) {
        return Err(
            ApiError::from(Refusal::from(EventRefusal::PaymentSignatureInvalid))
                .with_details(serde_json::json!({"reason": why.to_string()})),
        );
    }
    let request: WebhookRequest = parse_json(&body)?;
    let mut errors = FieldErrors::new();
    if request.id.trim().is_empty() {
        errors.add("id", FieldError::Required);
    } else if request.id.chars().count() > 200 {
        errors.add("id", FieldError::TooLong { max: 200 });
    }
    check_amount(
        &mut errors,
        Some(request.amount_cents),
        Some(&request.currency),
    );
    errors.into_result()?;
    let notice = Notice {
        id: request.id.trim().to_string(),
        kind: request.kind.into(),
        registration: request.registration_id,
        amount_cents: Some(request.amount_cents),
        currency: Some(request.currency),
        channel: Channel::Webhook,
    };
    receive(&state, Scope::system(), notice).await
}

/// Confirms a cash or bank payment of a registration awaiting payment (organizers of its
/// event). A registration already paid is answered as it is; one that ran out takes a free
/// seat, or is refused when there is none.
#[utoipa::path(post, path = "/api/v1/registrations/{id}/mark-paid", tag = "registrations", request_body(content = Option<MarkPaidRequest>),
    responses((status = 200, body = PaymentResult), (status = 400, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn mark_paid(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    crate::extract::MaybeJson(body): crate::extract::MaybeJson<MarkPaidRequest>,
) -> Result<Response, ApiError> {
    let (tenant, user) = organizer(&caller)?;
    let body = body.unwrap_or_default();
    let mut errors = FieldErrors::new();
    check_amount(&mut errors, body.amount_cents, body.currency.as_deref());
    errors.into_result()?;
    let notice = Notice {
        id: format!("manual-{}", Uuid::now_v7()),
        kind: PaymentKind::Completed,
        registration: id,
        amount_cents: body.amount_cents,
        currency: body.currency,
        channel: Channel::Manual,
    };
    receive(&state, Scope::tenant(tenant, Some(user)), notice).await
}

async fn receive(state: &AppState, scope: Scope, notice: Notice) -> Result<Response, ApiError> {
    let tx = state.db.begin(scope).await?;
    let receipt = payments::receive(&tx, &notice, state.clock.now()).await?;
    tx.commit().await?;
    let mut response = (
        StatusCode::OK,
        crate::extract::Json(PaymentResult {
            payment_id: notice.id,
            registration_id: receipt.registration.id,
            outcome: receipt.outcome,
            registration_status: receipt.registration.status,
        }),
    )
        .into_response();
    if receipt.replayed {
        response.headers_mut().insert(
            crate::idempotency::REPLAYED,
            HeaderValue::from_static("true"),
        );
    }
    Ok(response)
}
