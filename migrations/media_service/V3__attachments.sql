-- A file may be attached to several entities at once (the same image as an organization's
-- logo and as the cover of one of its events): one row per entity pointing at a file, and a
-- file is kept by the cleanup while any row names it. An entity points at one file of a kind,
-- hence the key. tenant_id and owner_id are the file's, for row security like the variants'.
CREATE TABLE media_service.attachments (
    file_id     UUID NOT NULL REFERENCES media_service.files (id) ON DELETE CASCADE,
    tenant_id   UUID,
    owner_id    UUID NOT NULL,
    entity_type TEXT NOT NULL CHECK (entity_type IN ('EVENT_COVER', 'ORGANIZATION_LOGO', 'USER_AVATAR')),
    entity_id   UUID NOT NULL,
    attached_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (entity_type, entity_id)
);
CREATE INDEX attachments_file ON media_service.attachments (file_id);

-- The one attachment each file had so far.
INSERT INTO media_service.attachments (file_id, tenant_id, owner_id, entity_type, entity_id, attached_at)
SELECT id, tenant_id, owner_id, attached_type, attached_id, updated_at
FROM media_service.files
WHERE attached_type IS NOT NULL AND status <> 'DELETED'
ON CONFLICT DO NOTHING;

-- The policies that read the old columns go with them, and come back reading the new table.
DROP POLICY files_attached ON media_service.files;
DROP POLICY variants_attached ON media_service.variants;
DROP INDEX media_service.files_unattached;
DROP INDEX media_service.files_attached;
ALTER TABLE media_service.files DROP COLUMN attached_type, DROP COLUMN attached_id;
-- The cleanup's scan: live files by age (those with an attachment are skipped through
-- attachments_file).
CREATE INDEX files_live ON media_service.files (created_at) WHERE status <> 'DELETED';

-- Who points at what is public, as the attached files themselves are (a cover is shown
-- wherever its event is): everyone reads attachments, which is also what lets the files'
-- policy below see another organization's attachment. Writes stay with the file's owner (in
-- practice the media consumer, acting as the system).
ALTER TABLE media_service.attachments ENABLE ROW LEVEL SECURITY;
ALTER TABLE media_service.attachments FORCE ROW LEVEL SECURITY;
CREATE POLICY attachments_owner ON media_service.attachments
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND owner_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND owner_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on');
CREATE POLICY attachments_shown ON media_service.attachments FOR SELECT USING (true);

CREATE POLICY files_attached ON media_service.files FOR SELECT
    USING (status <> 'DELETED'
           AND EXISTS (SELECT 1 FROM media_service.attachments a WHERE a.file_id = files.id));
CREATE POLICY variants_attached ON media_service.variants FOR SELECT
    USING (EXISTS (SELECT 1 FROM media_service.files f
                   WHERE f.id = variants.file_id AND f.status <> 'DELETED'
                     AND EXISTS (SELECT 1 FROM media_service.attachments a WHERE a.file_id = f.id)));
