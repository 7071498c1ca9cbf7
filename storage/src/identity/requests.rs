//! Organization requests: submitted by a user, reviewed by a platform administrator. An
//! approved request reserves its slug for the requester for 7 days.

use super::publish;
use crate::db::{Database, Scope, page};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::identity::{RequestCreated, RequestReviewed};
use domain::error::Refusal;
use domain::identity::limits;
use domain::identity::refusals::IdentityRefusal;
use domain::identity::requests::{RequestStatus, Review, SlugClaim, SlugFacts, slug_holder};
use domain::ids::UserId;
use domain::paging::{Page, PageRequest, SortDir, SortField, SortWhitelist};
use tokio_postgres::Row;
use uuid::Uuid;

/// Sortable fields of the request list.
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
        SortField {
            api: "slug",
            column: "slug",
        },
        SortField {
            api: "status",
            column: "status",
        },
    ],
    default: ("createdAt", SortDir::Desc),
};

/// An organization request.
#[derive(Clone, Debug, PartialEq)]
pub struct OrgRequest {
    /// Id.
    pub id: Uuid,
    /// Requester.
    pub user_id: UserId,
    /// Organization name.
    pub name: String,
    /// Requested slug.
    pub slug: String,
    /// Description.
    pub description: Option<String>,
    /// State.
    pub status: RequestStatus,
    /// Reviewing administrator.
    pub reviewed_by: Option<Uuid>,
    /// Reason given on review.
    pub review_comment: Option<String>,
    /// Review time.
    pub reviewed_at: Option<DateTime<Utc>>,
    /// Until when the slug is kept for the requester (approved requests).
    pub reserved_until: Option<DateTime<Utc>>,
    /// The organization created from it, if any.
    pub organization_id: Option<Uuid>,
    /// Submission time.
    pub created_at: DateTime<Utc>,
    /// Who asked, as the administrator reviewing it needs to know: "first last", when given.
    pub requester_name: Option<String>,
    /// The requester's email, when the account has one.
    pub requester_email: Option<String>,
}

const COLUMNS: &str =
    "id, user_id, name, slug, description, status, reviewed_by, review_comment, reviewed_at,
    reserved_until, organization_id, created_at,
    (SELECT nullif(btrim(u.first_name || ' ' || u.last_name), '') FROM user_service.users u
      WHERE u.id = organization_requests.user_id),
    (SELECT u.email FROM user_service.users u WHERE u.id = organization_requests.user_id)";

fn from_row(row: &Row) -> OrgRequest {
    let status: String = row.get(5);
    OrgRequest {
        id: row.get(0),
        user_id: UserId(row.get(1)),
        name: row.get(2),
        slug: row.get(3),
        description: row.get(4),
        status: status.parse().unwrap_or(RequestStatus::Pending),
        reviewed_by: row.get(6),
        review_comment: row.get(7),
        reviewed_at: row.get(8),
        reserved_until: row.get(9),
        organization_id: row.get(10),
        created_at: row.get(11),
        requester_name: row.get(12),
        requester_email: row.get(13),
    }
}

/// What holds `slug` (`domain::identity::requests::SlugFacts`), read inside `tx` after taking
/// the slug's lock until `tx` ends: submission, approval and creation each take it, so none of
/// them acts on facts another is about to change.
pub(crate) async fn slug_facts(tx: &crate::Tx, slug: &str) -> Result<SlugFacts> {
    super::lock(tx, &format!("slug:{slug}")).await?;
    let live_organization: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM user_service.organizations WHERE slug = $1 AND deleted_at IS NULL)",
            &[&slug],
        )
        .await?
        .get(0);
    let claims = tx
        .query(
            "SELECT user_id, status, reserved_until, organization_id IS NOT NULL
             FROM user_service.organization_requests WHERE slug = $1 AND status <> 'REJECTED'",
            &[&slug],
        )
        .await?
        .iter()
        .filter_map(|row| {
            let status: String = row.get(1);
            Some(SlugClaim {
                user_id: UserId(row.get(0)),
                status: status.parse().ok()?,
                reserved_until: row.get(2),
                used: row.get(3),
            })
        })
        .collect();
    Ok(SlugFacts {
        live_organization,
        claims,
    })
}

