-- What the notification service keeps from other services' events (it never reads their
-- schemas): people's names, the events people registered for, and the registrations, so a
-- cancellation or a change reaches every participant.
CREATE TABLE notification_service.users (
    user_id    UUID PRIMARY KEY,
    first_name TEXT NOT NULL DEFAULT '',
    last_name  TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE notification_service.events (
    event_id         UUID PRIMARY KEY,
    tenant_id        UUID NOT NULL,
    title            TEXT NOT NULL,
    slug             TEXT NOT NULL,
    starts_at        TIMESTAMPTZ NOT NULL,
    location_address TEXT,
    location_url     TEXT,
    cancelled        BOOLEAN NOT NULL DEFAULT false,
    updated_at       TIMESTAMPTZ NOT NULL
);

CREATE TABLE notification_service.participants (
    registration_id   UUID PRIMARY KEY,
    tenant_id         UUID NOT NULL,
    event_id          UUID NOT NULL,
    user_id           UUID NOT NULL,
    first_name        TEXT NOT NULL DEFAULT '',
    confirmation_code TEXT NOT NULL,
    price_cents       BIGINT NOT NULL DEFAULT 0,
    currency          TEXT,
    active            BOOLEAN NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL
);
CREATE INDEX participants_event ON notification_service.participants (event_id) WHERE active;
CREATE INDEX participants_user ON notification_service.participants (user_id) WHERE active;

-- The send queue: one row per message, rendered when it was queued. Its status ends SENT,
-- FAILED or SKIPPED; a message is queued at most once per source event, person and kind.
CREATE TABLE notification_service.messages (
    id              UUID PRIMARY KEY,
    tenant_id       UUID,
    user_id         UUID,
    chat_id         BIGINT,
    kind            TEXT NOT NULL,
    source_event_id UUID,
    text            TEXT NOT NULL,
    ticket_code     TEXT,
    status          TEXT NOT NULL CHECK (status IN ('QUEUED', 'SENDING', 'SENT', 'FAILED', 'SKIPPED')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMPTZ NOT NULL,
    lease_until     TIMESTAMPTZ,
    reason          TEXT,
    created_at      TIMESTAMPTZ NOT NULL,
    finished_at     TIMESTAMPTZ
);
CREATE UNIQUE INDEX messages_once ON notification_service.messages (source_event_id, user_id, kind)
    WHERE source_event_id IS NOT NULL;
CREATE INDEX messages_due ON notification_service.messages (next_attempt_at)
    WHERE status IN ('QUEUED', 'SENDING');
CREATE INDEX messages_user ON notification_service.messages (user_id, created_at);

-- The send log: every attempt and every skip, with its reason.
CREATE TABLE notification_service.send_log (
    id         BIGSERIAL PRIMARY KEY,
    message_id UUID NOT NULL REFERENCES notification_service.messages (id) ON DELETE CASCADE,
    tenant_id  UUID,
    user_id    UUID,
    chat_id    BIGINT,
    kind       TEXT NOT NULL,
    attempt    INTEGER NOT NULL,
    outcome    TEXT NOT NULL CHECK (outcome IN ('SENT', 'RETRY', 'FAILED', 'SKIPPED')),
    reason     TEXT,
    at         TIMESTAMPTZ NOT NULL
);
CREATE INDEX send_log_message ON notification_service.send_log (message_id);

-- Tenant rows are the tenant's; rows of a person (tenant_id NULL: a welcome, a bot answer)
-- are that person's; the service's own jobs run with app.system.
ALTER TABLE notification_service.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_service.events FORCE ROW LEVEL SECURITY;
CREATE POLICY events_tenant ON notification_service.events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR current_setting('app.system', true) = 'on');

ALTER TABLE notification_service.participants ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_service.participants FORCE ROW LEVEL SECURITY;
CREATE POLICY participants_tenant ON notification_service.participants
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR user_id = nullif(current_setting('app.user_id', true), '')::uuid
           OR current_setting('app.system', true) = 'on');

ALTER TABLE notification_service.messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_service.messages FORCE ROW LEVEL SECURITY;
CREATE POLICY messages_owner ON notification_service.messages
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND user_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on');

ALTER TABLE notification_service.send_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_service.send_log FORCE ROW LEVEL SECURITY;
CREATE POLICY send_log_owner ON notification_service.send_log
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND user_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on');

ALTER TABLE notification_service.users ENABLE ROW LEVEL SECURITY;
ALTER TABLE notification_service.users FORCE ROW LEVEL SECURITY;
CREATE POLICY users_self ON notification_service.users
    USING (user_id = nullif(current_setting('app.user_id', true), '')::uuid
           OR current_setting('app.system', true) = 'on');
