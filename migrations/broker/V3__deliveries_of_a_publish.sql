-- A publish from an outbox is recorded as one row per consumer naming all its events
-- (`event_ids`, in order) instead of a row per event and consumer: an on-sale's relay
-- publishes a few hundred events at a time, and their rows (inserted, then deleted once
-- handled, with two index entries each) were a tenth of the database's work per
-- registration. A message of such a row that fails gets a row of its own for its retries or
-- as a dead letter; the shared row is deleted once each of its messages is handled or moved
-- out. Rows written before keep their single `event_id`.
ALTER TABLE broker.deliveries
    ADD COLUMN event_ids UUID[],
    DROP CONSTRAINT deliveries_event_or_its_place,
    ADD CONSTRAINT deliveries_event_or_its_place
        CHECK (event IS NOT NULL
               OR (source IS NOT NULL AND (event_id IS NOT NULL OR event_ids IS NOT NULL)));
