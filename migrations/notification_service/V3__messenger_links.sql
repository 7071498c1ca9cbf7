-- One-time tokens of the deep link that binds a messenger chat to an account, and the bound
-- chats (one per user, one user per chat).
CREATE TABLE notification_service.link_tokens (
    token      TEXT PRIMARY KEY,
    user_id    UUID NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    used_at    TIMESTAMPTZ,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX link_tokens_expiry ON notification_service.link_tokens (expires_at);
CREATE TABLE notification_service.chats (
    user_id   UUID PRIMARY KEY,
    chat_id   BIGINT NOT NULL UNIQUE,
    linked_at TIMESTAMPTZ NOT NULL
);
