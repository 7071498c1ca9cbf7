//! Media file records (schema media_service): created when an upload starts, moved through
//! UPLOADING → PROCESSING → READY, attached to whatever points at them (any number of
//! entities: `media_service.attachments`), and marked DELETED.

use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::error::Refusal;
use domain::ids::{TenantId, UserId};
use domain::media::attachable::{Candidate, Holder, may_attach};
use domain::media::{Attachment, MediaStatus, Variant};
use tokio_postgres::Row;
use uuid::Uuid;

/// A stored variant of an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredVariant {
    /// Which one.
    pub variant: Variant,
    /// Where its bytes are.
    pub storage_key: String,
    /// Its MIME type.
    pub content_type: String,
    /// Width in pixels.
    pub width: i32,
    /// Height in pixels.
    pub height: i32,
    /// Size in bytes.
    pub size_bytes: i64,
}

/// A media file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaFile {
    /// Identifier.
    pub id: Uuid,
    /// The organization it belongs to (none: the uploader's own).
    pub tenant_id: Option<TenantId>,
    /// Who uploaded it.
    pub owner_id: UserId,
    /// The name the client gave.
    pub file_name: String,
    /// The sniffed MIME type.
    pub content_type: String,
    /// Size of the original.
    pub size_bytes: i64,
    /// Image width.
    pub width: Option<i32>,
    /// Image height.
    pub height: Option<i32>,
    /// Where the original is.
    pub storage_key: String,
    /// Status.
    pub status: MediaStatus,
    /// Why variants could not be made, if they could not.
    pub failure: Option<String>,
    /// What points at it: the earliest of its attachments, when it has several.
    pub attached: Option<(Attachment, Uuid)>,
    /// Upload time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its variants (images only, once READY).
    pub variants: Vec<StoredVariant>,
}

impl MediaFile {
    /// Every key that holds bytes of this file.
    pub fn keys(&self) -> Vec<String> {
        std::iter::once(self.storage_key.clone())
            .chain(self.variants.iter().map(|v| v.storage_key.clone()))
            .collect()
    }
}

// The attachment shown is the earliest one, read from the attachments table (readable by
// everyone, as attached files are).
const COLUMNS: &str =
    "id, tenant_id, owner_id, file_name, content_type, size_bytes, width, height, storage_key,
    status, failure,
    (SELECT a.entity_type FROM media_service.attachments a WHERE a.file_id = files.id
     ORDER BY a.attached_at, a.entity_type, a.entity_id LIMIT 1),
    (SELECT a.entity_id FROM media_service.attachments a WHERE a.file_id = files.id
     ORDER BY a.attached_at, a.entity_type, a.entity_id LIMIT 1),
    created_at, updated_at";

fn from_row(row: &Row) -> MediaFile {
    let attached_type: Option<String> = row.get(11);
    let attached_id: Option<Uuid> = row.get(12);
    MediaFile {
        id: row.get(0),
        tenant_id: row.get::<_, Option<Uuid>>(1).map(TenantId),
        owner_id: UserId(row.get(2)),
        file_name: row.get(3),
        content_type: row.get(4),
        size_bytes: row.get(5),
        width: row.get(6),
        height: row.get(7),
        storage_key: row.get(8),
        status: row
            .get::<_, String>(9)
            .parse()
            .unwrap_or(MediaStatus::Deleted),
        failure: row.get(10),
        attached: attached_type.and_then(|t| t.parse().ok()).zip(attached_id),
        created_at: row.get(13),
        updated_at: row.get(14),
        variants: Vec::new(),
    }
}

async fn with_variants(tx: &Tx, mut file: MediaFile) -> Result<MediaFile> {
    let rows = tx
        .query(
            "SELECT variant, storage_key, content_type, width, height, size_bytes FROM media_service.variants
             WHERE file_id = $1 ORDER BY width, variant",
            &[&file.id],
        )
        .await?;
    file.variants = rows
        .iter()
        .filter_map(|r| {
            Some(StoredVariant {
                variant: r.get::<_, String>(0).parse().ok()?,
                storage_key: r.get(1),
                content_type: r.get(2),
                width: r.get(3),
                height: r.get(4),
                size_bytes: r.get(5),
            })
        })
        .collect();
    Ok(file)
}

