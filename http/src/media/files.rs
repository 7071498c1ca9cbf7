//! Media handlers: upload (sniffed, limited, stored, variants queued), metadata, signed links,
//! deletion, and serving the local store's signed links.

use super::dto::{LinkQuery, MediaFileDto, SignedUrlDto, UploadForm, UploadQuery, UrlQuery};
use crate::context::Caller;
use crate::error::ApiError;
use crate::extract::{Path, Query};
use crate::state::AppState;
use actors::media::render::{self, RenderError};
use axum::Json;
use axum::extract::State;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use domain::error::Refusal;
use domain::media::links::LinkRefusal;
use domain::media::refusals::{MediaFieldText, MediaRefusal};
use domain::media::{
    Format, LINK_TTL, MAX_PDF_BYTES, MediaStatus, UploadRefusal, Variant, check_upload,
};
use domain::roles::Role;
use domain::validation::FieldError;
use storage::media::files::{self, NewFile};
use storage::media::objects::Objects;
use storage::media::uploads::{self, UploadError};
use uuid::Uuid;

fn file_error(text: MediaFieldText) -> ApiError {
    ApiError::field("file", FieldError::from(text))
}

fn multipart_error(e: MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(ErrorCode::PayloadTooLarge)
            .with_details(serde_json::json!({"maxBytes": MAX_PDF_BYTES}))
    } else {
        file_error(MediaFieldText::MultipartUnreadable)
    }
}

fn refusal_error(refusal: UploadRefusal) -> ApiError {
    match refusal {
        UploadRefusal::Empty => file_error(MediaFieldText::EmptyFile),
        UploadRefusal::Unsupported => Refusal::from(MediaRefusal::UnsupportedFormat).into(),
        UploadRefusal::Mismatch { sniffed } => {
            ApiError::from(Refusal::from(MediaRefusal::TypeMismatch))
                .with_details(serde_json::json!({"detected": sniffed.mime()}))
        }
        UploadRefusal::TooLarge { max } => ApiError::new(ErrorCode::PayloadTooLarge)
            .with_details(serde_json::json!({"maxBytes": max})),
    }
}

fn render_error(e: RenderError) -> ApiError {
    match e {
        RenderError::TooLarge { width, height } => file_error(MediaFieldText::ImageTooLarge)
            .with_details(serde_json::json!({"width": width, "height": height})),
        RenderError::Unreadable(_) => file_error(MediaFieldText::ImageUnreadable),
    }
}

impl From<UploadError> for ApiError {
    fn from(e: UploadError) -> ApiError {
        match e {
            UploadError::Storage(e) => e.into(),
            UploadError::Objects(e) => {
                tracing::error!(error = %e, "object store failed");
                ApiError::new(ErrorCode::ServiceUnavailable)
            }
        }
    }
}

/// Uploads a file (multipart field `file`). The type comes from the bytes; images up to 5 MB,
/// PDF up to 10 MB. Images answer PROCESSING and get their variants shortly after. The file is
/// the token's organization's, or with `personal=true` (or a token without one) the uploader's.
#[utoipa::path(post, path = "/api/v1/media/upload", tag = "media", params(UploadQuery),
    request_body(content = UploadForm, content_type = "multipart/form-data", description = "field `file`"),
    responses((status = 201, body = MediaFileDto), (status = 400, body = crate::error::ErrorBody),
        (status = 413, body = crate::error::ErrorBody), (status = 415, body = crate::error::ErrorBody)))]
