-- A delivery of an event read from a service's outbox names it (the outbox's schema and the
-- event's id) instead of carrying a copy: the outbox keeps every event for 7 days after it
-- was published, far longer than a delivery waits, and the copies, one per consumer, were a
-- quarter of the WAL an on-sale wrote (about 1 kB for each event and consumer). A dead letter
-- gets its copy when it is parked, so it outlives the outbox's 7 days.
ALTER TABLE broker.deliveries
    ALTER COLUMN event DROP NOT NULL,
    ADD COLUMN source   TEXT,
    ADD COLUMN event_id UUID,
    ADD CONSTRAINT deliveries_event_or_its_place
        CHECK (event IS NOT NULL OR (source IS NOT NULL AND event_id IS NOT NULL));
