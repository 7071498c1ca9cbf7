//! One query layer over two stores: ClickHouse in production, PostgreSQL embedded. Both
//! answer the same counts; the figures are built from them in one place.

pub mod clickhouse;
pub mod postgres;

use crate::figures::{Counts, Dashboard, EventFigures, Funnel, Period, Report};
use crate::record::Record;
use chrono::{DateTime, Utc};
use clickhouse::{ClickHouseError, ClickHouseStore};
use domain::ids::TenantId;
use postgres::PgStore;
use uuid::Uuid;

/// What a query covers.
#[derive(Clone, Copy, Debug)]
pub struct Query {
    /// The organization.
    pub tenant: TenantId,
    /// One event, or all of the organization's.
    pub event: Option<Uuid>,
    /// The period.
    pub period: Period,
}

/// Why a store call failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// PostgreSQL failed.
    #[error(transparent)]
    Postgres(#[from] storage::db::DbError),
    /// ClickHouse failed.
    #[error(transparent)]
    ClickHouse(#[from] ClickHouseError),
}

/// The analytics store of this process.
#[derive(Clone)]
pub enum Store {
    /// PostgreSQL (schema analytics_service).
    Postgres(PgStore),
    /// ClickHouse.
    ClickHouse(ClickHouseStore),
}

macro_rules! both {
    ($self:ident, $method:ident ( $($arg:expr),* )) => {
        match $self {
            Store::Postgres(s) => Ok(s.$method($($arg),*).await?),
            Store::ClickHouse(s) => Ok(s.$method($($arg),*).await?),
        }
    };
}

impl Store {
    /// Writes records (ids already stored are skipped by PostgreSQL; the broker consumers keep
    /// ClickHouse free of repeats).
    pub async fn insert(&self, records: &[Record]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        both!(self, insert(records))
    }

    async fn counts(&self, q: &Query) -> Result<Counts, StoreError> {
        both!(self, counts(q))
    }

    /// The dashboard of one event.
    pub async fn dashboard(
        &self,
        tenant: TenantId,
        event: Uuid,
        period: Period,
    ) -> Result<Dashboard, StoreError> {
        let q = Query {
            tenant,
            event: Some(event),
            period,
        };
        let (by_day, by_ticket_type, by_source) = match self {
            Store::Postgres(s) => (
                s.by_day(&q).await?,
                s.by_ticket_type(&q).await?,
                s.by_source(&q).await?,
            ),
            Store::ClickHouse(s) => (
                s.by_day(&q).await?,
                s.by_ticket_type(&q).await?,
                s.by_source(&q).await?,
            ),
        };
        let queue = match self {
            Store::Postgres(s) => s.queue(&q).await?,
            Store::ClickHouse(s) => s.queue(&q).await?,
        };
        Ok(Dashboard {
            event_id: event,
            totals: self.counts(&q).await?.into(),
            by_day,
            by_ticket_type,
            by_source,
            queue: queue.into(),
        })
    }

    /// The funnel of one event.
    pub async fn funnel(
        &self,
        tenant: TenantId,
        event: Uuid,
        period: Period,
    ) -> Result<Funnel, StoreError> {
        let q = Query {
            tenant,
            event: Some(event),
            period,
        };
        Ok(Funnel::from_counts(event, self.counts(&q).await?))
    }

    /// The report of an organization: all events together and each event.
    pub async fn report(&self, tenant: TenantId, period: Period) -> Result<Report, StoreError> {
        let q = Query {
            tenant,
            event: None,
            period,
        };
        let (counts, mut per_event) = match self {
            Store::Postgres(s) => tokio::try_join!(s.counts(&q), s.per_event(&q))?,
            Store::ClickHouse(s) => tokio::try_join!(s.counts(&q), s.per_event(&q))?,
        };
        per_event.sort_by(|a, b| {
            b.1.registrations
                .cmp(&a.1.registrations)
                .then(a.0.cmp(&b.0))
        });
        Ok(Report {
            organization_id: tenant.as_uuid(),
            totals: counts.into(),
            events: per_event
                .into_iter()
                .map(|(event_id, c)| EventFigures {
                    event_id,
                    totals: c.into(),
                })
                .collect(),
        })
    }

    /// One page of records for export, in (created_at, id) order after `after`.
    pub async fn export_page(
        &self,
        q: &Query,
        after: Option<(DateTime<Utc>, Uuid)>,
        limit: usize,
    ) -> Result<Vec<crate::export::ExportRow>, StoreError> {
        both!(self, export_page(q, after, limit))
    }

    /// Removes records created before `before`.
    pub async fn purge(&self, before: DateTime<Utc>) -> Result<(), StoreError> {
        match self {
            Store::Postgres(s) => {
                s.purge(before).await?;
            }
            Store::ClickHouse(s) => s.purge(before).await?,
        }
        Ok(())
    }
}