/// What an upload records before its bytes are stored.
#[derive(Clone, Debug)]
pub struct NewFile {
    /// The name the client gave (trimmed to 255 characters).
    pub file_name: String,
    /// The sniffed MIME type.
    pub content_type: String,
    /// Size in bytes.
    pub size_bytes: i64,
    /// Image dimensions read from the header.
    pub dimensions: Option<(u32, u32)>,
    /// Where the bytes go.
    pub storage_key: String,
}

/// Records a file as UPLOADING, in the caller's organization (or their own without one).
pub async fn create(
    db: &Database,
    scope: Scope,
    id: Uuid,
    new: &NewFile,
    now: DateTime<Utc>,
) -> Result<MediaFile> {
    let owner = scope.user.ok_or_else(Refusal::forbidden)?;
    let tx = db.begin(scope).await?;
    let (width, height) = match new.dimensions {
        Some((w, h)) => (Some(w as i32), Some(h as i32)),
        None => (None, None),
    };
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO media_service.files (id, tenant_id, owner_id, file_name, content_type, size_bytes, width, height,
                    storage_key, status, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'UPLOADING', $10, $10) RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &scope.tenant.map(|t| t.as_uuid()),
                &owner.as_uuid(),
                &new.file_name,
                &new.content_type,
                &new.size_bytes,
                &width,
                &height,
                &new.storage_key,
                &now,
            ],
        )
        .await?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// Moves a file on after its bytes are stored (PROCESSING for images, READY otherwise).
