-- Each member's fingerprint of the cluster secrets (SERVICE_SECRET and JWT_SECRET): a node
-- started with other secrets could not authenticate what the gateway sends it, so it must
-- not take shards (issue 30). Empty for a member that has not heartbeat since.
ALTER TABLE event_service.members ADD COLUMN fingerprint TEXT NOT NULL DEFAULT '';
