//! Members of an organization: listing, role changes and removal, under the rules of
//! `domain::identity::members`.

use super::organizations::{ANY_MEMBER, require_role};
use super::publish;
use crate::db::{Database, Scope, page};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::identity::{MemberRemoved, MemberRoleChanged};
use domain::error::Refusal;
use domain::identity::members::{may_change_role, may_remove};
use domain::ids::{TenantId, UserId};
use domain::paging::{Page, PageRequest, SortDir, SortField, SortWhitelist};
use domain::roles::Role;
use tokio_postgres::Row;

/// Sortable fields of the member list.
pub const SORT: SortWhitelist = SortWhitelist {
    fields: &[
        SortField {
            api: "joinedAt",
            column: "m.joined_at",
        },
        SortField {
            api: "role",
            column: "m.role",
        },
        SortField {
            api: "firstName",
            column: "u.first_name",
        },
        SortField {
            api: "lastName",
            column: "u.last_name",
        },
    ],
    default: ("joinedAt", SortDir::Asc),
};

/// A member with the user's public fields.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// The user.
    pub user_id: UserId,
    /// Role.
    pub role: Role,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Email, if any.
    pub email: Option<String>,
    /// Who invited them.
    pub invited_by: Option<UserId>,
    /// When they joined.
    pub joined_at: DateTime<Utc>,
}

fn from_row(row: &Row) -> Member {
    let role: String = row.get(1);
    Member {
        user_id: UserId(row.get(0)),
        role: role.parse().unwrap_or(Role::Moderator),
        first_name: row.get(2),
        last_name: row.get(3),
        email: row.get(4),
        invited_by: row.get::<_, Option<uuid::Uuid>>(5).map(UserId),
        joined_at: row.get(6),
    }
}

/// Members of an organization, for its members.
pub async fn list(
    db: &Database,
    org: TenantId,
    caller: UserId,
    request: &PageRequest,
) -> Result<Page<Member>> {
    let client = db.client().await?;
    require_role(&client, org, caller, ANY_MEMBER).await?;
    Ok(page::fetch(
        &client,
        "m.user_id, m.role, u.first_name, u.last_name, u.email, m.invited_by, m.joined_at",
        "FROM user_service.organization_members m JOIN user_service.users u ON u.id = m.user_id
         WHERE m.organization_id = $1",
        &[&org.as_uuid()],
        request,
        "m.id",
        from_row,
    )
    .await?)
}

async fn target_role(tx: &crate::Tx, org: TenantId, target: UserId) -> Result<Role> {
    let row = tx
        .query_opt(
            "SELECT role FROM user_service.organization_members WHERE organization_id = $1 AND user_id = $2 FOR UPDATE",
            &[&org.as_uuid(), &target.as_uuid()],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let role: String = row.get(0);
    Ok(role.parse().unwrap_or(Role::Moderator))
}

/// Sets a member's role (OWNER only; the OWNER's own role is fixed).
pub async fn change_role(
    db: &Database,
    org: TenantId,
    caller: UserId,
    target: UserId,
    role: Role,
) -> Result<Role> {
    let tx = db.begin(Scope::tenant(org, Some(caller))).await?;
    let caller_role = require_role(&tx, org, caller, ANY_MEMBER).await?;
    let old = target_role(&tx, org, target).await?;
    may_change_role(caller_role, old, role)?;
    tx.execute(
        "UPDATE user_service.organization_members SET role = $3 WHERE organization_id = $1 AND user_id = $2",
        &[&org.as_uuid(), &target.as_uuid(), &role.as_str()],
    )
    .await?;
    publish(
        &tx,
        Some(org),
        Some(caller),
        DomainEvent::MemberRoleChanged(MemberRoleChanged {
            organization_id: org,
            user_id: target,
            old_role: old,
            role,
        }),
    )
    .await?;
    super::revocations::user(&tx, target).await?;
    tx.commit().await?;
    Ok(role)
}

/// Removes a member: the OWNER removes others, anyone may leave; the OWNER stays.
pub async fn remove(
    db: &Database,
    org: TenantId,
    caller: UserId,
    target: UserId,
    now: DateTime<Utc>,
) -> Result<()> {
    let tx = db.begin(Scope::tenant(org, Some(caller))).await?;
    let caller_role = require_role(&tx, org, caller, ANY_MEMBER).await?;
    let role = target_role(&tx, org, target).await?;
    may_remove(caller_role, caller == target, role)?;
    tx.execute(
        "DELETE FROM user_service.organization_members WHERE organization_id = $1 AND user_id = $2",
        &[&org.as_uuid(), &target.as_uuid()],
    )
    .await?;
    publish(
        &tx,
        Some(org),
        Some(caller),
        DomainEvent::MemberRemoved(MemberRemoved {
            organization_id: org,
            user_id: target,
            role,
            removed_at: Some(now),
            reason: None,
        }),
    )
    .await?;
    super::revocations::user(&tx, target).await?;
    tx.commit().await?;
    Ok(())
}

/// One member.
pub async fn get(db: &Database, org: TenantId, user: UserId) -> Result<Option<Member>> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT m.user_id, m.role, u.first_name, u.last_name, u.email, m.invited_by, m.joined_at
             FROM user_service.organization_members m JOIN user_service.users u ON u.id = m.user_id
             WHERE m.organization_id = $1 AND m.user_id = $2",
            &[&org.as_uuid(), &user.as_uuid()],
        )
        .await?;
    Ok(row.as_ref().map(from_row))
}
