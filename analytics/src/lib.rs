//! The analytics service: tracking ingest through a batching actor, the ClickHouse and
//! PostgreSQL stores behind one query layer, dashboards, funnel and reports, and the broker
//! consumers that record what the other services report.

pub mod consumers;
pub mod export;
pub mod figures;
pub mod ingest;
pub mod record;
pub mod store;
pub mod tracked;
