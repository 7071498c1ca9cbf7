//! The events analytics knows of, from event.created on: a page view names an event, and this
//! says which organization's analytics it belongs to and whether the event is still a draft
//! (not public: only the organization's members may track it). event.published and
//! event.unpublished move an event in and out of draft; they are applied in the order they
//! happened, whatever order the broker delivers them in.

use chrono::{DateTime, Utc};
use domain::ids::TenantId;
use storage::db::DbError;
use storage::{Database, Scope, Tx};
use uuid::Uuid;

/// What analytics knows of an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrackedEvent {
    /// The organization its records belong to.
    pub tenant: TenantId,
    /// Whether it is a draft (never published, or unpublished since).
    pub draft: bool,
}

impl TrackedEvent {
    /// Whether someone may track its pages: anyone once it is public, only the organization's
    /// members (previewing) while it is a draft, so a draft's id cannot be probed from outside.
    pub fn trackable_by(&self, member: bool) -> bool {
        !self.draft || member
    }
}

/// Starts tracking `event` of `tenant`, created at `at` (event.created). A row already there
/// came from a later event (event.published overtook it on the broker) and is kept as it is.
pub async fn created(
    tx: &Tx,
    event: Uuid,
    tenant: TenantId,
    draft: bool,
    at: DateTime<Utc>,
) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO analytics_service.tracked_events (event_id, tenant_id, draft, status_at, published_at)
         VALUES ($1, $2, $3, $4, CASE WHEN $3::boolean THEN NULL ELSE $4::timestamptz END)
         ON CONFLICT (event_id) DO NOTHING",
        &[&event, &tenant.as_uuid(), &draft, &at],
    )
    .await?;
    Ok(())
}

/// Records that `event` of `tenant` was published (`draft` false) or unpublished (`draft`
/// true) at `at`. An older change arriving late does not undo a newer one; the first
/// publication's time is kept.
pub async fn status_changed(
    tx: &Tx,
    event: Uuid,
    tenant: TenantId,
    draft: bool,
    at: DateTime<Utc>,
) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO analytics_service.tracked_events AS t (event_id, tenant_id, draft, status_at, published_at)
         VALUES ($1, $2, $3, $4, CASE WHEN $3::boolean THEN NULL ELSE $4::timestamptz END)
         ON CONFLICT (event_id) DO UPDATE SET
            draft = CASE WHEN t.status_at <= EXCLUDED.status_at THEN EXCLUDED.draft ELSE t.draft END,
            status_at = GREATEST(t.status_at, EXCLUDED.status_at),
            published_at = LEAST(t.published_at, EXCLUDED.published_at)",
        &[&event, &tenant.as_uuid(), &draft, &at],
    )
    .await?;
    Ok(())
}

/// What analytics knows of `event`, if anything.
pub async fn find(db: &Database, event: Uuid) -> Result<Option<TrackedEvent>, DbError> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT tenant_id, draft FROM analytics_service.tracked_events WHERE event_id = $1",
            &[&event],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| TrackedEvent {
        tenant: TenantId(r.get(0)),
        draft: r.get(1),
    }))
}

/// The organization of a known event (draft or not).
pub async fn tenant_of(db: &Database, event: Uuid) -> Result<Option<TenantId>, DbError> {
    Ok(find(db, event).await?.map(|e| e.tenant))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drafts_are_tracked_by_members_only() {
        let tenant = TenantId::new();
        let draft = TrackedEvent {
            tenant,
            draft: true,
        };
        let public = TrackedEvent {
            tenant,
            draft: false,
        };
        assert!(draft.trackable_by(true));
        assert!(!draft.trackable_by(false));
        assert!(public.trackable_by(false) && public.trackable_by(true));
    }
}
