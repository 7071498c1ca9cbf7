-- Waiting rooms of on-sales (docs/decisions.md, "The waiting room"). A room belongs to one
-- event; each account holds at most one place in it. A place's ordinal is its turn: the
-- visitors who came before the on-sale time have theirs shuffled among themselves at that
-- time, everyone later gets the next number on arrival. Admitting is moving one cursor
-- (admitted_through) over the places still kept, so two admitters can never admit a place
-- twice: the cursor is one row, moved under its lock.

-- Read by every seat transaction with the event's row: while true, a seat needs an admission.
ALTER TABLE event_service.events ADD COLUMN waiting_room BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE event_service.waiting_rooms (
    event_id          UUID PRIMARY KEY REFERENCES event_service.events (id),
    tenant_id         UUID NOT NULL,
    on_sale_at        TIMESTAMPTZ NOT NULL,
    admit_per_minute  INTEGER NOT NULL CHECK (admit_per_minute BETWEEN 1 AND 1000000),
    admission_minutes INTEGER NOT NULL CHECK (admission_minutes BETWEEN 1 AND 120),
    grace_minutes     INTEGER NOT NULL CHECK (grace_minutes BETWEEN 0 AND 120),
    -- Places handed out so far: the last ordinal given.
    arrivals          BIGINT NOT NULL DEFAULT 0,
    -- When the pre-queue was shuffled; NULL until the on-sale time has come and gone by.
    shuffled_at       TIMESTAMPTZ,
    -- Every kept place with an ordinal up to this one is admitted.
    admitted_through  BIGINT NOT NULL DEFAULT 0,
    admitted_count    BIGINT NOT NULL DEFAULT 0,
    -- The admission clock: admissions are owed for the time from here to now at the rate.
    admitted_until    TIMESTAMPTZ,
    -- Set while no seat of the event is left; everyone still waiting is told.
    sold_out_at       TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL
);
-- The admitter looks for the rooms with work to do.
CREATE INDEX waiting_rooms_on_sale ON event_service.waiting_rooms (on_sale_at);
ALTER TABLE event_service.waiting_rooms ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.waiting_rooms FORCE ROW LEVEL SECURITY;
CREATE POLICY waiting_rooms_tenant ON event_service.waiting_rooms
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');

CREATE TABLE event_service.waiting_room_places (
    event_id    UUID NOT NULL REFERENCES event_service.waiting_rooms (event_id) ON DELETE CASCADE,
    user_id     UUID NOT NULL,
    tenant_id   UUID NOT NULL,
    ordinal     BIGINT NOT NULL,
    -- Came before the on-sale time: in the pre-queue, shuffled at that time.
    early       BOOLEAN NOT NULL,
    joined_at   TIMESTAMPTZ NOT NULL,
    -- Left the room; the place is kept for the room's grace period from here.
    left_at     TIMESTAMPTZ,
    -- When the visitor first saw their admission; it lasts admission_minutes from here.
    admitted_at TIMESTAMPTZ,
    PRIMARY KEY (event_id, user_id)
);
-- Not unique: the shuffle rewrites the pre-queue's ordinals in one statement.
CREATE INDEX waiting_room_places_line ON event_service.waiting_room_places (event_id, ordinal);
ALTER TABLE event_service.waiting_room_places ENABLE ROW LEVEL SECURITY;
ALTER TABLE event_service.waiting_room_places FORCE ROW LEVEL SECURITY;
CREATE POLICY waiting_room_places_tenant ON event_service.waiting_room_places
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid OR current_setting('app.system', true) = 'on');
