//! The access token's claims. Signing and checking live in the HTTP layer; the shape and the
//! rules of what a token says live here.

use crate::ids::{TenantId, UserId};
use crate::roles::Role;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Claims of an access token (HS256, 15 minutes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claims {
    /// The user.
    pub sub: UserId,
    /// The user's email, if any (messenger-only accounts have none).
    #[serde(default)]
    pub email: Option<String>,
    /// The current organization, if one was chosen with `switch`.
    #[serde(default)]
    pub tenant_id: Option<TenantId>,
    /// Roles in that organization.
    pub roles: Vec<Role>,
    /// Expiry, seconds since the epoch.
    pub exp: i64,
    /// Issue time, seconds since the epoch.
    pub iat: i64,
    /// The session (refresh token chain) the token belongs to.
    #[serde(default)]
    pub sid: Option<Uuid>,
    /// The user's access version when the token was issued; a membership, role or account
    /// change raises it and ends every token below it.
    #[serde(default)]
    pub ver: i64,
}
