-- Uploaded files and their variants. A file belongs to the organization the uploader acted
-- for, or to the uploader alone when they acted for none (an avatar).
CREATE TABLE media_service.files (
    id            UUID PRIMARY KEY,
    tenant_id     UUID,
    owner_id      UUID NOT NULL,
    file_name     TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size_bytes    BIGINT NOT NULL CHECK (size_bytes > 0),
    width         INTEGER,
    height        INTEGER,
    storage_key   TEXT NOT NULL UNIQUE,
    status        TEXT NOT NULL CHECK (status IN ('UPLOADING', 'PROCESSING', 'READY', 'DELETED')),
    failure       TEXT,
    attached_type TEXT CHECK (attached_type IN ('EVENT_COVER', 'ORGANIZATION_LOGO', 'USER_AVATAR')),
    attached_id   UUID,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    deleted_at    TIMESTAMPTZ,
    CHECK ((attached_type IS NULL) = (attached_id IS NULL))
);
CREATE INDEX files_unattached ON media_service.files (created_at) WHERE attached_type IS NULL AND status <> 'DELETED';
CREATE INDEX files_attached ON media_service.files (attached_type, attached_id) WHERE attached_type IS NOT NULL;
CREATE INDEX files_processing ON media_service.files (created_at) WHERE status = 'PROCESSING';

CREATE TABLE media_service.variants (
    file_id     UUID NOT NULL REFERENCES media_service.files (id) ON DELETE CASCADE,
    tenant_id   UUID,
    owner_id    UUID NOT NULL,
    variant     TEXT NOT NULL CHECK (variant IN ('THUMBNAIL', 'SMALL', 'MEDIUM', 'LARGE')),
    storage_key TEXT NOT NULL UNIQUE,
    content_type TEXT NOT NULL,
    width       INTEGER NOT NULL,
    height      INTEGER NOT NULL,
    size_bytes  BIGINT NOT NULL,
    PRIMARY KEY (file_id, variant)
);

-- The organization's files, the uploader's own, and attached files (covers, logos and avatars
-- are shown to anyone who sees what they belong to).
ALTER TABLE media_service.files ENABLE ROW LEVEL SECURITY;
ALTER TABLE media_service.files FORCE ROW LEVEL SECURITY;
CREATE POLICY files_owner ON media_service.files
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND owner_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND owner_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on');
CREATE POLICY files_attached ON media_service.files FOR SELECT
    USING (attached_type IS NOT NULL AND status <> 'DELETED');

ALTER TABLE media_service.variants ENABLE ROW LEVEL SECURITY;
ALTER TABLE media_service.variants FORCE ROW LEVEL SECURITY;
CREATE POLICY variants_owner ON media_service.variants
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND owner_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on')
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
           OR (tenant_id IS NULL AND owner_id = nullif(current_setting('app.user_id', true), '')::uuid)
           OR current_setting('app.system', true) = 'on');
CREATE POLICY variants_attached ON media_service.variants FOR SELECT
    USING (EXISTS (SELECT 1 FROM media_service.files f WHERE f.id = file_id AND f.attached_type IS NOT NULL AND f.status <> 'DELETED'));