/// Refuses with the matching 409 unless `slug` is free for `user` at `now`, by the one rule
/// (`slug_holder`) every step applies.
pub(crate) async fn require_free_slug(
    tx: &crate::Tx,
    slug: &str,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<()> {
    let facts = slug_facts(tx, slug).await?;
    match slug_holder(&facts, user, now) {
        None => Ok(()),
        Some(holder) => Err(Refusal::from(IdentityRefusal::from(holder)).into()),
    }
}

/// Submits a request; one pending request per user, slug free.
pub async fn submit(
    db: &Database,
    user: UserId,
    name: &str,
    slug: &str,
    description: Option<&str>,
    now: DateTime<Utc>,
) -> Result<OrgRequest> {
    let tx = db.begin(Scope::user(user)).await?;
    // One submission per user at a time, so the pending check below cannot race.
    super::lock(&tx, &format!("org-request:{user}")).await?;
    let pending: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM user_service.organization_requests WHERE user_id = $1 AND status = 'PENDING')",
            &[&user.as_uuid()],
        )
        .await?
        .get(0);
    if pending {
        return Err(Refusal::from(IdentityRefusal::RequestPending).into());
    }
    require_free_slug(&tx, slug, user, now).await?;
    let inserted = tx
        .query_one(
            &format!(
                "INSERT INTO user_service.organization_requests (id, user_id, name, slug, description, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING {COLUMNS}"
            ),
            &[&Uuid::now_v7(), &user.as_uuid(), &name, &slug, &description, &now],
        )
        .await;
    let request = match inserted {
        Ok(row) => from_row(&row),
        // The slug lock makes this unreachable for the slug; kept as a 409 rather than a 500
        // should a pending request ever be written without that lock.
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::UNIQUE_VIOLATION) => {
            return Err(Refusal::from(IdentityRefusal::SlugRequested).into());
        }
        Err(e) => return Err(e.into()),
    };
    publish(
        &tx,
        None,
        Some(user),
        DomainEvent::OrganizationRequested(RequestCreated {
            request_id: request.id,
            user_id: user,
            name: name.to_string(),
            slug: slug.to_string(),
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(request)
}

/// Lists requests: all of them (optionally by status) for `None`, a user's own otherwise.
pub async fn list(
    db: &Database,
    only_of: Option<UserId>,
    status: Option<RequestStatus>,
    request: &PageRequest,
) -> Result<Page<OrgRequest>> {
    let client = db.client().await?;
    let user = only_of.map(|u| u.as_uuid());
    let status = status.map(|s| s.as_str());
    Ok(page::fetch(
        &client,
        COLUMNS,
        "FROM user_service.organization_requests WHERE ($1::uuid IS NULL OR user_id = $1) AND ($2::text IS NULL OR status = $2)",
        &[&user, &status],
        request,
        "id",
        from_row,
    )
    .await?)
}

/// One request.
pub async fn get(db: &Database, id: Uuid) -> Result<Option<OrgRequest>> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM user_service.organization_requests WHERE id = $1"),
            &[&id],
        )
        .await?;
    Ok(row.as_ref().map(from_row))
}

/// Approves or rejects a pending request.
pub async fn review(
    db: &Database,
    id: Uuid,
    admin: UserId,
    decision: Review,
    comment: Option<&str>,
    now: DateTime<Utc>,
) -> Result<OrgRequest> {
    let tx = db.begin(Scope::user(admin)).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM user_service.organization_requests WHERE id = $1 FOR UPDATE"
            ),
            &[&id],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let current = from_row(&row);
    let next = current
        .status
        .review(decision)
        .ok_or_else(|| Refusal::from(IdentityRefusal::RequestReviewed))?;
    // The slug was free at submission; an organization may have taken it since (the
    // requester's own, from an earlier approval). Approving would promise what creation
    // then refuses.
    if next == RequestStatus::Approved {
        require_free_slug(&tx, &current.slug, current.user_id, now).await?;
    }
    let reserved_until =
        (next == RequestStatus::Approved).then(|| now + limits::slug_reservation());
    let row = tx
        .query_one(
            &format!(
                "UPDATE user_service.organization_requests
                 SET status = $2, reviewed_by = $3, review_comment = $4, reviewed_at = $5, reserved_until = $6
                 WHERE id = $1 RETURNING {COLUMNS}"
            ),
            &[&id, &next.as_str(), &admin.as_uuid(), &comment, &now, &reserved_until],
        )
        .await?;
    let reviewed = from_row(&row);
    let review = RequestReviewed {
        request_id: id,
        user_id: reviewed.user_id,
        name: reviewed.name.clone(),
        slug: reviewed.slug.clone(),
        reason: comment.map(str::to_string),
        reserved_until,
    };
    let event = match next {
        RequestStatus::Approved => DomainEvent::OrganizationRequestApproved(review),
        _ => DomainEvent::OrganizationRequestRejected(review),
    };
    publish(&tx, None, Some(admin), event).await?;
    tx.commit().await?;
    Ok(reviewed)
}
