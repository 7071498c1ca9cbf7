-- What the processes of an installation announce to each other (issue 28): each process upserts
-- its row every few seconds with a fingerprint of its service secret (HMAC-SHA256 of a fixed
-- label keyed with the secret, never the secret or a plain hash of it), and readiness compares
-- its own with those of the processes seen lately, so a process given another SERVICE_SECRET
-- says DOWN instead of taking traffic it can only answer with 401. Times are the database's.
CREATE TABLE platform.peers (
    process     TEXT PRIMARY KEY,
    node        TEXT NOT NULL,
    services    TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    seen_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX peers_seen ON platform.peers (seen_at);
