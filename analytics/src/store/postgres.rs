//! The PostgreSQL dialect (schema analytics_service): the embedded default.

use super::Query;
use crate::export::ExportRow;
use crate::figures::{Counts, DayFigures, QueueCounts, SourceFigures, TicketTypeFigures};
use crate::record::Record;
use chrono::{DateTime, NaiveDate, Utc};
use storage::db::DbError;
use storage::{Database, Scope};
use uuid::Uuid;

const FROM: &str = "FROM analytics_service.analytics_events
    WHERE tenant_id = $1 AND ($2::uuid IS NULL OR event_id = $2) AND created_at >= $3 AND created_at < $4";

const COUNTS: &str = "count(*) FILTER (WHERE event_type = 'page.view'),
    count(DISTINCT viewer) FILTER (WHERE event_type = 'page.view'),
    count(*) FILTER (WHERE event_type = 'registration.started'),
    count(*) FILTER (WHERE event_type = 'registration.completed'),
    count(*) FILTER (WHERE (event_type = 'registration.completed' AND status = 'CONFIRMED') OR event_type = 'payment.completed'),
    count(*) FILTER (WHERE event_type = 'checkin.completed')";

fn n(row: &tokio_postgres::Row, i: usize) -> u64 {
    row.get::<_, i64>(i).max(0) as u64
}

fn counts_at(row: &tokio_postgres::Row, at: usize) -> Counts {
    Counts {
        views: n(row, at),
        unique_views: n(row, at + 1),
        started: n(row, at + 2),
        registrations: n(row, at + 3),
        confirmed: n(row, at + 4),
        checked_in: n(row, at + 5),
    }
}

/// The PostgreSQL store.
#[derive(Clone)]
pub struct PgStore {
    db: Database,
}

impl PgStore {
    /// A store over `db`.
    pub fn new(db: Database) -> PgStore {
        PgStore { db }
    }

    async fn rows(
        &self,
        q: &Query,
        select: &str,
        tail: &str,
    ) -> Result<Vec<tokio_postgres::Row>, DbError> {
        let tx = self.db.begin(Scope::tenant(q.tenant, None)).await?;
        let (from, to) = q.period.bounds();
        let rows = tx
            .query(
                &format!("SELECT {select} {FROM} {tail}"),
                &[&q.tenant.as_uuid(), &q.event, &from, &to],
            )
            .await?;
        tx.commit().await?;
        Ok(rows)
    }

    /// The counts of an event's waiting room; a registration counts as the queue's when the
    /// same person was let in by it.
    pub async fn queue(&self, q: &Query) -> Result<QueueCounts, DbError> {
        let rows = self
            .rows(
                q,
                "count(*) FILTER (WHERE event_type = 'queue.joined'),
                 count(*) FILTER (WHERE event_type = 'queue.admitted'),
                 count(*) FILTER (WHERE event_type = 'queue.left'),
                 count(DISTINCT user_id) FILTER (WHERE event_type = 'registration.completed'
                    AND user_id IN (SELECT a.user_id FROM analytics_service.analytics_events a
                        WHERE a.tenant_id = $1 AND a.event_id = $2 AND a.event_type = 'queue.admitted')),
                 coalesce(avg((properties->>'waitedSeconds')::float8) FILTER (WHERE event_type = 'queue.admitted'), 0)",
                "",
            )
            .await?;
        Ok(rows
            .first()
            .map_or_else(QueueCounts::default, |row| QueueCounts {
                joined: n(row, 0),
                admitted: n(row, 1),
                left: n(row, 2),
                registered: n(row, 3),
                average_wait_seconds: row.get(4),
            }))
    }

