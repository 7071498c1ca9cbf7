-- How far each member's clock was from the database's at its last heartbeat (its clock minus
-- the database's, in milliseconds): a member whose clock is off by more than a second would
-- judge deadlines early or late, so it takes no share of the shards (issue 30).
ALTER TABLE event_service.members ADD COLUMN clock_off_ms BIGINT NOT NULL DEFAULT 0;
