//! The event service over HTTP (port 8082): events, their life cycle and ticket types, and
//! what other services ask of it (`internal`).

pub mod catalog;
pub mod checkout;
pub mod door;
pub mod dto;
pub mod internal;
pub mod owner;
pub mod payment_accounts;
pub mod payments;
pub mod registrations;
pub mod registrations_export;
pub mod revenue;
pub mod test_payments;
pub mod ticket_pdf;
pub mod ticket_types;
pub mod waiting_room;
pub mod waitlist;
pub mod wallet;

use crate::context::Caller;
use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::routing::{get, post, put};
use domain::ErrorCode;
use domain::ids::{TenantId, UserId};
use domain::roles::Role;
use utoipa::OpenApi;

/// The routes of the event service that keep their idempotency keys in the generic store
/// (the `X-Idempotency-Key` layer wraps them).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/v1/events", get(catalog::list).post(catalog::create))
        .route(
            "/api/v1/events/{id}",
            get(catalog::get)
                .put(catalog::update)
                .delete(catalog::delete),
        )
        .route("/api/v1/events/by-slug/{slug}", get(catalog::get_by_slug))
        .route("/api/v1/events/{id}/copy", post(catalog::copy))
        .route("/api/v1/events/{id}/publish", post(catalog::publish))
        .route("/api/v1/events/{id}/unpublish", post(catalog::unpublish))
        .route("/api/v1/events/{id}/cancel", post(catalog::cancel))
        .route("/api/v1/events/{id}/complete", post(catalog::complete))
        .route(
            "/api/v1/events/{id}/ticket-types",
            get(ticket_types::list).post(ticket_types::create),
        )
        .route(
            "/api/v1/events/{id}/ticket-types/{type_id}",
            put(ticket_types::update).delete(ticket_types::delete),
        )
        .route(
            "/api/v1/events/{id}/registrations",
            get(registrations::list),
        )
        .route(
            "/api/v1/events/{id}/registrations/export",
            get(registrations_export::export),
        )
        .route(
            "/api/v1/events/{id}/check-in",
            post(registrations::check_in_by_code),
        )
        .route("/api/v1/events/{id}/door", get(door::view))
        .route("/api/v1/registrations", get(registrations::mine))
        .route(
            "/api/v1/registrations/{id}",
            get(registrations::get).delete(registrations::cancel),
        )
        .route(
            "/api/v1/registrations/{id}/check-in",
            post(registrations::check_in),
        )
        .route(
            "/api/v1/registrations/{id}/ticket.pdf",
            get(ticket_pdf::pdf),
        )
        .route(
            "/api/v1/registrations/{id}/wallet/google",
            get(wallet::google),
        )
        .route(
            "/api/v1/registrations/{id}/wallet/apple",
            get(wallet::apple),
        )
        .route("/api/v1/wallet", get(wallet::availability))
        .route(
            "/api/v1/registrations/{id}/mark-paid",
            post(payments::mark_paid),
        )
        .route("/api/v1/payments/webhook", post(payments::webhook))
        .route(
            "/api/v1/registrations/{id}/checkout",
            get(checkout::latest).post(checkout::check_out),
        )
        .route(
            "/api/v1/registrations/{id}/refunds",
            get(checkout::of_registration),
        )
        .route("/api/v1/registrations/{id}/refund", post(checkout::refund))
        .route("/api/v1/events/{id}/refunds", get(checkout::of_event))
        .route("/api/v1/events/{id}/revenue", get(revenue::of_event))
        .route("/api/v1/events/revenue", get(revenue::of_organization))
        .route(
            "/api/v1/payments/providers/{provider}/notifications",
            post(checkout::notification),
        )
        .route(
            "/api/v1/payments/providers/{provider}/notifications/{organization}",
            post(checkout::organization_notification),
        )
        .route("/api/v1/payments/accounts", get(payment_accounts::list))
        .route(
            "/api/v1/payments/accounts/{provider}",
            put(payment_accounts::put).delete(payment_accounts::delete),
        )
        .route(
            "/api/v1/payments/test/{payment}",
            get(test_payments::page).post(test_payments::choose),
        )
        .route(
            "/api/v1/events/{id}/waitlist",
            get(waitlist::mine)
                .post(waitlist::join)
                .delete(waitlist::leave),
        )
        .route(
            "/api/v1/events/{id}/waiting-room",
            get(waiting_room::get)
                .put(waiting_room::open)
                .delete(waiting_room::close),
        )
        .route(
            "/api/v1/events/{id}/queue",
            get(waiting_room::place)
                .post(waiting_room::join)
                .delete(waiting_room::leave),
        )
        .route(
            "/api/v1/events/{id}/queue/events",
            get(waiting_room::stream::follow),
        )
        .route(internal::TRACKING, get(internal::tracking))
}

/// Taking a seat keeps its idempotency record in the seat's own transaction (see
/// `storage::events::seats`), so it stays outside the generic layer.
pub fn self_idempotent_routes() -> Router<AppState> {
    Router::new().route(
        "/api/v1/events/{id}/registrations",
        post(registrations::create),
    )
}

#[derive(OpenApi)]
#[openapi(
    paths(
        catalog::list, catalog::create, catalog::get, catalog::get_by_slug, catalog::update, catalog::delete, catalog::copy, catalog::publish,
        catalog::unpublish, catalog::cancel, catalog::complete,
        ticket_types::list, ticket_types::create, ticket_types::update, ticket_types::delete,
        registrations::create, registrations::list, registrations::mine, registrations::get, registrations::cancel,
        registrations::check_in, registrations::check_in_by_code, registrations_export::export, door::view,
        ticket_pdf::pdf, wallet::availability, wallet::google, wallet::apple,
        waitlist::mine, waitlist::join, waitlist::leave,
        waiting_room::open, waiting_room::get, waiting_room::close, waiting_room::join, waiting_room::place, waiting_room::leave,
        waiting_room::stream::follow,
        payments::webhook, payments::mark_paid,
        checkout::check_out, checkout::latest, checkout::of_registration, checkout::of_event, checkout::refund,
        checkout::notification, checkout::organization_notification, revenue::of_event,
        payment_accounts::list, payment_accounts::put, payment_accounts::delete, revenue::of_organization,
    ),
    tags(
        (name = "events", description = "Events and ticket types"),
        (name = "registrations", description = "Registrations and check-in"),
        (name = "waiting room", description = "Waiting rooms of on-sales: places and admissions"),
    )
)]
struct EventsApi;

/// The event service's part of the OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    EventsApi::openapi()
}

/// The organization and user of an organizer (OWNER or MODERATOR of the token's tenant).
pub(crate) fn organizer(caller: &Caller) -> Result<(TenantId, UserId), ApiError> {
    let user = caller.require_user()?;
    match caller.tenant {
        Some(tenant) if caller.has_any_role(&[Role::Owner, Role::Moderator]) => Ok((tenant, user)),
        _ => Err(ApiError::new(ErrorCode::Forbidden)),
    }
}
