//! Wallet passes of a confirmed ticket, for its holder: a "save to Google Wallet" link and an
//! Apple Wallet `.pkpass`. Each kind is issued only when the operator configured its signing
//! keys (`[wallet]`); otherwise it answers 404, and `GET /wallet` tells the front which
//! buttons to show.

use super::ticket_pdf::{FileBytes, attachment, confirmed};
use crate::context::{Caller, ClientLang};
use crate::error::ApiError;
use crate::extract::{Json, Path};
use crate::state::AppState;
use axum::extract::State;
use axum::response::Response;
use domain::error::Refusal;
use domain::events::refusals::EventRefusal;
use messenger::tickets::{self, apple};
use serde::Serialize;
use uuid::Uuid;

/// Which wallet passes tickets offer.
#[derive(Serialize, utoipa::ToSchema)]
pub struct WalletAvailability {
    /// "Add to Google Wallet".
    pub google: bool,
    /// "Add to Apple Wallet".
    pub apple: bool,
}

/// A save link.
#[derive(Serialize, utoipa::ToSchema)]
pub struct WalletLink {
    /// `https://pay.google.com/gp/v/save/<signed JWT>`: opening it adds the ticket.
    pub url: String,
}

fn not_configured(kind: &str) -> ApiError {
    ApiError::from(Refusal::from(EventRefusal::WalletNotConfigured))
        .with_details(serde_json::json!({"wallet": kind}))
}

/// Which wallet passes this installation issues (each needs its signing keys).
#[utoipa::path(get, path = "/api/v1/wallet", tag = "registrations",
    responses((status = 200, body = WalletAvailability), (status = 401, body = crate::error::ErrorBody)))]
pub async fn availability(
    State(state): State<AppState>,
    caller: Caller,
) -> Result<Json<WalletAvailability>, ApiError> {
    caller.require_user()?;
    Ok(Json(WalletAvailability {
        google: state.wallets.google.is_some(),
        apple: state.wallets.apple.is_some(),
    }))
}

/// The ticket's "save to Google Wallet" link: a JWT signed RS256 by the issuer's service
/// account carrying the event's ticket class and the ticket (its QR code the same value as
/// the web ticket's). 404 with `details.wallet` when Google Wallet is not configured; the
/// holder only, CONFIRMED only (409).
#[utoipa::path(get, path = "/api/v1/registrations/{id}/wallet/google", tag = "registrations",
    params(("id" = Uuid, Path, description = "the registration")),
    responses((status = 200, body = WalletLink), (status = 401, body = crate::error::ErrorBody),
        (status = 404, description = "no such registration of the caller's, or Google Wallet not configured", body = crate::error::ErrorBody),
        (status = 409, description = "the registration is not confirmed", body = crate::error::ErrorBody)))]
pub async fn google(
    State(state): State<AppState>,
    caller: Caller,
    ClientLang(lang): ClientLang,
    Path(id): Path<Uuid>,
) -> Result<Json<WalletLink>, ApiError> {
    caller.require_user()?;
    let wallet = state
        .wallets
        .google
        .as_ref()
        .ok_or_else(|| not_configured("google"))?;
    let ticket = confirmed(&state, &caller, id).await?;
    let url = wallet
        .save_url(&tickets::pass(&ticket, lang), lang, state.clock.now())
        .map_err(|e| ApiError::internal(&e))?;
    Ok(Json(WalletLink { url }))
}

/// The ticket as an Apple Wallet pass (`.pkpass`: pass.json, icons, manifest and a detached
/// PKCS#7 signature by the pass type certificate). 404 with `details.wallet` when Apple Wallet
/// is not configured; the holder only, CONFIRMED only (409).
#[utoipa::path(get, path = "/api/v1/registrations/{id}/wallet/apple", tag = "registrations",
    params(("id" = Uuid, Path, description = "the registration")),
    responses(
        (status = 200, description = "the pass", content_type = "application/vnd.apple.pkpass", body = FileBytes,
            headers(("Content-Disposition" = String, description = "attachment; filename=\"ticket-{confirmationCode}.pkpass\""))),
        (status = 401, body = crate::error::ErrorBody),
        (status = 404, description = "no such registration of the caller's, or Apple Wallet not configured", body = crate::error::ErrorBody),
        (status = 409, description = "the registration is not confirmed", body = crate::error::ErrorBody)))]
pub async fn apple(
    State(state): State<AppState>,
    caller: Caller,
    ClientLang(lang): ClientLang,
    Path(id): Path<Uuid>,
) -> Result<Response, ApiError> {
    caller.require_user()?;
    if state.wallets.apple.is_none() {
        return Err(not_configured("apple"));
    }
    let ticket = confirmed(&state, &caller, id).await?;
    let pass = tickets::pass(&ticket, lang);
    let now = state.clock.now();
    let wallets = state.wallets.clone();
    // An RSA signature and two PNGs: off the request threads.
    let bytes = tokio::task::spawn_blocking(move || match &wallets.apple {
        Some(wallet) => wallet.pkpass(&pass, lang, now).map(Some),
        None => Ok(None),
    })
    .await
    .map_err(|e| ApiError::internal(&e))?
    .map_err(|e| ApiError::internal(&e))?
    .ok_or_else(|| not_configured("apple"))?;
    let name = format!("ticket-{}.pkpass", ticket.registration.confirmation_code);
    Ok(attachment(bytes, apple::CONTENT_TYPE, &name))
}
