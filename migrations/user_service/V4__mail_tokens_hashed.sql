-- Mail tokens (email verification, password reset) are stored as the SHA-256 (hex) of the
-- token in the mail, like refresh tokens: reading the table no longer yields working links.
-- Existing tokens are hashed in place rather than revoked, so a link mailed before the upgrade
-- still works until it expires: its stored text is now exactly what a lookup computes.
-- convert_to, not a cast to bytea, so a backslash in a token is not read as an escape.
UPDATE user_service.verification_tokens
SET token = encode(sha256(convert_to(token, 'UTF8')), 'hex');

COMMENT ON COLUMN user_service.verification_tokens.token IS
    'SHA-256 (hex) of the token sent in the mail; the token itself is never stored';

-- A reset or a password change spends every outstanding reset token of the user.
CREATE INDEX verification_tokens_outstanding ON user_service.verification_tokens (user_id, type)
    WHERE used_at IS NULL;
