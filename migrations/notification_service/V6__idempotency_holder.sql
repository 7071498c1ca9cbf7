-- Which process holds an idempotency key in progress (the key of the session-level advisory
-- lock it keeps while it lives): a claim whose holder is gone is taken over at once.
ALTER TABLE notification_service.idempotency_keys ADD COLUMN holder BIGINT;
