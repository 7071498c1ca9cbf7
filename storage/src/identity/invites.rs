//! Organization invites: a code valid 7 days, used once, that makes its holder a member with
//! the invite's role. Those who may create invites may also list the pending ones (unused,
//! unexpired) and withdraw one.

use super::organizations::{Organization, require_role};
use super::{publish, random_code};
use crate::db::{Database, Scope, page};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::identity::MemberAdded;
use domain::error::Refusal;
use domain::identity::limits;
use domain::identity::members::may_invite_as;
use domain::identity::refusals::IdentityRefusal;
use domain::ids::{TenantId, UserId};
use domain::paging::{Page, PageRequest, SortDir, SortField, SortWhitelist};
use domain::roles::Role;
use tokio_postgres::Row;
use uuid::Uuid;

/// Length of an organization invite code.
pub const CODE_LEN: usize = 16;

/// The roles that create invites, and so also list and withdraw the pending ones.
pub const INVITERS: &[Role] = &[Role::Owner, Role::Moderator];

/// Sortable fields of the pending invite list.
pub const SORT: SortWhitelist = SortWhitelist {
    fields: &[
        SortField {
            api: "createdAt",
            column: "i.created_at",
        },
        SortField {
            api: "expiresAt",
            column: "i.expires_at",
        },
    ],
    default: ("createdAt", SortDir::Desc),
};

/// An invite just created.
#[derive(Clone, Debug, PartialEq)]
pub struct Invite {
    /// Id.
    pub id: Uuid,
    /// The organization.
    pub organization_id: TenantId,
    /// The code to share.
    pub code: String,
    /// The role it grants.
    pub role: Role,
    /// Messenger username it was meant for, if given.
    pub messenger_username: Option<String>,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
}

/// Creates an invite (OWNER or MODERATOR; moderators only).
pub async fn create(
    db: &Database,
    org: TenantId,
    caller: UserId,
    role: Role,
    messenger_username: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Invite> {
    let client = db.client().await?;
    require_role(&client, org, caller, INVITERS).await?;
    may_invite_as(role)?;
    let invite = Invite {
        id: Uuid::now_v7(),
        organization_id: org,
        code: random_code(CODE_LEN),
        role,
        messenger_username: messenger_username.map(str::to_string),
        expires_at: now + limits::invite_ttl(),
    };
    client
        .execute(
            "INSERT INTO user_service.organization_invites
                (id, organization_id, invite_code, invited_by, messenger_username, role, expires_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &invite.id,
                &org.as_uuid(),
                &invite.code,
                &caller.as_uuid(),
                &invite.messenger_username,
                &role.as_str(),
                &invite.expires_at,
                &now,
            ],
        )
        .await?;
    Ok(invite)
}

/// An invite not used yet, with its creation time.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingInvite {
    /// The invite.
    pub invite: Invite,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

fn pending_from_row(row: &Row) -> PendingInvite {
    let role: String = row.get(3);
    PendingInvite {
        invite: Invite {
            id: row.get(0),
            organization_id: TenantId(row.get(1)),
            code: row.get(2),
            role: role.parse().unwrap_or(Role::Moderator),
            messenger_username: row.get(4),
            expires_at: row.get(5),
        },
        created_at: row.get(6),
    }
}

/// The organization's invites that still work at `now` (not used, not expired), for those who
/// may create invites.
pub async fn pending(
    db: &Database,
    org: TenantId,
    caller: UserId,
    now: DateTime<Utc>,
    request: &PageRequest,
) -> Result<Page<PendingInvite>> {
    let client = db.client().await?;
    require_role(&client, org, caller, INVITERS).await?;
    Ok(page::fetch(
        &client,
        "i.id, i.organization_id, i.invite_code, i.role, i.messenger_username, i.expires_at, i.created_at",
        "FROM user_service.organization_invites i
         WHERE i.organization_id = $1 AND i.used_at IS NULL AND i.expires_at > $2",
        &[&org.as_uuid(), &now],
        request,
        "i.id",
        pending_from_row,
    )
    .await?)
}

/// Withdraws an unused invite of the organization: its code stops working at once. 404 for an
/// unknown invite, another organization's, or one already used.
pub async fn withdraw(db: &Database, org: TenantId, caller: UserId, invite: Uuid) -> Result<()> {
    let client = db.client().await?;
    require_role(&client, org, caller, INVITERS).await?;
    // A join holds the row (FOR UPDATE) until it commits; the delete then sees it used.
    let removed = client
        .execute(
            "DELETE FROM user_service.organization_invites
             WHERE id = $1 AND organization_id = $2 AND used_at IS NULL",
            &[&invite, &org.as_uuid()],
        )
        .await?;
    if removed == 0 {
        return Err(Refusal::not_found().into());
    }
    Ok(())
}

/// Accepts an invite: the user becomes a member with its role.
pub async fn join(
    db: &Database,
    code: &str,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<(Organization, Role)> {
    let tx = db.begin(Scope::user(user)).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT i.id, i.role, i.invited_by, i.used_at, i.expires_at, {}
                 FROM user_service.organization_invites i
                 JOIN user_service.organizations o ON o.id = i.organization_id AND o.deleted_at IS NULL
                 WHERE i.invite_code = $1 FOR UPDATE OF i",
                super::organizations::COLUMNS
            ),
            &[&code],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let invite_id: Uuid = row.get(0);
    let role: Role = row.get::<_, String>(1).parse().unwrap_or(Role::Moderator);
    let invited_by: Uuid = row.get(2);
    let used_at: Option<DateTime<Utc>> = row.get(3);
    let expires_at: DateTime<Utc> = row.get(4);
    let org = Organization {
        id: TenantId(row.get(5)),
        owner_id: UserId(row.get(6)),
        name: row.get(7),
        slug: row.get(8),
        description: row.get(9),
        logo_url: row.get(10),
        logo_id: row.get(11),
        settings: row.get(12),
        created_at: row.get(13),
        updated_at: row.get(14),
    };
    if used_at.is_some() {
        return Err(Refusal::from(IdentityRefusal::InviteUsed).into());
    }
    if expires_at <= now {
        return Err(Refusal::from(IdentityRefusal::InviteExpired).into());
    }
    let added = tx
        .execute(
            "INSERT INTO user_service.organization_members (id, organization_id, user_id, role, invited_by, joined_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (organization_id, user_id) DO NOTHING",
            &[&Uuid::now_v7(), &org.id.as_uuid(), &user.as_uuid(), &role.as_str(), &invited_by, &now],
        )
        .await?;
    if added == 0 {
        return Err(Refusal::from(IdentityRefusal::AlreadyMember).into());
    }
    tx.execute(
        "UPDATE user_service.organization_invites SET used_at = $2, used_by = $3 WHERE id = $1",
        &[&invite_id, &now, &user.as_uuid()],
    )
    .await?;
    publish(
        &tx,
        Some(org.id),
        Some(user),
        DomainEvent::MemberAdded(MemberAdded {
            organization_id: org.id,
            organization_name: org.name.clone(),
            user_id: user,
            role,
            invited_by: Some(UserId(invited_by)),
        }),
    )
    .await?;
    tx.commit().await?;
    Ok((org, role))
}
