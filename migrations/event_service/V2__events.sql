-- Events of organizations. Tenant data: row level security is enabled and forced, and the
-- application role only ever sees the rows of the tenant set for its transaction.
CREATE TABLE event_service.events (
    id                      UUID PRIMARY KEY,
    tenant_id               UUID NOT NULL,
    organizer_id            UUID NOT NULL,
    group_id                UUID,
    title                   TEXT NOT NULL,
    description             TEXT NOT NULL DEFAULT '',
    slug                    TEXT NOT NULL UNIQUE,
    status                  TEXT NOT NULL DEFAULT 'DRAFT'
                            CHECK (status IN ('DRAFT', 'PUBLISHED', 'CANCELLED', 'COMPLETED')),
    participants_visibility TEXT NOT NULL DEFAULT 'CLOSED'
                            CHECK (participants_visibility IN ('CLOSED', 'OPEN')),
    starts_at               TIMESTAMPTZ NOT NULL,
    ends_at                 TIMESTAMPTZ,
    timezone                TEXT NOT NULL DEFAULT 'UTC',
    location_type           TEXT,
    location_address        TEXT,
    location_url            TEXT,
    cover_image_id          UUID,
    settings                JSONB NOT NULL DEFAULT '{}',
    published_at            TIMESTAMPTZ,
    created_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at              TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at              TIMESTAMPTZ
);
CREATE INDEX events_tenant ON event_service.events (tenant_id, starts_at);

ALTER TABLE event_service.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.events FORCE ROW LEVEL SECURITY;

-- An unset app.tenant_id compares as NULL, so it matches no row.
CREATE POLICY events_tenant ON event_service.events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
