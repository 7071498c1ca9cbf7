-- What a session was started from (the browser's User-Agent, at most 200 characters), so a
-- person can tell their sessions apart on the profile page and end one. Carried along the
-- session's chain of refresh tokens; NULL for sessions started before it was kept.
ALTER TABLE user_service.refresh_tokens ADD COLUMN IF NOT EXISTS client TEXT;
