//! Groups inside an organization, used for private events. Organizers (OWNER, MODERATOR)
//! manage them; users join with the group's invite code.

use super::organizations::{ANY_MEMBER, require_role};
use super::{publish, random_code};
use crate::db::{Database, Scope, page};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::identity::{GroupMemberAdded, GroupState};
use domain::error::Refusal;
use domain::identity::refusals::IdentityRefusal;
use domain::ids::{TenantId, UserId};
use domain::paging::{Page, PageRequest, SortDir, SortField, SortWhitelist};
use domain::roles::Role;
use tokio_postgres::{Client, Row};
use uuid::Uuid;

/// Length of a group invite code.
pub const CODE_LEN: usize = 12;

/// Sortable fields of the group list.
pub const SORT: SortWhitelist = SortWhitelist {
    fields: &[
        SortField {
            api: "createdAt",
            column: "created_at",
        },
        SortField {
            api: "name",
            column: "name",
        },
    ],
    default: ("createdAt", SortDir::Desc),
};

/// Sortable fields of the group member list.
pub const MEMBER_SORT: SortWhitelist = SortWhitelist {
    fields: &[
        SortField {
            api: "joinedAt",
            column: "gm.joined_at",
        },
        SortField {
            api: "firstName",
            column: "u.first_name",
        },
    ],
    default: ("joinedAt", SortDir::Asc),
};

const ORGANIZERS: &[Role] = &[Role::Owner, Role::Moderator];

/// A group.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Id.
    pub id: Uuid,
    /// Owning organization.
    pub organization_id: TenantId,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Code users join with.
    pub invite_code: String,
    /// Creator.
    pub created_by: UserId,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// A member of a group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupMember {
    /// The user.
    pub user_id: UserId,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Who shared the code, if known.
    pub invited_by: Option<UserId>,
    /// Join time.
    pub joined_at: DateTime<Utc>,
}

const COLUMNS: &str =
    "id, organization_id, name, description, invite_code, created_by, created_at, updated_at";

fn from_row(row: &Row) -> Group {
    Group {
        id: row.get(0),
        organization_id: TenantId(row.get(1)),
        name: row.get(2),
        description: row.get(3),
        invite_code: row.get(4),
        created_by: UserId(row.get(5)),
        created_at: row.get(6),
        updated_at: row.get(7),
    }
}

async fn load(client: &Client, id: Uuid) -> Result<Group> {
    let row = client
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM user_service.groups g
                 WHERE id = $1 AND EXISTS (SELECT 1 FROM user_service.organizations o WHERE o.id = g.organization_id AND o.deleted_at IS NULL)"
            ),
            &[&id],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    Ok(from_row(&row))
}

/// Creates a group (organizers only) and publishes group.created.
pub async fn create(
    db: &Database,
    org: TenantId,
    caller: UserId,
    name: &str,
    description: &str,
    now: DateTime<Utc>,
) -> Result<Group> {
    let tx = db.begin(Scope::tenant(org, Some(caller))).await?;
    require_role(&tx, org, caller, ORGANIZERS).await?;
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO user_service.groups (id, organization_id, name, description, invite_code, created_by, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $7) RETURNING {COLUMNS}"
            ),
            &[&Uuid::now_v7(), &org.as_uuid(), &name, &description, &random_code(CODE_LEN), &caller.as_uuid(), &now],
        )
        .await?;
    let group = from_row(&row);
    publish(
        &tx,
        Some(org),
        Some(caller),
        DomainEvent::GroupCreated(GroupState {
            group_id: group.id,
            organization_id: org,
            name: group.name.clone(),
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(group)
}

/// Groups of an organization, for its members.
pub async fn list(
    db: &Database,
    org: TenantId,
    caller: UserId,
    request: &PageRequest,
) -> Result<Page<Group>> {
    let client = db.client().await?;
    require_role(&client, org, caller, ANY_MEMBER).await?;
    Ok(page::fetch(
        &client,
        COLUMNS,
        "FROM user_service.groups WHERE organization_id = $1",
        &[&org.as_uuid()],
        request,
        "id",
        from_row,
    )
    .await?)
}

/// A group, for members of its organization and of the group itself.
pub async fn get(db: &Database, id: Uuid, caller: UserId) -> Result<Group> {
    let client = db.client().await?;
    let group = load(&client, id).await?;
    let in_group: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM user_service.group_members WHERE group_id = $1 AND user_id = $2)",
            &[&id, &caller.as_uuid()],
        )
        .await?
        .get(0);
    if !in_group {
        require_role(&client, group.organization_id, caller, ANY_MEMBER).await?;
    }
    Ok(group)
}

