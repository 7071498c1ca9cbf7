//! Published events being tracked (from event.published): a page view names an event, and
//! this says which organization's analytics it belongs to.

use chrono::{DateTime, Utc};
use domain::ids::TenantId;
use storage::db::DbError;
use storage::{Database, Scope, Tx};
use uuid::Uuid;

/// Starts tracking `event` of `tenant` (idempotent).
pub async fn start(
    tx: &Tx,
    event: Uuid,
    tenant: TenantId,
    at: DateTime<Utc>,
) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO analytics_service.tracked_events (event_id, tenant_id, published_at) VALUES ($1, $2, $3)
         ON CONFLICT (event_id) DO NOTHING",
        &[&event, &tenant.as_uuid(), &at],
    )
    .await?;
    Ok(())
}

/// The organization of a tracked event.
pub async fn tenant_of(db: &Database, event: Uuid) -> Result<Option<TenantId>, DbError> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT tenant_id FROM analytics_service.tracked_events WHERE event_id = $1",
            &[&event],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| TenantId(r.get(0))))
}
