//! Media bodies on the wire.

use domain::media::{Attachment, MediaStatus, Variant};
use serde::{Deserialize, Serialize};
use storage::media::files::MediaFile;
use uuid::Uuid;

/// A stored variant.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantDto {
    /// Which one.
    pub variant: Variant,
    /// Width in pixels.
    pub width: i32,
    /// Height in pixels.
    pub height: i32,
    /// Size in bytes.
    pub size_bytes: i64,
    /// MIME type.
    pub content_type: String,
}

/// What a file points at.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttachedDto {
    /// Kind of entity.
    #[serde(rename = "type")]
    pub kind: Attachment,
    /// Its id.
    pub id: Uuid,
}

/// A media file's metadata.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediaFileDto {
    /// Identifier.
    pub id: Uuid,
    /// Organization it belongs to (absent: the uploader's own).
    pub tenant_id: Option<Uuid>,
    /// Uploader.
    pub owner_id: Uuid,
    /// The name the client gave.
    pub file_name: String,
    /// MIME type, from the bytes.
    pub content_type: String,
    /// Size of the original in bytes.
    pub size_bytes: i64,
    /// Image width.
    pub width: Option<i32>,
    /// Image height.
    pub height: Option<i32>,
    /// Status.
    pub status: MediaStatus,
    /// Why there are no variants, if variants failed.
    pub failure: Option<String>,
    /// What points at it.
    pub attached_to: Option<AttachedDto>,
    /// Variants (images, once READY).
    pub variants: Vec<VariantDto>,
    /// Upload time.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Last change.
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

impl From<MediaFile> for MediaFileDto {
    fn from(f: MediaFile) -> Self {
        MediaFileDto {
            id: f.id,
            tenant_id: f.tenant_id.map(|t| t.as_uuid()),
            owner_id: f.owner_id.as_uuid(),
            file_name: f.file_name,
            content_type: f.content_type,
            size_bytes: f.size_bytes,
            width: f.width,
            height: f.height,
            status: f.status,
            failure: f.failure,
            attached_to: f.attached.map(|(kind, id)| AttachedDto { kind, id }),
            variants: f
                .variants
                .into_iter()
                .map(|v| VariantDto {
                    variant: v.variant,
                    width: v.width,
                    height: v.height,
                    size_bytes: v.size_bytes,
                    content_type: v.content_type,
                })
                .collect(),
            created_at: f.created_at,
            updated_at: f.updated_at,
        }
    }
}

/// A signed link.
#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignedUrlDto {
    /// The link.
    pub url: String,
    /// The variant it shows.
    pub variant: Variant,
    /// When it stops working.
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

/// `?variant=` of the link endpoint.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UrlQuery {
    /// ORIGINAL (default), THUMBNAIL, SMALL, MEDIUM or LARGE (the server reads any letter case).
    #[param(value_type = Option<Variant>, inline)]
    pub variant: Option<String>,
}

/// Whose an upload is.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UploadQuery {
    /// `true`: the uploader's own file even under a token of an organization (a profile
    /// picture must be one); otherwise the token's organization's, or the uploader's own
    /// without one.
    pub personal: Option<bool>,
}

/// `?expires=&signature=` of a local link.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LinkQuery {
    /// Unix seconds.
    #[param(required = true)]
    pub expires: i64,
    /// Hex HMAC.
    #[param(required = true)]
    pub signature: String,
}

/// The multipart form of an upload, for the document only (the handler reads the parts and
/// refuses any but `file`).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct UploadForm {
    /// The file, not empty: JPEG, PNG, WebP or GIF up to 5 MB, or PDF up to 10 MB. Its type is
    /// read from its bytes (another format is refused with 415); a declared type must agree.
    #[schema(value_type = String, format = Binary, min_length = 1)]
    pub file: Vec<u8>,
}
