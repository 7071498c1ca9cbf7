//! The flows that touch both the records and the bytes: storing an upload, deleting a file,
//! and the daily cleanup of files nothing is attached to any more.

use super::files::{self, MediaFile, NewFile};
use super::objects::{ObjectError, Objects};
use crate::db::{Database, Scope};
use chrono::{DateTime, Utc};
use domain::media::{MediaStatus, UNATTACHED_TTL};
use uuid::Uuid;

/// Why a flow failed.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The records failed (or a rule refused).
    #[error(transparent)]
    Storage(#[from] crate::Error),
    /// The object store failed.
    #[error(transparent)]
    Objects(#[from] ObjectError),
}

/// Records the file, stores its bytes, and moves it to PROCESSING (images, whose variants
/// come next) or READY. If the bytes cannot be stored, the record is dropped again.
pub async fn store(
    db: &Database,
    objects: &Objects,
    scope: Scope,
    id: Uuid,
    new: &NewFile,
    bytes: Vec<u8>,
    now: DateTime<Utc>,
) -> Result<MediaFile, UploadError> {
    files::create(db, scope, id, new, now).await?;
    if let Err(e) = objects
        .put(&new.storage_key, bytes, &new.content_type)
        .await
    {
        if let Err(cleanup) = files::abandon(db, scope, id).await {
            tracing::warn!(file = %id, error = %cleanup, "could not drop the record of a failed upload");
        }
        return Err(e.into());
    }
    let next = if new.dimensions.is_some() {
        MediaStatus::Processing
    } else {
        MediaStatus::Ready
    };
    Ok(files::stored(db, scope, id, next, now).await?)
}

/// Removes the bytes of a file and all its variants, then marks it DELETED. The bytes go
/// first: if marking fails, a retry finds the record and deleting missing keys is harmless.
pub async fn remove(
    db: &Database,
    objects: &Objects,
    scope: Scope,
    file: &MediaFile,
    now: DateTime<Utc>,
) -> Result<(), UploadError> {
    for key in file.keys() {
        objects.delete(&key).await?;
    }
    files::mark_deleted(db, scope, file.id, now).await?;
    Ok(())
}

/// The daily cleanup: removes files uploaded more than 24 hours before `now` that nothing is
/// attached to (a file shared by several entities stays until the last lets go), with every
/// variant. Returns how many files were removed.
pub async fn cleanup(
    db: &Database,
    objects: &Objects,
    now: DateTime<Utc>,
) -> Result<usize, UploadError> {
    let mut removed = 0;
    loop {
        let batch = files::unattached_before(db, now - UNATTACHED_TTL).await?;
        if batch.is_empty() {
            return Ok(removed);
        }
        for file in &batch {
            remove(db, objects, Scope::system(), file, now).await?;
            removed += 1;
        }
    }
}
