-- The in-process broker's deliveries (storage/src/broker/deliveries.rs): one row per event
-- and consumer, written before the relay counts the event as published and deleted once the
-- consumer's handler succeeded. A row survives a crash, carries the retry schedule, and ends
-- as a dead letter (dead_at set) when the handler gave up. RabbitMQ deployments leave it empty.

CREATE TABLE broker.deliveries (
    id         UUID PRIMARY KEY,
    -- Publication order, so a node taking deliveries up hands them over in order.
    seq        BIGSERIAL NOT NULL,
    consumer   TEXT NOT NULL,
    event      JSONB NOT NULL,
    -- The attempt the next (or running) delivery is, from 1.
    attempt    INTEGER NOT NULL DEFAULT 1,
    -- The broker holding the delivery in memory (the key of the advisory lock it keeps while
    -- it runs); NULL when any node running the consumer may take it (a replay).
    owner      BIGINT,
    -- Not before: the retry schedule.
    due_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    -- Set when the handler gave up: a dead letter until replayed.
    dead_at    TIMESTAMPTZ,
    last_error TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX deliveries_waiting ON broker.deliveries (consumer, seq) WHERE dead_at IS NULL;
CREATE INDEX deliveries_dead ON broker.deliveries (consumer, seq) WHERE dead_at IS NOT NULL;
