-- A slug is unique among live organizations, not among deleted ones: a soft-deleted
-- organization keeps its row (events, payments and analytics still point at it) but no longer
-- holds its slug, which a new request may then take. Nothing looks an organization up by slug,
-- so an old one and a new one sharing it confuse no lookup.
ALTER TABLE user_service.organizations DROP CONSTRAINT organizations_slug_key;
CREATE UNIQUE INDEX organizations_live_slug ON user_service.organizations (slug)
    WHERE deleted_at IS NULL;
