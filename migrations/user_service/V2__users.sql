-- Accounts. Users are not tenant data (a user belongs to many organizations), so this table
-- has no tenant column and no row level security; only the identity service reads it.
CREATE TABLE user_service.users (
    id                UUID PRIMARY KEY,
    messenger_id      TEXT UNIQUE,
    email             TEXT,
    password_hash     TEXT,
    first_name        TEXT NOT NULL DEFAULT '',
    last_name         TEXT NOT NULL DEFAULT '',
    email_verified    BOOLEAN NOT NULL DEFAULT false,
    email_verified_at TIMESTAMPTZ,
    last_login_at     TIMESTAMPTZ,
    failed_logins     INTEGER NOT NULL DEFAULT 0,
    locked_until      TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    deleted_at        TIMESTAMPTZ,
    CONSTRAINT users_email_lower CHECK (email = lower(email))
);
-- A deleted account keeps its email reserved (see docs/decisions.md), so the index covers
-- deleted rows too.
CREATE UNIQUE INDEX users_email_unique ON user_service.users (email) WHERE email IS NOT NULL;

-- Platform administrators, granted and revoked with `bilet admin grant|revoke <email>`.
CREATE TABLE user_service.platform_admins (
    user_id    UUID PRIMARY KEY REFERENCES user_service.users (id),
    granted_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
