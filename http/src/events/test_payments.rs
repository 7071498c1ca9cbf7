//! The `test` provider's payment page: the amount, Pay and Decline. A choice is delivered as
//! the provider's signed notification, through the same path as every provider's, then the
//! payer is sent back to their ticket. Served only outside production (the provider does not
//! exist there: 404).

use crate::context::ClientLang;
use crate::error::ApiError;
use crate::extract::Path;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::Lang;
use domain::events::checkout::{CheckoutStatus, ProviderKind, decimal_amount};
use payments::test_provider::TestNotification;
use storage::events::checkout::{self, Checkout};

/// The page's policy: nothing loaded from anywhere, its own inline style only.
const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'";

async fn find(state: &AppState, payment: &str) -> Result<Checkout, ApiError> {
    if state.payments.test_provider().is_none() {
        return Err(ApiError::not_found());
    }
    checkout::by_payment(&state.db, ProviderKind::Test, payment)
        .await?
        .ok_or_else(ApiError::not_found)
}

/// The test provider's payment page.
pub async fn page(
    State(state): State<AppState>,
    ClientLang(lang): ClientLang,
    Path(payment): Path<String>,
) -> Result<Response, ApiError> {
    let found = find(&state, &payment).await?;
    let en = lang == Lang::En;
    let amount = format!("{} {}", decimal_amount(found.amount_cents), found.currency);
    let (title, note, pay, decline, settled) = if en {
        (
            "Test payment",
            "No money moves: this is bilet's test provider.",
            "Pay",
            "Decline",
            "This payment is no longer open.",
        )
    } else {
        (
            "Тестовая оплата",
            "Деньги не списываются: это тестовый платёжный провайдер bilet.",
            "Оплатить",
            "Отказаться",
            "Этот платёж уже не ожидает оплаты.",
        )
    };
    let actions = if found.status.is_open() || found.status == CheckoutStatus::Closed {
        format!(
            "<form method=\"post\"><button name=\"action\" value=\"pay\">{pay}</button> \
             <button name=\"action\" value=\"decline\">{decline}</button></form>"
        )
    } else {
        format!("<p role=\"status\">{settled}</p>")
    };
    let html = format!(
        "<!doctype html><html lang=\"{lang}\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title><style>body{{font:18px/1.5 system-ui,sans-serif;max-width:32rem;margin:2rem auto;padding:0 1rem}}\
         button{{font:inherit;padding:.6rem 1.4rem;margin:.3rem .3rem 0 0}}</style></head>\
         <body><main><h1>{title}</h1><p class=\"amount\"><strong>{amount}</strong></p><p>{note}</p>{actions}</main></body></html>",
        lang = if en { "en" } else { "ru" },
        amount = escape(&amount),
    );
    let mut response = (StatusCode::OK, html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// Pay or Decline on the test page (`action=pay|decline`, form-encoded): delivered as a signed
/// notification, then back to the ticket.
pub async fn choose(
    State(state): State<AppState>,
    Path(payment): Path<String>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let found = find(&state, &payment).await?;
    let action = form_urlencoded::parse(&body)
        .find(|(k, _)| k == "action")
        .map(|(_, v)| v.into_owned());
    let status = match action.as_deref() {
        Some("pay") => "succeeded",
        Some("decline") => "canceled",
        _ => {
            return Err(ApiError::field(
                "action",
                domain::validation::FieldError::InvalidFormat,
            ));
        }
    };
    let notification = TestNotification {
        payment_id: payment.clone(),
        status: status.into(),
        amount_cents: found.amount_cents,
        currency: found.currency.clone(),
    };
    let body = serde_json::to_vec(&notification).unwrap_or_default();
    let signature = state
        .payments
        .test_provider()
        .map(|p| p.sign(chrono::Utc::now().timestamp(), &body));
    state
        .payments
        .notify("test", None, signature.as_deref(), &body, state.clock.now())
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "the test provider's notification was not taken");
            ApiError::new(domain::ErrorCode::ServiceUnavailable)
        })?;
    // Same origin as the front: the ticket's page, relative, wherever the front is served.
    let back = format!("/me/tickets/{}", found.registration_id);
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(&back) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
