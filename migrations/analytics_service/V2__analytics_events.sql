-- Analytics records (the embedded store; ClickHouse is the production one). The columns after
-- properties are taken from it once, when the record is made, so both stores group alike.
CREATE TABLE analytics_service.analytics_events (
    id           UUID PRIMARY KEY,
    tenant_id    UUID NOT NULL,
    event_type   VARCHAR(100) NOT NULL,
    event_id     UUID,
    user_id      UUID,
    properties   JSONB NOT NULL DEFAULT '{}',
    created_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    day          DATE NOT NULL,
    ticket_type  TEXT NOT NULL DEFAULT '',
    source       TEXT NOT NULL DEFAULT 'direct',
    status       TEXT NOT NULL DEFAULT '',
    viewer       TEXT NOT NULL DEFAULT ''
);
CREATE INDEX analytics_events_event ON analytics_service.analytics_events (tenant_id, event_id, created_at);
CREATE INDEX analytics_events_created ON analytics_service.analytics_events (created_at);

ALTER TABLE analytics_service.analytics_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_service.analytics_events FORCE ROW LEVEL SECURITY;
CREATE POLICY analytics_events_tenant ON analytics_service.analytics_events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');

-- Published events being tracked (from event.published): which organization a page view
-- of an event belongs to, whoever the viewer is.
CREATE TABLE analytics_service.tracked_events (
    event_id     UUID PRIMARY KEY,
    tenant_id    UUID NOT NULL,
    published_at TIMESTAMPTZ NOT NULL
);
ALTER TABLE analytics_service.tracked_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_service.tracked_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tracked_events_tenant ON analytics_service.tracked_events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