    /// Writes records; ids already stored are skipped.
    pub async fn insert(&self, records: &[Record]) -> Result<(), DbError> {
        let tx = self.db.begin(Scope::system()).await?;
        let col = |f: &dyn Fn(&Record) -> String| records.iter().map(f).collect::<Vec<String>>();
        let ids: Vec<Uuid> = records.iter().map(|r| r.id).collect();
        let tenants: Vec<Uuid> = records.iter().map(|r| r.tenant_id.as_uuid()).collect();
        let types = col(&|r| r.event_type.as_str().to_string());
        let events: Vec<Option<Uuid>> = records.iter().map(|r| r.event_id).collect();
        let users: Vec<Option<Uuid>> = records.iter().map(|r| r.user_id).collect();
        let props: Vec<&serde_json::Value> = records.iter().map(|r| &r.properties).collect();
        let times: Vec<DateTime<Utc>> = records.iter().map(|r| r.created_at).collect();
        let days: Vec<NaiveDate> = records.iter().map(|r| r.day()).collect();
        tx.execute(
            "INSERT INTO analytics_service.analytics_events
                (id, tenant_id, event_type, event_id, user_id, properties, created_at, day, ticket_type, source, status, viewer)
             SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::uuid[], $5::uuid[], $6::jsonb[], $7::timestamptz[],
                                  $8::date[], $9::text[], $10::text[], $11::text[], $12::text[])
             ON CONFLICT (id) DO NOTHING",
            &[
                &ids,
                &tenants,
                &types,
                &events,
                &users,
                &props,
                &times,
                &days,
                &col(&|r| r.ticket_type()),
                &col(&|r| r.source()),
                &col(&|r| r.status()),
                &col(&|r| r.viewer()),
            ],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Headline counts.
    pub async fn counts(&self, q: &Query) -> Result<Counts, DbError> {
        let rows = self.rows(q, COUNTS, "").await?;
        Ok(rows.first().map(|r| counts_at(r, 0)).unwrap_or_default())
    }

    /// Per UTC day.
    pub async fn by_day(&self, q: &Query) -> Result<Vec<DayFigures>, DbError> {
        let rows = self
            .rows(
                q,
                "day, count(*) FILTER (WHERE event_type = 'page.view'),
                 count(*) FILTER (WHERE event_type = 'registration.completed'),
                 count(*) FILTER (WHERE event_type = 'checkin.completed')",
                "GROUP BY day ORDER BY day",
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| DayFigures {
                date: r.get(0),
                views: n(r, 1),
                registrations: n(r, 2),
                checked_in: n(r, 3),
            })
            .collect())
    }

    /// Per ticket type.
    pub async fn by_ticket_type(&self, q: &Query) -> Result<Vec<TicketTypeFigures>, DbError> {
        let rows = self
            .rows(
                q,
                "ticket_type, count(*) FILTER (WHERE event_type = 'registration.completed'),
                 count(*) FILTER (WHERE event_type = 'checkin.completed')",
                "AND event_type IN ('registration.completed', 'checkin.completed')
                 GROUP BY ticket_type ORDER BY ticket_type COLLATE \"C\"",
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| TicketTypeFigures {
                ticket_type_id: r.get(0),
                registrations: n(r, 1),
                checked_in: n(r, 2),
            })
            .collect())
    }

    /// Per traffic source.
    pub async fn by_source(&self, q: &Query) -> Result<Vec<SourceFigures>, DbError> {
        let rows = self
            .rows(
                q,
                "source, count(*) FILTER (WHERE event_type = 'page.view'),
                 count(*) FILTER (WHERE event_type = 'registration.completed')",
                "AND event_type IN ('page.view', 'registration.completed')
                 GROUP BY source ORDER BY source COLLATE \"C\"",
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| SourceFigures {
                source: r.get(0),
                views: n(r, 1),
                registrations: n(r, 2),
            })
            .collect())
    }

    /// Counts per event of the organization.
    pub async fn per_event(&self, q: &Query) -> Result<Vec<(Uuid, Counts)>, DbError> {
        let rows = self
            .rows(
                q,
                &format!("event_id, {COUNTS}"),
                "AND event_id IS NOT NULL GROUP BY event_id",
            )
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), counts_at(r, 1))).collect())
    }

    /// One page of records in (created_at, id) order, after `after`.
    pub async fn export_page(
        &self,
        q: &Query,
        after: Option<(DateTime<Utc>, Uuid)>,
        limit: usize,
    ) -> Result<Vec<ExportRow>, DbError> {
        let tx = self.db.begin(Scope::tenant(q.tenant, None)).await?;
        let (from, to) = q.period.bounds();
        let (after_time, after_id) = (after.map(|a| a.0), after.map(|a| a.1));
        let rows = tx
            .query(
                &format!(
                    "SELECT id, created_at, event_type, event_id, user_id, ticket_type, source, properties {FROM}
                     AND ($5::timestamptz IS NULL OR (created_at, id) > ($5, $6))
                     ORDER BY created_at, id LIMIT $7"
                ),
                &[
                    &q.tenant.as_uuid(),
                    &q.event,
                    &from,
                    &to,
                    &after_time,
                    &after_id,
                    &(limit as i64),
                ],
            )
            .await?;
        tx.commit().await?;
        Ok(rows
            .iter()
            .map(|r| ExportRow {
                id: r.get(0),
                created_at: r.get(1),
                event_type: r.get(2),
                event_id: r.get(3),
                user_id: r.get(4),
                ticket_type: r.get(5),
                source: r.get(6),
                properties: r.get::<_, serde_json::Value>(7).to_string(),
            })
            .collect())
    }

    /// Removes records created before `before`.
    pub async fn purge(&self, before: DateTime<Utc>) -> Result<u64, DbError> {
        let tx = self.db.begin(Scope::system()).await?;
        let n = tx
            .execute(
                "DELETE FROM analytics_service.analytics_events WHERE created_at < $1",
                &[&before],
            )
            .await?;
        tx.commit().await?;
        Ok(n)
    }
}
