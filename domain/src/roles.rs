//! Roles of a member inside an organization.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// A member's role in an organization.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Role {
    /// Full control; deletes the organization; the only one who assigns roles.
    Owner,
    /// Manages events, check-in, analytics and members other than the owner.
    Moderator,
}

impl Role {
    /// The wire and database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "OWNER",
            Role::Moderator => "MODERATOR",
        }
    }
}

impl FromStr for Role {
    type Err = ();
    fn from_str(s: &str) -> Result<Role, ()> {
        match s.trim() {
            "OWNER" => Ok(Role::Owner),
            "MODERATOR" => Ok(Role::Moderator),
            _ => Err(()),
        }
    }
}

/// Parses the comma-separated roles of the `X-User-Roles` header, ignoring unknown ones.
pub fn parse_roles(header: &str) -> Vec<Role> {
    header.split(',').filter_map(|r| r.parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_header_round_trip() {
        assert_eq!(
            parse_roles("OWNER, MODERATOR,bogus"),
            vec![Role::Owner, Role::Moderator]
        );
        assert!(parse_roles("").is_empty());
    }
}
