-- Service events whose record is being written to ClickHouse, which cannot commit together
-- with the inbox: a row a crash leaves behind tells the next delivery to look in ClickHouse
-- before writing the record again.
CREATE TABLE analytics_service.recording (
    event_id   UUID PRIMARY KEY,
    started_at TIMESTAMPTZ NOT NULL
);
