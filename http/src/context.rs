//! Who is calling. Services trust the headers the gateway sets after checking the token
//! (`X-User-Id`, `X-Tenant-Id`, `X-User-Roles`); the gateway strips any a client sends.

use crate::error::ApiError;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use domain::ErrorCode;
use domain::ids::{TenantId, UserId};
use domain::roles::{Role, parse_roles};
use storage::Scope;

/// Header carrying the authenticated user id.
pub const USER_ID: &str = "x-user-id";
/// Header carrying the current organization (tenant) id.
pub const TENANT_ID: &str = "x-tenant-id";
/// Header carrying the caller's roles in that organization.
pub const USER_ROLES: &str = "x-user-roles";

/// The caller as told by the gateway; every field is absent for anonymous requests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Caller {
    /// The signed-in user.
    pub user: Option<UserId>,
    /// The organization the token was issued for.
    pub tenant: Option<TenantId>,
    /// Roles in that organization.
    pub roles: Vec<Role>,
}

impl Caller {
    /// The user, or 401.
    pub fn require_user(&self) -> Result<UserId, ApiError> {
        self.user
            .ok_or_else(|| ApiError::new(ErrorCode::Unauthorized))
    }

    /// The database scope of this caller.
    pub fn scope(&self) -> Scope {
        Scope {
            tenant: self.tenant,
            user: self.user,
            system: false,
        }
    }

    /// Whether the caller holds one of `roles` in the current tenant.
    pub fn has_any_role(&self, roles: &[Role]) -> bool {
        self.roles.iter().any(|r| roles.contains(r))
    }
}

fn header<'a>(parts: &'a Parts, name: &str) -> Option<&'a str> {
    parts
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Caller, ApiError> {
        // These headers come from the gateway, never from a client; a malformed one means a
        // broken deployment, so it is treated as no identity rather than trusted partially.
        let user = header(parts, USER_ID).and_then(|v| v.parse().ok());
        let tenant = header(parts, TENANT_ID).and_then(|v| v.parse().ok());
        let roles = header(parts, USER_ROLES)
            .map(parse_roles)
            .unwrap_or_default();
        Ok(Caller {
            user,
            tenant,
            roles,
        })
    }
}

/// The language the client asked for (`Accept-Language`), Russian by default.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientLang(pub domain::Lang);

impl<S: Send + Sync> FromRequestParts<S> for ClientLang {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<ClientLang, ApiError> {
        Ok(ClientLang(
            header(parts, "accept-language")
                .map(domain::Lang::from_accept_language)
                .unwrap_or_default(),
        ))
    }
}
