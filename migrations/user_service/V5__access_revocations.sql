-- Access tokens live 15 minutes and are checked by the gateway on their signature alone. So that
-- a removed member, a demoted role, a deleted or blocked account or an ended session stops working at
-- once, identity records each such change here and the gateways keep the recent ones in memory
-- (LISTEN bilet_revocations, and polling by seq).

-- Bumped whenever what the user's tokens say may have stopped being true (membership, role,
-- account); a token carries the version it was issued at and is refused below the current one.
ALTER TABLE user_service.users ADD COLUMN access_version BIGINT NOT NULL DEFAULT 0;
-- Set by a platform administrator (`bilet admin block`): no sign-in, no refresh, no token.
ALTER TABLE user_service.users ADD COLUMN blocked_at TIMESTAMPTZ;

CREATE TABLE user_service.access_revocations (
    seq         BIGSERIAL PRIMARY KEY,
    user_id     UUID NOT NULL,
    -- Set: the tokens of this session end. Null: every token of the user below min_version.
    session_id  UUID,
    min_version BIGINT,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((session_id IS NULL) <> (min_version IS NULL))
);
-- Gateways load the last token lifetime's worth at start; the hourly cleanup drops older rows.
CREATE INDEX access_revocations_recent ON user_service.access_revocations (created_at);