pub async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<UploadQuery>,
    multipart: Result<Multipart, MultipartRejection>,
) -> Result<(StatusCode, Json<MediaFileDto>), ApiError> {
    let user = caller.require_user()?;
    // A personal upload is made as the user alone, whatever organization the token acts for.
    let scope = if query.personal == Some(true) {
        storage::db::Scope::user(user)
    } else {
        caller.scope()
    };
    let mut multipart =
        multipart.map_err(|_| ApiError::from(Refusal::from(MediaRefusal::NotMultipart)))?;
    let mut upload = None;
    while let Some(mut field) = multipart.next_field().await.map_err(multipart_error)? {
        // One part, `file`: anything else is refused by name, as a JSON body's unknown field.
        let part = field
            .name()
            .unwrap_or("part")
            .chars()
            .take(64)
            .collect::<String>();
        if part != "file" || upload.is_some() {
            return Err(ApiError::field(&part, FieldError::Unknown));
        }
        let name = field
            .file_name()
            .unwrap_or("file")
            .chars()
            .take(255)
            .collect::<String>();
        let declared = field.content_type().map(str::to_string);
        let mut bytes = Vec::new();
        while let Some(chunk) = field.chunk().await.map_err(multipart_error)? {
            // Stop reading as soon as no format could accept it.
            if bytes.len() + chunk.len() > MAX_PDF_BYTES {
                return Err(refusal_error(UploadRefusal::TooLarge {
                    max: MAX_PDF_BYTES,
                }));
            }
            bytes.extend_from_slice(&chunk);
        }
        upload = Some((name, declared, bytes));
    }
    let (name, declared, bytes) =
        upload.ok_or_else(|| ApiError::field("file", FieldError::Required))?;
    let format = check_upload(&bytes, declared.as_deref()).map_err(refusal_error)?;
    let dimensions = if format.is_image() {
        Some(render::dimensions(&bytes).map_err(render_error)?)
    } else {
        None
    };
    let id = Uuid::now_v7();
    let owner_dir = match scope.tenant {
        Some(tenant) => format!("t/{}", tenant.as_uuid()),
        None => format!("u/{}", user.as_uuid()),
    };
    let new = NewFile {
        file_name: name,
        content_type: format.mime().to_string(),
        size_bytes: bytes.len() as i64,
        dimensions,
        storage_key: format!("{owner_dir}/{id}.{}", format.extension()),
    };
    let now = state.clock.now();
    let file = uploads::store(&state.db, &state.objects, scope, id, &new, bytes, now).await?;
    if file.status == MediaStatus::Processing {
        match &state.media {
            Some(workers) => workers.submit(file.clone()),
            None => tracing::error!(file = %file.id, "no variant worker in this process"),
        }
    }
    Ok((StatusCode::CREATED, Json(file.into())))
}

