-- Visibility of events beyond their tenant, the group projection behind private events,
-- ticket types, and full-text search. Background jobs of the service (auto-completion,
-- archiving) run with app.system = 'on', which the policies honour; requests never set it.

ALTER TABLE event_service.events
    ADD COLUMN search tsvector GENERATED ALWAYS AS (
        to_tsvector('russian', coalesce(title, '') || ' ' || coalesce(description, ''))
        || to_tsvector('english', coalesce(title, '') || ' ' || coalesce(description, ''))
    ) STORED;
CREATE INDEX events_search ON event_service.events USING gin (search);
CREATE INDEX events_status_start ON event_service.events (status, starts_at) WHERE deleted_at IS NULL;

-- Groups and their members, kept from group.created / group.member.added / group.deleted.
CREATE TABLE event_service.groups (
    id         UUID PRIMARY KEY,
    tenant_id  UUID NOT NULL,
    name       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE event_service.group_members (
    group_id  UUID NOT NULL REFERENCES event_service.groups (id) ON DELETE CASCADE,
    tenant_id UUID NOT NULL,
    user_id   UUID NOT NULL,
    joined_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON event_service.group_members (user_id);

ALTER TABLE event_service.groups ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.groups FORCE ROW LEVEL SECURITY;
CREATE POLICY groups_tenant ON event_service.groups
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');

ALTER TABLE event_service.group_members ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.group_members FORCE ROW LEVEL SECURITY;
CREATE POLICY group_members_tenant ON event_service.group_members
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
-- A user sees their own memberships, which is what opens private events to them.
CREATE POLICY group_members_self ON event_service.group_members FOR SELECT
    USING (user_id = nullif(current_setting('app.user_id', true), '')::uuid);

DROP POLICY events_tenant ON event_service.events;
CREATE POLICY events_tenant ON event_service.events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
-- Anyone, signed in or not, reads published and completed public events.
CREATE POLICY events_public ON event_service.events FOR SELECT
    USING (status IN ('PUBLISHED', 'COMPLETED') AND deleted_at IS NULL AND group_id IS NULL);
-- Members of a group read its published and completed events.
CREATE POLICY events_group ON event_service.events FOR SELECT
    USING (status IN ('PUBLISHED', 'COMPLETED') AND deleted_at IS NULL AND group_id IN (
        SELECT m.group_id FROM event_service.group_members m
        WHERE m.user_id = nullif(current_setting('app.user_id', true), '')::uuid));

CREATE TABLE event_service.ticket_types (
    id                  UUID PRIMARY KEY,
    tenant_id           UUID NOT NULL,
    event_id            UUID NOT NULL REFERENCES event_service.events (id),
    name                TEXT NOT NULL,
    description         TEXT NOT NULL DEFAULT '',
    price_cents         BIGINT NOT NULL DEFAULT 0 CHECK (price_cents >= 0),
    currency            CHAR(3) NOT NULL DEFAULT 'RUB',
    quantity            INTEGER NOT NULL CHECK (quantity >= 0),
    sold_count          INTEGER NOT NULL DEFAULT 0 CHECK (sold_count >= 0),
    reserved_count      INTEGER NOT NULL DEFAULT 0 CHECK (reserved_count >= 0),
    reservation_minutes INTEGER CHECK (reservation_minutes > 0),
    prepayment_percent  INTEGER NOT NULL DEFAULT 100 CHECK (prepayment_percent BETWEEN 0 AND 100),
    sales_start         TIMESTAMPTZ,
    sales_end           TIMESTAMPTZ,
    sort_order          INTEGER NOT NULL DEFAULT 0,
    is_active           BOOLEAN NOT NULL DEFAULT true,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL,
    -- The database is the judge: no sale or reservation beyond the seats.
    CONSTRAINT ticket_types_seats CHECK (sold_count + reserved_count <= quantity),
    CONSTRAINT ticket_types_sales_window CHECK (sales_end IS NULL OR sales_start IS NULL OR sales_end > sales_start)
);
CREATE INDEX ticket_types_event ON event_service.ticket_types (event_id, sort_order);

ALTER TABLE event_service.ticket_types ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.ticket_types FORCE ROW LEVEL SECURITY;
CREATE POLICY ticket_types_tenant ON event_service.ticket_types
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
-- Active types of an event the reader can see (the subquery is itself filtered by the
-- policies of events).
CREATE POLICY ticket_types_visible ON event_service.ticket_types FOR SELECT
    USING (is_active AND EXISTS (SELECT 1 FROM event_service.events e WHERE e.id = event_id));
