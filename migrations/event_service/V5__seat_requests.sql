-- The idempotency record of a seat request, written in the same transaction as the seat it
-- judged: a retry with the same X-Idempotency-Key finds either nothing (the seat transaction
-- never committed) or exactly what happened, never a seat without its record or the reverse.
CREATE TABLE event_service.seat_requests (
    tenant_id       UUID NOT NULL,
    user_id         UUID NOT NULL,
    key             UUID NOT NULL,
    request_hash    BYTEA NOT NULL,
    outcome         TEXT NOT NULL CHECK (outcome IN ('CREATED', 'SOLD_OUT', 'ALREADY_REGISTERED', 'NOT_ON_SALE', 'NOT_PUBLISHED')),
    -- No foreign key: the record is written in the same round trip as the registration it
    -- names (pipelined), and registrations are never deleted.
    registration_id UUID,
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id, key),
    CHECK ((outcome = 'CREATED') = (registration_id IS NOT NULL))
);
CREATE INDEX seat_requests_created ON event_service.seat_requests (created_at);

ALTER TABLE event_service.seat_requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.seat_requests FORCE ROW LEVEL SECURITY;
CREATE POLICY seat_requests_tenant ON event_service.seat_requests
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