pub async fn stored(
    db: &Database,
    scope: Scope,
    id: Uuid,
    status: MediaStatus,
    now: DateTime<Utc>,
) -> Result<MediaFile> {
    let tx = db.begin(scope).await?;
    let row = tx
        .query_opt(
            &format!(
                "UPDATE media_service.files SET status = $2, updated_at = $3 WHERE id = $1 AND status = 'UPLOADING'
                 RETURNING {COLUMNS}"
            ),
            &[&id, &status.as_str(), &now],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// Forgets an upload whose bytes could not be stored.
pub async fn abandon(db: &Database, scope: Scope, id: Uuid) -> Result<()> {
    let tx = db.begin(scope).await?;
    tx.execute(
        "DELETE FROM media_service.files WHERE id = $1 AND status = 'UPLOADING'",
        &[&id],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// A file the scope may see, with its variants.
pub async fn get(db: &Database, scope: Scope, id: Uuid) -> Result<MediaFile> {
    let tx = db.begin(scope).await?;
    let row = tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM media_service.files WHERE id = $1"),
            &[&id],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let file = with_variants(&tx, from_row(&row)).await?;
    tx.commit().await?;
    Ok(file)
}

/// Files waiting for their variants (after a restart, the workers take them up again).
pub async fn processing(db: &Database) -> Result<Vec<MediaFile>> {
    let tx = db.begin(Scope::system()).await?;
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM media_service.files WHERE status = 'PROCESSING' ORDER BY created_at LIMIT 1000"
            ),
            &[],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(from_row).collect())
}

/// Records the variants of a file and makes it READY (`failure` says why there are none).
pub async fn ready(
    db: &Database,
    file: &MediaFile,
    variants: &[StoredVariant],
    failure: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = db.begin(Scope::system()).await?;
    let changed = tx
        .execute(
            "UPDATE media_service.files SET status = 'READY', failure = $2, updated_at = $3
             WHERE id = $1 AND status = 'PROCESSING'",
            &[&file.id, &failure, &now],
        )
        .await?;
    if changed == 1 {
        for v in variants {
            tx.execute(
                "INSERT INTO media_service.variants (file_id, tenant_id, owner_id, variant, storage_key, content_type,
                    width, height, size_bytes)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
                &[
                    &file.id,
                    &file.tenant_id.map(|t| t.as_uuid()),
                    &file.owner_id.as_uuid(),
                    &v.variant.as_str(),
                    &v.storage_key,
                    &v.content_type,
                    &v.width,
                    &v.height,
                    &v.size_bytes,
                ],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(changed == 1)
}

/// Marks a file DELETED (its bytes are already gone).
pub async fn mark_deleted(db: &Database, scope: Scope, id: Uuid, now: DateTime<Utc>) -> Result<()> {
    let tx = db.begin(scope).await?;
    tx.execute(
        "UPDATE media_service.files SET status = 'DELETED', deleted_at = $2, updated_at = $2
         WHERE id = $1 AND status <> 'DELETED'",
        &[&id, &now],
    )
    .await?;
    tx.execute(
        "DELETE FROM media_service.attachments WHERE file_id = $1",
        &[&id],
    )
    .await?;
    tx.execute(
        "DELETE FROM media_service.variants WHERE file_id = $1",
        &[&id],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Whether the file `id` exists and may be attached to something `holder` owns
/// (`domain::media::attachable`). Read in the holder's own scope, so row security already
/// hides other owners' unattached files; the rule decides for the rest.
pub async fn attachable(db: &Database, id: Uuid, holder: Holder) -> Result<bool> {
    let scope = match holder {
        Holder::User(user) => Scope::user(user),
        Holder::Organization(tenant) => Scope::tenant(tenant, None),
    };
    let tx = db.begin(scope).await?;
    let row = tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM media_service.files WHERE id = $1"),
            &[&id],
        )
        .await?;
    tx.commit().await?;
    Ok(row.is_some_and(|row| allowed(&from_row(&row), holder)))
}

fn allowed(file: &MediaFile, holder: Holder) -> bool {
    may_attach(
        &Candidate {
            tenant: file.tenant_id,
            owner: file.owner_id,
            content_type: &file.content_type,
            status: file.status,
        },
        holder,
    )
}

/// Makes `file` (if any) the one attached to `entity` as `kind` (from `at`), when the
/// attachment rule lets `holder` (who owns the entity) attach it; whatever this same entity had
/// attached before is let go, and becomes the cleanup's once nothing else points at it. Other
/// entities' attachments are never touched, so pointing at someone else's file and letting go
/// of it cannot orphan that file, and a file two entities share stays while either holds it.
/// Returns whether `file` is now attached to `entity`.
pub async fn attach(
    tx: &Tx,
    kind: Attachment,
    entity: Uuid,
    file: Option<(Uuid, Holder)>,
    at: DateTime<Utc>,
) -> Result<bool> {
    let new = file.map(|(id, _)| id);
    tx.execute(
        "DELETE FROM media_service.attachments
         WHERE entity_type = $1 AND entity_id = $2 AND file_id IS DISTINCT FROM $3",
        &[&kind.as_str(), &entity, &new],
    )
    .await?;
    let Some((file, holder)) = file else {
        return Ok(false);
    };
    // Locked so a concurrent delete of the file cannot slip between the check and the insert.
    let row = tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM media_service.files WHERE id = $1 FOR UPDATE"),
            &[&file],
        )
        .await?;
    let Some(found) = row.map(|row| from_row(&row)) else {
        tracing::warn!(%file, %entity, kind = kind.as_str(), ?holder, "refused to attach an unknown file");
        return Ok(false);
    };
    if !allowed(&found, holder) {
        tracing::warn!(%file, %entity, kind = kind.as_str(), ?holder,
            "refused to attach a file that is deleted, not an image or not the holder's");
        return Ok(false);
    }
    // The entity's row, if still there, names this same file already (the delete above).
    tx.execute(
        "INSERT INTO media_service.attachments (file_id, tenant_id, owner_id, entity_type, entity_id, attached_at)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (entity_type, entity_id) DO NOTHING",
        &[
            &file,
            &found.tenant_id.map(|t| t.as_uuid()),
            &found.owner_id.as_uuid(),
            &kind.as_str(),
            &entity,
            &at,
        ],
    )
    .await?;
    Ok(true)
}

/// Files uploaded before `before` that nothing is attached to any more, not yet deleted: the
/// cleanup's work.
pub async fn unattached_before(db: &Database, before: DateTime<Utc>) -> Result<Vec<MediaFile>> {
    let tx = db.begin(Scope::system()).await?;
    let rows = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM media_service.files
                 WHERE status <> 'DELETED' AND created_at < $1
                   AND NOT EXISTS (SELECT 1 FROM media_service.attachments a WHERE a.file_id = files.id)
                 ORDER BY created_at LIMIT 1000"
            ),
            &[&before],
        )
        .await?;
    let mut files = Vec::with_capacity(rows.len());
    for row in &rows {
        files.push(with_variants(&tx, from_row(row)).await?);
    }
    tx.commit().await?;
    Ok(files)
}
