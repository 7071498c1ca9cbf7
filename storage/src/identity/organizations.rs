//! Organizations: created from an approved request, owned by exactly one OWNER, soft deleted.

use super::publish;
use crate::db::{Database, Scope, page};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::identity::{OrganizationCreated, OrganizationDeleted, OrganizationUpdated};
use domain::error::Refusal;
use domain::identity::refusals::IdentityRefusal;
use domain::ids::{TenantId, UserId};
use domain::paging::{Page, PageRequest, SortDir, SortField, SortWhitelist};
use domain::roles::Role;
use serde_json::json;
use tokio_postgres::{Client, Row};
use uuid::Uuid;

/// Sortable fields of "my organizations".
pub const SORT: SortWhitelist = SortWhitelist {
    fields: &[
        SortField {
            api: "createdAt",
            column: "o.created_at",
        },
        SortField {
            api: "name",
            column: "o.name",
        },
        SortField {
            api: "slug",
            column: "o.slug",
        },
    ],
    default: ("createdAt", SortDir::Desc),
};

/// An organization.
#[derive(Clone, Debug, PartialEq)]
pub struct Organization {
    /// Id, also the tenant id everywhere else.
    pub id: TenantId,
    /// The OWNER.
    pub owner_id: UserId,
    /// Name.
    pub name: String,
    /// Unique slug.
    pub slug: String,
    /// Description.
    pub description: Option<String>,
    /// Logo URL.
    pub logo_url: Option<String>,
    /// Logo media file.
    pub logo_id: Option<Uuid>,
    /// Settings object.
    pub settings: serde_json::Value,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

pub(crate) const COLUMNS: &str = "o.id, o.owner_id, o.name, o.slug, o.description, o.logo_url, o.logo_id, o.settings, o.created_at, o.updated_at";

pub(crate) fn from_row(row: &Row) -> Organization {
    Organization {
        id: TenantId(row.get(0)),
        owner_id: UserId(row.get(1)),
        name: row.get(2),
        slug: row.get(3),
        description: row.get(4),
        logo_url: row.get(5),
        logo_id: row.get(6),
        settings: row.get(7),
        created_at: row.get(8),
        updated_at: row.get(9),
    }
}

/// Settings a new organization starts with.
pub fn default_settings() -> serde_json::Value {
    json!({"language": "ru", "timezone": "Europe/Moscow", "currency": "RUB"})
}

/// The caller's role in an active organization: 404 when the organization does not exist
/// (or is deleted), 403 when the caller is not a member or lacks one of `allowed`.
pub async fn require_role(
    client: &Client,
    org: TenantId,
    user: UserId,
    allowed: &[Role],
) -> Result<Role> {
    let row = client
        .query_opt(
            "SELECT m.role FROM user_service.organizations o
             LEFT JOIN user_service.organization_members m ON m.organization_id = o.id AND m.user_id = $2
             WHERE o.id = $1 AND o.deleted_at IS NULL",
            &[&org.as_uuid(), &user.as_uuid()],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let role: Option<String> = row.get(0);
    let role: Role = role
        .and_then(|r| r.parse().ok())
        .ok_or_else(Refusal::forbidden)?;
    if allowed.contains(&role) {
        Ok(role)
    } else {
        Err(Refusal::forbidden().into())
    }
}

/// Every role.
pub const ANY_MEMBER: &[Role] = &[Role::Owner, Role::Moderator];

/// Creates the organization from the caller's approved, unused request.
pub async fn create_from_request(
    db: &Database,
    user: UserId,
    request_id: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<Organization> {
    let tx = db.begin(Scope::user(user)).await?;
    let request = tx
        .query_opt(
            "SELECT id, name, slug, description FROM user_service.organization_requests
             WHERE user_id = $1 AND status = 'APPROVED' AND organization_id IS NULL AND ($2::uuid IS NULL OR id = $2)
             ORDER BY reviewed_at DESC LIMIT 1 FOR UPDATE",
            &[&user.as_uuid(), &request_id],
        )
        .await?
        .ok_or_else(|| Refusal::from(IdentityRefusal::NoApprovedRequest))?;
    let request_id: Uuid = request.get(0);
    let name: String = request.get(1);
    let slug: String = request.get(2);
    let description: Option<String> = request.get(3);
    // An approval whose reservation lapsed still lets its requester create, but only while
    // nobody else holds the slug (an organization, another user's pending or reserved request).
    super::requests::require_free_slug(&tx, &slug, user, now).await?;
    let id = TenantId::new();
    let inserted = tx
        .query_opt(
            &format!(
                "WITH o AS (
                    INSERT INTO user_service.organizations (id, owner_id, name, slug, description, settings, created_at, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (slug) WHERE deleted_at IS NULL DO NOTHING RETURNING *
                 ) SELECT {COLUMNS} FROM o"
            ),
            &[&id.as_uuid(), &user.as_uuid(), &name, &slug, &description, &default_settings(), &now],
        )
        .await?;
    let Some(row) = inserted else {
        return Err(Refusal::from(IdentityRefusal::SlugTaken).into());
    };
    let org = from_row(&row);
    tx.execute(
        "INSERT INTO user_service.organization_members (id, organization_id, user_id, role, joined_at, created_at)
         VALUES ($1, $2, $3, 'OWNER', $4, $4)",
        &[&Uuid::now_v7(), &id.as_uuid(), &user.as_uuid(), &now],
    )
    .await?;
    tx.execute(
        "UPDATE user_service.organization_requests SET organization_id = $2 WHERE id = $1",
        &[&request_id, &id.as_uuid()],
    )
    .await?;
    publish(
        &tx,
        Some(id),
        Some(user),
        DomainEvent::OrganizationCreated(OrganizationCreated {
            organization_id: id,
            name: org.name.clone(),
            slug: org.slug.clone(),
            owner_id: user,
            request_id: Some(request_id),
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(org)
}

/// The caller's organizations with their role there.
pub async fn list_mine(
    db: &Database,
    user: UserId,
    request: &PageRequest,
) -> Result<Page<(Organization, Role)>> {
    let client = db.client().await?;
    Ok(page::fetch(
        &client,
        &format!("{COLUMNS}, m.role"),
        "FROM user_service.organizations o JOIN user_service.organization_members m ON m.organization_id = o.id
         WHERE m.user_id = $1 AND o.deleted_at IS NULL",
        &[&user.as_uuid()],
        request,
        "o.id",
        |row| {
            let role: String = row.get(10);
            (from_row(row), role.parse().unwrap_or(Role::Moderator))
        },
    )
    .await?)
}

/// An organization the caller is a member of, with the caller's role.
pub async fn get(db: &Database, id: TenantId, user: UserId) -> Result<(Organization, Role)> {
    let client = db.client().await?;
    let role = require_role(&client, id, user, ANY_MEMBER).await?;
    let row = client
        .query_one(
            &format!("SELECT {COLUMNS} FROM user_service.organizations o WHERE o.id = $1"),
            &[&id.as_uuid()],
        )
        .await?;
    Ok((from_row(&row), role))
}

/// Changes to an organization; `None` keeps a field.
#[derive(Clone, Debug, Default)]
pub struct OrganizationChange {
    /// New name.
    pub name: Option<String>,
    /// New description.
    pub description: Option<String>,
    /// New logo URL.
    pub logo_url: Option<String>,
    /// New logo file (`Some(None)` removes it).
    pub logo_id: Option<Option<Uuid>>,
    /// New settings object (replaces the old one).
    pub settings: Option<serde_json::Value>,
}

/// Updates an organization (OWNER only) and publishes organization.updated.
pub async fn update(
    db: &Database,
    id: TenantId,
    user: UserId,
    change: &OrganizationChange,
    now: DateTime<Utc>,
) -> Result<Organization> {
    let tx = db.begin(Scope::tenant(id, Some(user))).await?;
    require_role(&tx, id, user, &[Role::Owner]).await?;
    let row = tx
        .query_one(
            &format!(
                "WITH o AS (
                    UPDATE user_service.organizations SET
                        name = COALESCE($2, name),
                        description = COALESCE($3, description),
                        logo_url = COALESCE($4, logo_url),
                        logo_id = CASE WHEN $5 THEN $6 ELSE logo_id END,
                        settings = COALESCE($7, settings),
                        updated_at = $8
                    WHERE id = $1 RETURNING *
                 ) SELECT {COLUMNS} FROM o"
            ),
            &[
                &id.as_uuid(),
                &change.name,
                &change.description,
                &change.logo_url,
                &change.logo_id.is_some(),
                &change.logo_id.flatten(),
                &change.settings,
                &now,
            ],
        )
        .await?;
    let org = from_row(&row);
    publish(
        &tx,
        Some(id),
        Some(user),
        DomainEvent::OrganizationUpdated(OrganizationUpdated {
            organization_id: id,
            name: org.name.clone(),
            slug: org.slug.clone(),
            logo_id: org.logo_id,
            logo_url: org.logo_url.clone(),
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(org)
}

/// Soft-deletes an organization (OWNER only); its invites stop working and the event
/// service archives its events on organization.deleted.
pub async fn delete(db: &Database, id: TenantId, user: UserId, now: DateTime<Utc>) -> Result<()> {
    let tx = db.begin(Scope::tenant(id, Some(user))).await?;
    require_role(&tx, id, user, &[Role::Owner]).await?;
    let row = tx
        .query_one(
            "UPDATE user_service.organizations SET deleted_at = $2, updated_at = $2 WHERE id = $1 RETURNING name, slug",
            &[&id.as_uuid(), &now],
        )
        .await?;
    let (name, slug): (String, String) = (row.get(0), row.get(1));
    publish(
        &tx,
        Some(id),
        Some(user),
        DomainEvent::OrganizationDeleted(OrganizationDeleted {
            organization_id: id,
            name,
            slug,
        }),
    )
    .await?;
    // Tokens issued for the organization stop working now, not when they expire.
    super::revocations::members_of(&tx, id).await?;
    tx.commit().await?;
    Ok(())
}
