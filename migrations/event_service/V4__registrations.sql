-- Registrations, check-ins and waiting lists. Seats are counted on ticket_types
-- (sold_count, reserved_count) under its CHECK; one active registration per user and event
-- is a unique index. Participants read their own rows; organizers their tenant's.

CREATE TABLE event_service.registrations (
    id                  UUID PRIMARY KEY,
    tenant_id           UUID NOT NULL,
    event_id            UUID NOT NULL REFERENCES event_service.events (id),
    ticket_type_id      UUID NOT NULL REFERENCES event_service.ticket_types (id),
    user_id             UUID NOT NULL,
    email               TEXT,
    first_name          TEXT NOT NULL DEFAULT '',
    last_name           TEXT NOT NULL DEFAULT '',
    confirmation_code   VARCHAR(8) NOT NULL UNIQUE,
    status              VARCHAR(20) NOT NULL
                        CHECK (status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CANCELLED', 'CHECKED_IN', 'EXPIRED')),
    custom_fields       JSONB NOT NULL DEFAULT '{}',
    price_cents         BIGINT NOT NULL DEFAULT 0,
    currency            CHAR(3) NOT NULL DEFAULT 'RUB',
    expires_at          TIMESTAMPTZ,
    cancelled_at        TIMESTAMPTZ,
    cancellation_reason TEXT,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX registrations_one_active ON event_service.registrations (event_id, user_id)
    WHERE status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN');
CREATE INDEX registrations_expiry ON event_service.registrations (expires_at) WHERE status = 'RESERVED';
CREATE INDEX registrations_event ON event_service.registrations (event_id, status);
CREATE INDEX registrations_user ON event_service.registrations (user_id);

ALTER TABLE event_service.registrations ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.registrations FORCE ROW LEVEL SECURITY;
CREATE POLICY registrations_tenant ON event_service.registrations
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
CREATE POLICY registrations_self ON event_service.registrations FOR SELECT
    USING (user_id = nullif(current_setting('app.user_id', true), '')::uuid);

CREATE TABLE event_service.check_ins (
    id              UUID PRIMARY KEY,
    tenant_id       UUID NOT NULL,
    registration_id UUID NOT NULL UNIQUE REFERENCES event_service.registrations (id),
    checked_in_by   UUID NOT NULL,
    method          VARCHAR(20) NOT NULL CHECK (method IN ('QR_CODE', 'MANUAL')),
    checked_in_at   TIMESTAMPTZ NOT NULL
);
ALTER TABLE event_service.check_ins ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.check_ins FORCE ROW LEVEL SECURITY;
CREATE POLICY check_ins_tenant ON event_service.check_ins
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');

CREATE TABLE event_service.waiting_list (
    id             UUID PRIMARY KEY,
    tenant_id      UUID NOT NULL,
    event_id       UUID NOT NULL REFERENCES event_service.events (id),
    ticket_type_id UUID NOT NULL REFERENCES event_service.ticket_types (id),
    user_id        UUID NOT NULL,
    email          TEXT,
    status         VARCHAR(20) NOT NULL CHECK (status IN ('WAITING', 'NOTIFIED', 'CONVERTED', 'EXPIRED', 'LEFT')),
    notified_at    TIMESTAMPTZ,
    expires_at     TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX waiting_list_one_open ON event_service.waiting_list (ticket_type_id, user_id) WHERE status IN ('WAITING', 'NOTIFIED');
CREATE INDEX waiting_list_queue ON event_service.waiting_list (ticket_type_id, created_at) WHERE status = 'WAITING';
ALTER TABLE event_service.waiting_list ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.waiting_list FORCE ROW LEVEL SECURITY;
CREATE POLICY waiting_list_tenant ON event_service.waiting_list
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
CREATE POLICY waiting_list_self ON event_service.waiting_list FOR SELECT
    USING (user_id = nullif(current_setting('app.user_id', true), '')::uuid);

ALTER TABLE event_service.events ADD COLUMN reminder_sent_at TIMESTAMPTZ;
