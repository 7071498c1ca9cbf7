//! The identity service over HTTP (port 8081): authentication, users, organization
//! requests, organizations with their members and invites, and groups.

pub mod auth;
pub mod dto;
pub mod groups;
pub mod organizations;
pub mod passwords;
pub mod requests;
pub mod sessions;
pub mod users;

use crate::error::ApiError;
use crate::state::AppState;
use axum::Router;
use axum::routing::{delete, get, post, put};
use domain::ids::TenantId;
use domain::roles::Role;
use dto::AuthResponse;
use storage::identity::sessions::Issued;
use storage::identity::users::User;
use utoipa::OpenApi;

/// The routes of the identity service.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/auth/messenger",
            post(auth::messenger_sign_in).get(auth::messenger_sign_in_offer),
        )
        .route("/api/v1/auth/register", post(auth::register))
        .route("/api/v1/auth/login", post(auth::login))
        .route("/api/v1/auth/refresh", post(auth::refresh))
        .route("/api/v1/auth/logout", post(auth::logout))
        .route("/api/v1/auth/forgot-password", post(auth::forgot_password))
        .route("/api/v1/auth/reset-password", post(auth::reset_password))
        .route(
            "/api/v1/auth/verify-email",
            post(auth::verify_email).get(auth::verify_email_link),
        )
        .route(
            "/api/v1/auth/resend-verification",
            post(auth::resend_verification),
        )
        .route(
            "/api/v1/users/me",
            get(users::me).put(users::update).delete(users::delete),
        )
        .route("/api/v1/users/me/password", put(users::change_password))
        .route("/api/v1/users/me/sessions", get(sessions::list))
        .route("/api/v1/users/me/sessions/{id}", delete(sessions::end))
        .route(
            "/api/v1/organization-requests",
            post(requests::submit).get(requests::list),
        )
        .route("/api/v1/organization-requests/{id}", get(requests::get))
        .route(
            "/api/v1/organization-requests/{id}/approve",
            post(requests::approve),
        )
        .route(
            "/api/v1/organization-requests/{id}/reject",
            post(requests::reject),
        )
        .route(
            "/api/v1/organizations",
            get(organizations::list).post(organizations::create),
        )
        .route(
            "/api/v1/organizations/{id}",
            get(organizations::get)
                .put(organizations::update)
                .delete(organizations::delete),
        )
        .route(
            "/api/v1/organizations/{id}/switch",
            post(organizations::switch),
        )
        .route(
            "/api/v1/organizations/{id}/members",
            get(organizations::members),
        )
        .route(
            "/api/v1/organizations/{id}/invite",
            post(organizations::invite),
        )
        .route(
            "/api/v1/organizations/{id}/invites",
            get(organizations::pending_invites),
        )
        .route(
            "/api/v1/organizations/{id}/invites/{invite_id}",
            delete(organizations::withdraw_invite),
        )
        .route(
            "/api/v1/organizations/{id}/members/{user_id}",
            put(organizations::change_role).delete(organizations::remove_member),
        )
        .route(
            "/api/v1/organizations/join/{code}",
            post(organizations::join),
        )
        .route(
            "/api/v1/organizations/{id}/groups",
            get(groups::list).post(groups::create),
        )
        .route(
            "/api/v1/groups/{id}",
            get(groups::get).put(groups::update).delete(groups::delete),
        )
        .route("/api/v1/groups/{id}/invite", post(groups::invite))
        .route("/api/v1/groups/{id}/members", get(groups::members))
        .route("/api/v1/groups/join/{code}", post(groups::join))
}

#[derive(OpenApi)]
#[openapi(
    paths(
        auth::messenger_sign_in, auth::messenger_sign_in_offer, auth::register, auth::login, auth::refresh, auth::logout,
        auth::forgot_password, auth::reset_password, auth::verify_email, auth::verify_email_link,
        auth::resend_verification,
        users::me, users::update, users::delete, users::change_password, sessions::list, sessions::end,
        requests::submit, requests::list, requests::get, requests::approve, requests::reject,
        organizations::list, organizations::create, organizations::get, organizations::update,
        organizations::delete, organizations::switch, organizations::members, organizations::invite,
        organizations::pending_invites, organizations::withdraw_invite,
        organizations::change_role, organizations::remove_member, organizations::join,
        groups::list, groups::create, groups::get, groups::update, groups::delete, groups::invite,
        groups::members, groups::join,
    ),
    // Bodies the handlers read in their own way are named here too, so the document has them.
    components(schemas(
        organizations::PendingInviteDto,
        auth::MessengerSignInRequest,
        dto::RejectRequest
    )),
    tags(
        (name = "auth", description = "Sign-in, registration, tokens"),
        (name = "users", description = "The signed-in user"),
        (name = "organizations", description = "Organization requests, organizations, members, invites"),
        (name = "groups", description = "Groups for private events"),
    )
)]
struct IdentityApi;

/// The identity service's part of the OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    IdentityApi::openapi()
}

/// Signs an access token for a session and builds the sign-in response.
pub(crate) fn session_response(
    state: &AppState,
    user: User,
    tenant: Option<TenantId>,
    roles: Vec<Role>,
    issued: Issued,
) -> Result<AuthResponse, ApiError> {
    let access = state
        .tokens
        .issue(
            user.id,
            user.email.clone(),
            tenant,
            roles,
            Some(issued.session_id),
            user.access_version,
            state.clock.now(),
        )
        .map_err(|e| ApiError::internal(&e))?;
    Ok(AuthResponse {
        access_token: access.token,
        refresh_token: issued.token,
        token_type: "Bearer",
        expires_in: access.expires_in,
        user: user.into(),
    })
}
