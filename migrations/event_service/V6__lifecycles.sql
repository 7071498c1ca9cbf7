-- Life cycles followed to their end (issue 22): who registers (a projection of identity's
-- users, so tickets carry names and an email), where a registration came from, the payments
-- received for a registration (deduplicated by the provider's id), and waiting lists closed
-- without offers when their event is cancelled.

CREATE TABLE event_service.people (
    user_id    UUID PRIMARY KEY,
    email      TEXT,
    first_name TEXT NOT NULL DEFAULT '',
    last_name  TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMPTZ NOT NULL
);
ALTER TABLE event_service.people ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.people FORCE ROW LEVEL SECURITY;
-- Read when a seat is taken (in the organizer's tenant scope); written by the consumer only.
CREATE POLICY people_read ON event_service.people FOR SELECT USING (true);
CREATE POLICY people_write ON event_service.people
    USING (current_setting('app.system', true) = 'on')
    WITH CHECK (current_setting('app.system', true) = 'on');

ALTER TABLE event_service.registrations ADD COLUMN source VARCHAR(64);

CREATE TABLE event_service.payments (
    id              TEXT PRIMARY KEY,
    tenant_id       UUID NOT NULL,
    registration_id UUID NOT NULL REFERENCES event_service.registrations (id),
    kind            VARCHAR(20) NOT NULL CHECK (kind IN ('COMPLETED', 'FAILED', 'REFUNDED')),
    amount_cents    BIGINT,
    currency        VARCHAR(3),
    channel         VARCHAR(20) NOT NULL CHECK (channel IN ('BROKER', 'WEBHOOK', 'MANUAL')),
    outcome         VARCHAR(20) NOT NULL CHECK (outcome IN ('CONFIRMED', 'SEAT_TAKEN', 'REFUND_REQUESTED', 'CANCELLED', 'NO_CHANGE')),
    received_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX payments_registration ON event_service.payments (registration_id);
ALTER TABLE event_service.payments ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.payments FORCE ROW LEVEL SECURITY;
CREATE POLICY payments_tenant ON event_service.payments
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');

ALTER TABLE event_service.waiting_list DROP CONSTRAINT IF EXISTS waiting_list_status_check;
ALTER TABLE event_service.waiting_list ADD CONSTRAINT waiting_list_status_check
    CHECK (status IN ('WAITING', 'NOTIFIED', 'CONVERTED', 'EXPIRED', 'LEFT', 'CLOSED'));
CREATE INDEX waiting_list_person ON event_service.waiting_list (event_id, user_id) WHERE status IN ('WAITING', 'NOTIFIED');