/// A file's metadata (the caller's organization's, their own, or an attached one).
#[utoipa::path(get, path = "/api/v1/media/{id}", tag = "media",
    responses((status = 200, body = MediaFileDto), (status = 404, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<MediaFileDto>, ApiError> {
    caller.require_user()?;
    Ok(Json(
        files::get(&state.db, caller.scope(), id).await?.into(),
    ))
}

/// A link to the file or one of its variants, valid for one hour. Without a token, only for a
/// file something points at (an event's cover, a logo, an avatar), as its holder shows it.
/// A variant of a document is 422: only images have variants.
#[utoipa::path(get, path = "/api/v1/media/{id}/url", tag = "media", params(UrlQuery),
    responses((status = 200, body = SignedUrlDto), (status = 400, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn url(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(query): Query<UrlQuery>,
) -> Result<Json<SignedUrlDto>, ApiError> {
    Ok(Json(
        signed(&state, &caller, id, query.variant.as_deref()).await?,
    ))
}

/// The file or one of its variants by redirection (302) to a link valid for one hour, under
/// the same rules as `/url`: an address that stays the same, for what cannot ask for a link
/// first — a link preview's `og:image`, which messengers fetch when a page is shared.
#[utoipa::path(get, path = "/api/v1/media/{id}/image", tag = "media", params(UrlQuery),
    responses((status = 302, description = "To the file, in `Location`"), (status = 400, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn image(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Query(query): Query<UrlQuery>,
) -> Result<Response, ApiError> {
    let link = signed(&state, &caller, id, query.variant.as_deref()).await?;
    let location = header::HeaderValue::from_str(&link.url).map_err(|e| ApiError::internal(&e))?;
    let mut response = StatusCode::FOUND.into_response();
    response.headers_mut().insert(header::LOCATION, location);
    // The link behind it expires in an hour; a copy of the redirection may outlive a few
    // minutes of it, not more. Only what anyone may see (an attached file, asked without a
    // token) may be kept by a shared cache: a signed-in caller's answer can reach files of
    // their organization that are nobody else's.
    let keep = if caller.user.is_none() {
        "public, max-age=300"
    } else {
        "private, no-store"
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static(keep),
    );
    headers.insert(
        header::VARY,
        header::HeaderValue::from_static("Authorization"),
    );
    Ok(response)
}

/// A link to `id` (or its `variant`) as `caller` may see it.
async fn signed(
    state: &AppState,
    caller: &Caller,
    id: Uuid,
    variant: Option<&str>,
) -> Result<SignedUrlDto, ApiError> {
    // No token needed: without one, the files' row policy shows attached files only.
    let variant = match variant {
        None => Variant::Original,
        Some(v) => v.parse().map_err(|_| {
            ApiError::field("variant", FieldError::from(MediaFieldText::UnknownVariant))
        })?,
    };
    let file = files::get(&state.db, caller.scope(), id).await?;
    if matches!(file.status, MediaStatus::Deleted | MediaStatus::Uploading) {
        return Err(ApiError::not_found());
    }
    let key = match variant {
        Variant::Original => file.storage_key.clone(),
        _ if file.width.is_none() => {
            return Err(Refusal::from(MediaRefusal::DocumentHasNoVariants).into());
        }
        _ => match file.variants.iter().find(|v| v.variant == variant) {
            Some(v) => v.storage_key.clone(),
            None if file.status == MediaStatus::Processing => {
                return Err(Refusal::from(MediaRefusal::VariantsNotReady).into());
            }
            None => return Err(ApiError::not_found()),
        },
    };
    let now = state.clock.now();
    let url = state
        .objects
        .url(&key, now, LINK_TTL)
        .await
        .map_err(|e| ApiError::from(UploadError::Objects(e)))?;
    Ok(SignedUrlDto {
        url,
        variant,
        expires_at: now + LINK_TTL,
    })
}

/// Deletes a file and all its variants (its uploader, or an organizer of its organization).
#[utoipa::path(delete, path = "/api/v1/media/{id}", tag = "media",
    responses((status = 204), (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<StatusCode, ApiError> {
    let user = caller.require_user()?;
    let file = files::get(&state.db, caller.scope(), id).await?;
    if file.status == MediaStatus::Deleted {
        return Err(ApiError::not_found());
    }
    let organizer = file.tenant_id.is_some()
        && file.tenant_id == caller.tenant
        && caller.has_any_role(&[Role::Owner, Role::Moderator]);
    if file.owner_id != user && !organizer {
        return Err(ApiError::new(ErrorCode::Forbidden));
    }
    uploads::remove(
        &state.db,
        &state.objects,
        caller.scope(),
        &file,
        state.clock.now(),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Serves a signed link of the local store (absent with an S3 store, whose links go to it).
#[utoipa::path(get, path = "/api/v1/media/files/{key}", tag = "media",
    params(LinkQuery, ("key" = String, Path, pattern = r"^(?:(?!\.\.?(?:/|$))[^\x00-\x1F\x7F/\\%]+/)*(?!\.\.?(?:/|$))[^\x00-\x1F\x7F/\\%]+/?$",
        description = "The stored object's key as the signed link gives it (`t/<organization>/<id>.png`): `/`-separated segments, sent unescaped, none empty, `.` or `..`, without control characters, `\\` or `%`.")),
    responses((status = 200, description = "the bytes"), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody)))]
pub async fn serve_local(
    State(state): State<AppState>,
    Path(key): Path<String>,
    Query(query): Query<LinkQuery>,
) -> Result<Response, ApiError> {
    let Objects::Local(store) = &state.objects else {
        return Err(ApiError::not_found());
    };
    let opened = store
        .open_link(&key, query.expires, &query.signature, state.clock.now())
        .await
        .map_err(|e| ApiError::from(UploadError::Objects(e)))?;
    let bytes = match opened {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(ApiError::not_found()),
        Err(LinkRefusal::Expired) => {
            return Err(Refusal::from(MediaRefusal::LinkExpired).into());
        }
        Err(LinkRefusal::Altered) => {
            return Err(Refusal::from(MediaRefusal::LinkAltered).into());
        }
    };
    let content_type = key
        .rsplit_once('.')
        .and_then(|(_, ext)| {
            [
                Format::Jpeg,
                Format::Png,
                Format::Webp,
                Format::Gif,
                Format::Pdf,
            ]
            .into_iter()
            .find(|f| f.extension() == ext)
        })
        .map(Format::mime)
        .unwrap_or("application/octet-stream");
    Ok((
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "private, max-age=3600"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        bytes,
    )
        .into_response())
}