/// Renames or redescribes a group (organizers only).
pub async fn update(
    db: &Database,
    id: Uuid,
    caller: UserId,
    name: Option<&str>,
    description: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Group> {
    let tx = db.begin(Scope::user(caller)).await?;
    let group = load(&tx, id).await?;
    require_role(&tx, group.organization_id, caller, ORGANIZERS).await?;
    let row = tx
        .query_one(
            &format!(
                "UPDATE user_service.groups SET name = COALESCE($2, name), description = COALESCE($3, description), updated_at = $4
                 WHERE id = $1 RETURNING {COLUMNS}"
            ),
            &[&id, &name, &description, &now],
        )
        .await?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// Deletes a group and its memberships (organizers only); publishes group.deleted so the
/// event service stops granting access through it.
pub async fn delete(db: &Database, id: Uuid, caller: UserId) -> Result<()> {
    let tx = db.begin(Scope::user(caller)).await?;
    let group = load(&tx, id).await?;
    require_role(&tx, group.organization_id, caller, ORGANIZERS).await?;
    tx.execute("DELETE FROM user_service.groups WHERE id = $1", &[&id])
        .await?;
    publish(
        &tx,
        Some(group.organization_id),
        Some(caller),
        DomainEvent::GroupDeleted(GroupState {
            group_id: id,
            organization_id: group.organization_id,
            name: group.name.clone(),
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The group's invite code (organizers only).
pub async fn invite_code(db: &Database, id: Uuid, caller: UserId) -> Result<Group> {
    let client = db.client().await?;
    let group = load(&client, id).await?;
    require_role(&client, group.organization_id, caller, ORGANIZERS).await?;
    Ok(group)
}

/// Members of a group, for members of its organization.
pub async fn members(
    db: &Database,
    id: Uuid,
    caller: UserId,
    request: &PageRequest,
) -> Result<Page<GroupMember>> {
    let client = db.client().await?;
    let group = load(&client, id).await?;
    require_role(&client, group.organization_id, caller, ANY_MEMBER).await?;
    Ok(page::fetch(
        &client,
        "gm.user_id, u.first_name, u.last_name, gm.invited_by, gm.joined_at",
        "FROM user_service.group_members gm JOIN user_service.users u ON u.id = gm.user_id WHERE gm.group_id = $1",
        &[&id],
        request,
        "gm.id",
        |row| GroupMember {
            user_id: UserId(row.get(0)),
            first_name: row.get(1),
            last_name: row.get(2),
            invited_by: row.get::<_, Option<Uuid>>(3).map(UserId),
            joined_at: row.get(4),
        },
    )
    .await?)
}

/// Joins a group by its code and publishes group.member.added.
pub async fn join(db: &Database, code: &str, user: UserId, now: DateTime<Utc>) -> Result<Group> {
    let tx = db.begin(Scope::user(user)).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM user_service.groups g WHERE invite_code = $1
                 AND EXISTS (SELECT 1 FROM user_service.organizations o WHERE o.id = g.organization_id AND o.deleted_at IS NULL)"
            ),
            &[&code],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let group = from_row(&row);
    let added = tx
        .execute(
            "INSERT INTO user_service.group_members (id, group_id, user_id, invited_by, joined_at)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (group_id, user_id) DO NOTHING",
            &[
                &Uuid::now_v7(),
                &group.id,
                &user.as_uuid(),
                &group.created_by.as_uuid(),
                &now,
            ],
        )
        .await?;
    if added == 0 {
        return Err(Refusal::from(IdentityRefusal::AlreadyInGroup).into());
    }
    publish(
        &tx,
        Some(group.organization_id),
        Some(user),
        DomainEvent::GroupMemberAdded(GroupMemberAdded {
            group_id: group.id,
            organization_id: group.organization_id,
            group_name: group.name.clone(),
            user_id: user,
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(group)
}
