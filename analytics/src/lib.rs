//! The analytics service: tracking ingest through a batching actor, the ClickHouse and
//! PostgreSQL sinks, dashboards, funnel and reports, CSV/XLSX export. It arrives with the
//! analytics step; this crate fixes its place in the workspace.
