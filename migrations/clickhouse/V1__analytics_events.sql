-- ClickHouse 18.16 and later: MergeTree partitioned by month (retention is a daily
-- ALTER TABLE ... DELETE, since 18.16 has no TTL), ordered for the
-- per-event and per-organization queries (by type next, so the unique-viewer count reads only
-- the page views). Ids are strings: 18.16 cannot sort by a nullable.
CREATE TABLE IF NOT EXISTS {db}.analytics_events (
    id          String,
    tenant_id   String,
    event_type  String,
    event_id    String,
    user_id     String,
    properties  String,
    created_at  DateTime('UTC'),
    day         Date,
    ticket_type String,
    source      String,
    status      String,
    viewer      String
) ENGINE = MergeTree()
PARTITION BY toYYYYMM(day)
ORDER BY (tenant_id, event_id, event_type, created_at, id)
;
-- Daily counts per event, type, ticket type, source and status, kept by a materialized view as
-- rows arrive: the dashboard's groupings read thousands of rows here instead of millions.
CREATE TABLE IF NOT EXISTS {db}.analytics_daily (
    tenant_id   String,
    event_id    String,
    day         Date,
    event_type  String,
    ticket_type String,
    source      String,
    status      String,
    n           UInt64
) ENGINE = SummingMergeTree(n)
PARTITION BY toYYYYMM(day)
ORDER BY (tenant_id, event_id, day, event_type, ticket_type, source, status)
;
CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.analytics_daily_mv TO {db}.analytics_daily AS
SELECT tenant_id, event_id, day, event_type, ticket_type, source, status, count() AS n
FROM {db}.analytics_events
GROUP BY tenant_id, event_id, day, event_type, ticket_type, source, status
