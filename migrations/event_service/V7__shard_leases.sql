-- The events cluster (issue 17): its members, and one lease per shard. An event belongs to the
-- shard `get_byte(sha256(uuid_send(id)), 0)` (domain::cluster::shard_of computes the same); the
-- node holding a shard's lease runs the actors and timers of its events, and every transaction
-- it makes for them checks the lease's owner and epoch (fencing). Times are the database's.

CREATE TABLE event_service.members (
    node         TEXT PRIMARY KEY,
    address      TEXT NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    joined_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE event_service.shard_leases (
    shard      SMALLINT PRIMARY KEY CHECK (shard BETWEEN 0 AND 255),
    owner      TEXT,
    -- Raised by every change of owner, so a stale owner's epoch never matches again.
    epoch      BIGINT NOT NULL DEFAULT 0,
    expires_at TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
    changed_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
INSERT INTO event_service.shard_leases (shard) SELECT generate_series(0, 255);

ALTER TABLE event_service.events
    ADD COLUMN shard SMALLINT GENERATED ALWAYS AS (get_byte(sha256(uuid_send(id)), 0)) STORED;
CREATE INDEX events_shard ON event_service.events (shard);
