-- The identity service: sessions, mail tokens, organization requests, organizations,
-- members, invites and groups. None of these tables is tenant data of another service;
-- only the identity service reads them, and its handlers check membership explicitly.

ALTER TABLE user_service.users ADD COLUMN avatar_id UUID;

-- Refresh tokens, stored as SHA-256. A session is a chain of tokens sharing session_id:
-- each refresh revokes the presented token and issues the next one in the chain.
CREATE TABLE user_service.refresh_tokens (
    id          UUID PRIMARY KEY,
    user_id     UUID NOT NULL REFERENCES user_service.users (id),
    session_id  UUID NOT NULL,
    token_hash  TEXT NOT NULL UNIQUE,
    organization_id UUID,
    expires_at  TIMESTAMPTZ NOT NULL,
    revoked     BOOLEAN NOT NULL DEFAULT false,
    revoked_at  TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX refresh_tokens_active ON user_service.refresh_tokens (user_id, created_at) WHERE NOT revoked;
CREATE INDEX refresh_tokens_session ON user_service.refresh_tokens (session_id);
CREATE INDEX refresh_tokens_expiry ON user_service.refresh_tokens (expires_at);

CREATE TABLE user_service.verification_tokens (
    id          UUID PRIMARY KEY,
    user_id     UUID NOT NULL REFERENCES user_service.users (id),
    token       VARCHAR(64) NOT NULL UNIQUE,
    type        VARCHAR(20) NOT NULL CHECK (type IN ('EMAIL_VERIFICATION', 'PASSWORD_RESET')),
    expires_at  TIMESTAMPTZ NOT NULL,
    used_at     TIMESTAMPTZ,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Verification and reset requests per address, known or not, for the 3-per-hour limit.
CREATE TABLE user_service.mail_requests (
    email       TEXT NOT NULL,
    kind        VARCHAR(20) NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX mail_requests_recent ON user_service.mail_requests (email, kind, created_at);

CREATE TABLE user_service.organization_requests (
    id              UUID PRIMARY KEY,
    user_id         UUID NOT NULL REFERENCES user_service.users (id),
    name            VARCHAR(255) NOT NULL,
    slug            VARCHAR(50) NOT NULL,
    description     TEXT,
    status          VARCHAR(20) NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'APPROVED', 'REJECTED')),
    reviewed_by     UUID,
    review_comment  TEXT,
    reviewed_at     TIMESTAMPTZ,
    reserved_until  TIMESTAMPTZ,
    organization_id UUID,
    created_at      TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX organization_requests_one_pending ON user_service.organization_requests (user_id) WHERE status = 'PENDING';
CREATE UNIQUE INDEX organization_requests_pending_slug ON user_service.organization_requests (slug) WHERE status = 'PENDING';

CREATE TABLE user_service.organizations (
    id          UUID PRIMARY KEY,
    owner_id    UUID NOT NULL REFERENCES user_service.users (id),
    name        VARCHAR(255) NOT NULL,
    slug        VARCHAR(50) NOT NULL UNIQUE,
    description TEXT,
    logo_url    VARCHAR(500),
    logo_id     UUID,
    settings    JSONB NOT NULL DEFAULT '{}',
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL,
    deleted_at  TIMESTAMPTZ
);

CREATE TABLE user_service.organization_members (
    id              UUID PRIMARY KEY,
    organization_id UUID NOT NULL REFERENCES user_service.organizations (id),
    user_id         UUID NOT NULL REFERENCES user_service.users (id),
    role            VARCHAR(20) NOT NULL CHECK (role IN ('OWNER', 'MODERATOR')),
    invited_by      UUID,
    joined_at       TIMESTAMPTZ NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    UNIQUE (organization_id, user_id)
);
-- Exactly one owner per organization, enforced by the database as well.
CREATE UNIQUE INDEX organization_members_one_owner ON user_service.organization_members (organization_id) WHERE role = 'OWNER';
CREATE INDEX organization_members_user ON user_service.organization_members (user_id);

CREATE TABLE user_service.organization_invites (
    id                 UUID PRIMARY KEY,
    organization_id    UUID NOT NULL REFERENCES user_service.organizations (id),
    invite_code        VARCHAR(32) NOT NULL UNIQUE,
    invited_by         UUID NOT NULL,
    messenger_username VARCHAR(100),
    role               VARCHAR(20) NOT NULL DEFAULT 'MODERATOR',
    expires_at         TIMESTAMPTZ NOT NULL,
    used_at            TIMESTAMPTZ,
    used_by            UUID,
    created_at         TIMESTAMPTZ NOT NULL
);

CREATE TABLE user_service.groups (
    id              UUID PRIMARY KEY,
    organization_id UUID NOT NULL REFERENCES user_service.organizations (id),
    name            VARCHAR(255) NOT NULL,
    description     TEXT NOT NULL DEFAULT '',
    invite_code     VARCHAR(32) NOT NULL UNIQUE,
    created_by      UUID NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    updated_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX groups_organization ON user_service.groups (organization_id);

CREATE TABLE user_service.group_members (
    id          UUID PRIMARY KEY,
    group_id    UUID NOT NULL REFERENCES user_service.groups (id) ON DELETE CASCADE,
    user_id     UUID NOT NULL REFERENCES user_service.users (id),
    invited_by  UUID,
    joined_at   TIMESTAMPTZ NOT NULL,
    UNIQUE (group_id, user_id)
);
