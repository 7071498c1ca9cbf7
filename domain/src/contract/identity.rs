//! Payloads of the identity service's events: people, organizations, their members and groups.
//! Fields added after the first release default when absent, so older stored rows still read.

use crate::ids::{TenantId, UserId};
use crate::roles::Role;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// How an account came to change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum UserChange {
    /// Signed up with an email and password.
    Email,
    /// Signed in with the messenger for the first time.
    Messenger,
    /// Edited their profile.
    Profile,
}

/// user.registered and user.updated: who the person is now (or that the account is gone).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserChanged {
    /// The person.
    pub user_id: UserId,
    /// Their address; none for messenger-only accounts.
    #[serde(default)]
    pub email: Option<String>,
    /// First name.
    #[serde(default)]
    pub first_name: String,
    /// Last name.
    #[serde(default)]
    pub last_name: String,
    /// Their messenger id, which is also their private chat's id.
    #[serde(default)]
    pub messenger_id: Option<String>,
    /// Their avatar file.
    #[serde(default)]
    pub avatar_id: Option<Uuid>,
    /// What happened; absent on an account deletion.
    #[serde(default)]
    pub method: Option<UserChange>,
    /// The account was deleted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
}

impl UserChanged {
    /// The notice that an account was deleted.
    pub fn deleted(user_id: UserId) -> UserChanged {
        UserChanged {
            user_id,
            email: None,
            first_name: String::new(),
            last_name: String::new(),
            messenger_id: None,
            avatar_id: None,
            method: None,
            deleted: true,
        }
    }
}

/// organization.request.created.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestCreated {
    /// The request.
    pub request_id: Uuid,
    /// Who asked.
    pub user_id: UserId,
    /// The organization's name.
    pub name: String,
    /// Its slug.
    pub slug: String,
}

/// organization.request.approved and organization.request.rejected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestReviewed {
    /// The request.
    pub request_id: Uuid,
    /// Who asked.
    pub user_id: UserId,
    /// The organization's name.
    pub name: String,
    /// Its slug.
    pub slug: String,
    /// The administrator's comment.
    #[serde(default)]
    pub reason: Option<String>,
    /// Until when an approved slug is kept for the organization.
    #[serde(default)]
    pub reserved_until: Option<DateTime<Utc>>,
}

/// organization.created.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationCreated {
    /// The organization (also its tenant id).
    pub organization_id: TenantId,
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// Its first owner.
    pub owner_id: UserId,
    /// The request it came from.
    #[serde(default)]
    pub request_id: Option<Uuid>,
}

/// organization.updated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationUpdated {
    /// The organization.
    pub organization_id: TenantId,
    /// Name.
    pub name: String,
    /// Slug.
    pub slug: String,
    /// Its logo file.
    #[serde(default)]
    pub logo_id: Option<Uuid>,
    /// An outside logo address.
    #[serde(default)]
    pub logo_url: Option<String>,
}

/// organization.deleted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationDeleted {
    /// The organization.
    pub organization_id: TenantId,
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// Its slug.
    #[serde(default)]
    pub slug: String,
}

/// organization.member.added.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberAdded {
    /// The organization.
    pub organization_id: TenantId,
    /// Its name, for the welcome.
    #[serde(default)]
    pub organization_name: String,
    /// The new member.
    pub user_id: UserId,
    /// Their role.
    pub role: Role,
    /// Who invited them.
    #[serde(default)]
    pub invited_by: Option<UserId>,
}

/// organization.member.removed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberRemoved {
    /// The organization.
    pub organization_id: TenantId,
    /// The former member.
    pub user_id: UserId,
    /// The role they had.
    pub role: Role,
    /// When they were removed.
    #[serde(default)]
    pub removed_at: Option<DateTime<Utc>>,
    /// Why, when it was not an organizer's decision (`ACCOUNT_DELETED`).
    #[serde(default)]
    pub reason: Option<String>,
}

/// organization.member.role.changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberRoleChanged {
    /// The organization.
    pub organization_id: TenantId,
    /// The member.
    pub user_id: UserId,
    /// The role before.
    pub old_role: Role,
    /// The role now.
    pub role: Role,
}

/// group.created and group.deleted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupState {
    /// The group.
    pub group_id: Uuid,
    /// Its organization.
    pub organization_id: TenantId,
    /// Its name.
    #[serde(default)]
    pub name: String,
}

/// group.member.added.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupMemberAdded {
    /// The group.
    pub group_id: Uuid,
    /// Its organization.
    pub organization_id: TenantId,
    /// Its name (the member may arrive before the group on another channel).
    #[serde(default)]
    pub group_name: String,
    /// The new member.
    pub user_id: UserId,
}
