//! The S3-compatible store, through `object_store`: signing, retries, multipart uploads and
//! presigned links come from a maintained client instead of being written here.

use super::ObjectError;
use bytes::Bytes;
use chrono::Duration;
use futures_util::{StreamExt, stream};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path;
use object_store::signer::Signer;
use object_store::{
    Attribute, Attributes, BackoffConfig, ClientOptions, MultipartUpload, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, RetryConfig,
};
use std::sync::Arc;

/// Bodies of this size and more go up in parts: one request per part keeps each retry small
/// and no single request long enough to hit the request timeout.
pub const MULTIPART_THRESHOLD: usize = 8 * 1024 * 1024;

/// The size of each part but the last: S3's minimum part size, so memory per request stays
/// low while the part count stays far below S3's limit of 10 000.
pub const PART_SIZE: usize = 5 * 1024 * 1024;

/// Parts in flight at once: enough to fill the link, few enough not to starve other requests.
const PART_CONCURRENCY: usize = 4;

/// Tries after the first: passing faults (a restarting Garage, a 503 "SlowDown") heal within
/// seconds, and an upload waiting longer is better answered with an error.
const MAX_RETRIES: usize = 3;

/// The whole time retries of one request may take, so a caller never waits much longer.
const RETRY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One request's time limit (a 5 MiB part or a whole small object).
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Time to open a connection; an unreachable store should fail fast and be retried.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// What is needed to reach an S3-compatible server.
#[derive(Clone, Copy)]
pub struct S3Settings<'a> {
    /// `http://host:port` or `https://host`; the bucket goes in the path, not the host name.
    pub endpoint: &'a str,
    /// The bucket holding the media.
    pub bucket: &'a str,
    /// The signing region (`garage` for Garage, `auto` for R2).
    pub region: &'a str,
    /// The access key id.
    pub access_key: &'a str,
    /// The secret access key.
    pub secret_key: &'a str,
    /// Where browsers reach the same server, when `endpoint` is a private address: presigned
    /// links are signed for this host (the signature covers it, so a link cannot be rewritten
    /// to another host afterwards).
    pub public_endpoint: Option<&'a str>,
}

/// An S3-compatible server.
#[derive(Clone)]
pub struct S3Store {
    store: Arc<AmazonS3>,
    /// Signs presigned links: `store` itself, or a client of the public endpoint (which sends
    /// nothing; signing is local).
    signer: Arc<AmazonS3>,
    endpoint: String,
    public_endpoint: Option<String>,
    bucket: String,
}

// Written by hand so that no credential can ever reach a log line.
impl std::fmt::Debug for S3Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Store")
            .field("endpoint", &self.endpoint)
            .field("public_endpoint", &self.public_endpoint)
            .field("bucket", &self.bucket)
            .finish_non_exhaustive()
    }
}

/// The client configuration for `settings` talking to `endpoint`, the value of `setting` (the
/// private or the public endpoint), before it is built.
///
/// Path-style requests, since Garage (and MinIO) do not serve buckets as host names by
/// default. Plain HTTP is allowed only when the endpoint itself is `http://`, so a store
/// configured with `https://` can never be downgraded.
fn builder_for(
    settings: &S3Settings<'_>,
    endpoint: &str,
    setting: &str,
) -> Result<AmazonS3Builder, ObjectError> {
    let endpoint = endpoint.trim_end_matches('/');
    let scheme = endpoint
        .split_once("://")
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    let plain_http = match scheme.as_deref() {
        Some("http") => true,
        Some("https") => false,
        _ => {
            return Err(ObjectError::Config(format!(
                "{setting} {endpoint:?} must start with http:// or https://"
            )));
        }
    };
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: MAX_RETRIES,
        retry_timeout: RETRY_TIMEOUT,
    };
    let client = ClientOptions::new()
        .with_timeout(REQUEST_TIMEOUT)
        .with_connect_timeout(CONNECT_TIMEOUT);
    let mut builder = AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_bucket_name(settings.bucket)
        .with_access_key_id(settings.access_key)
        .with_secret_access_key(settings.secret_key)
        .with_virtual_hosted_style_request(false)
        .with_retry(retry)
        // After the client options, which would otherwise reset it.
        .with_client_options(client)
        .with_allow_http(plain_http);
    // An empty region keeps object_store's default (us-east-1) rather than signing for "".
    if !settings.region.is_empty() {
        builder = builder.with_region(settings.region);
    }
    Ok(builder)
}

fn object_path(key: &str) -> Result<Path, ObjectError> {
    Path::parse(key).map_err(|source| ObjectError::Key {
        key: key.to_string(),
        source,
    })
}

fn failed(operation: &'static str, key: &str) -> impl FnOnce(object_store::Error) -> ObjectError {
    let key = key.to_string();
    move |source| ObjectError::S3 {
        operation,
        key,
        source,
    }
}

impl S3Store {
    /// A store for `settings`; nothing is sent until the first operation.
    pub fn new(settings: &S3Settings<'_>) -> Result<S3Store, ObjectError> {
        let build = |endpoint: &str, setting: &str| -> Result<Arc<AmazonS3>, ObjectError> {
            let store = builder_for(settings, endpoint, setting)?
                .build()
                .map_err(|e| ObjectError::Config(format!("s3 store: {e}")))?;
            Ok(Arc::new(store))
        };
        let store = build(settings.endpoint, "storage.endpoint")?;
        let public_endpoint = settings
            .public_endpoint
            .map(|e| e.trim().trim_end_matches('/'))
            .filter(|e| !e.is_empty());
        let signer = match public_endpoint {
            Some(public) => build(public, "storage.public_endpoint")?,
            None => store.clone(),
        };
        Ok(S3Store {
            store,
            signer,
            endpoint: settings.endpoint.trim_end_matches('/').to_string(),
            public_endpoint: public_endpoint.map(str::to_string),
            bucket: settings.bucket.to_string(),
        })
    }

    /// Stores `bytes` under `key` with its content type (S3 then serves it with that type):
    /// in one request below [`MULTIPART_THRESHOLD`], in parts of [`PART_SIZE`] from there.
    pub(super) async fn put(
        &self,
        key: &str,
        bytes: Vec<u8>,
        content_type: &str,
    ) -> Result<(), ObjectError> {
        let path = object_path(key)?;
        let attributes =
            Attributes::from_iter([(Attribute::ContentType, content_type.to_string())]);
        let bytes = Bytes::from(bytes);
        if bytes.len() < MULTIPART_THRESHOLD {
            let options = PutOptions {
                attributes,
                ..PutOptions::default()
            };
            self.store
                .put_opts(&path, PutPayload::from(bytes), options)
                .await
                .map_err(failed("put", key))?;
            return Ok(());
        }
        let options = PutMultipartOptions {
            attributes,
            ..PutMultipartOptions::default()
        };
        let mut upload = self
            .store
            .put_multipart_opts(&path, options)
            .await
            .map_err(failed("multipart start", key))?;
        // Parts are slices of the one buffer (no copies); each request is retried on its own.
        let parts: Vec<_> = (0..bytes.len())
            .step_by(PART_SIZE)
            .map(|start| {
                let end = (start + PART_SIZE).min(bytes.len());
                upload.put_part(PutPayload::from(bytes.slice(start..end)))
            })
            .collect();
        let mut sending = stream::iter(parts).buffer_unordered(PART_CONCURRENCY);
        let mut error = None;
        while let Some(sent) = sending.next().await {
            if let Err(e) = sent {
                error = Some(e);
                break;
            }
        }
        // Dropping the stream cancels the parts still in flight before the upload is aborted.
        drop(sending);
        let result = match error {
            Some(e) => Err(e),
            None => upload.complete().await.map(|_| ()),
        };
        if let Err(e) = result {
            // Abort, or the server keeps the uploaded parts (and bills for them) until its
            // own cleanup of incomplete uploads.
            if let Err(abort) = upload.abort().await {
                tracing::warn!(key, error = %abort, "could not abort a failed multipart upload");
            }
            return Err(failed("multipart upload", key)(e));
        }
        Ok(())
    }

    /// The bytes under `key`, or none when the key is missing.
    pub(super) async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, ObjectError> {
        let path = object_path(key)?;
        match self.store.get(&path).await {
            Ok(found) => {
                let bytes = found.bytes().await.map_err(failed("get", key))?;
                Ok(Some(bytes.to_vec()))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(failed("get", key)(e)),
        }
    }

    /// Removes `key`; a missing key is fine, as deletions are repeated after partial failures.
    pub(super) async fn delete(&self, key: &str) -> Result<(), ObjectError> {
        let path = object_path(key)?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(failed("delete", key)(e)),
        }
    }

    /// A presigned GET link to `key`, valid for `ttl` from now (the server's clock judges it).
    pub(super) async fn presign(&self, key: &str, ttl: Duration) -> Result<String, ObjectError> {
        let path = object_path(key)?;
        let expires_in = ttl
            .to_std()
            .map_err(|_| ObjectError::Config(format!("link lifetime {ttl} is negative")))?;
        let url = self
            .signer
            .signed_url(reqwest::Method::GET, &path, expires_in)
            .await
            .map_err(failed("presign", key))?;
        Ok(url.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ClientConfigKey;
    use object_store::aws::AmazonS3ConfigKey;

    fn settings(endpoint: &str) -> S3Settings<'_> {
        S3Settings {
            endpoint,
            bucket: "bilet-media",
            region: "auto",
            access_key: "AKIAIOSFODNN7EXAMPLE",
            secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            public_endpoint: None,
        }
    }

    fn builder(settings: &S3Settings<'_>) -> Result<AmazonS3Builder, ObjectError> {
        builder_for(settings, settings.endpoint, "storage.endpoint")
    }

    fn config(builder: &AmazonS3Builder, key: AmazonS3ConfigKey) -> Option<String> {
        builder.get_config_value(&key)
    }

    #[test]
    fn an_https_endpoint_never_allows_plain_http() {
        let builder = builder(&settings("https://account.r2.cloudflarestorage.com/")).unwrap();
        assert_eq!(
            config(
                &builder,
                AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp)
            )
            .as_deref(),
            Some("false")
        );
        assert_eq!(
            config(&builder, AmazonS3ConfigKey::VirtualHostedStyleRequest).as_deref(),
            Some("false")
        );
        assert_eq!(
            config(&builder, AmazonS3ConfigKey::Endpoint).as_deref(),
            Some("https://account.r2.cloudflarestorage.com")
        );
    }

    #[test]
    fn an_http_endpoint_allows_plain_http_with_path_style() {
        let builder = builder(&settings("HTTP://127.0.0.1:3900")).unwrap();
        assert_eq!(
            config(
                &builder,
                AmazonS3ConfigKey::Client(ClientConfigKey::AllowHttp)
            )
            .as_deref(),
            Some("true")
        );
        assert_eq!(
            config(&builder, AmazonS3ConfigKey::VirtualHostedStyleRequest).as_deref(),
            Some("false")
        );
        assert_eq!(
            config(&builder, AmazonS3ConfigKey::Region).as_deref(),
            Some("auto")
        );
    }

    #[test]
    fn an_endpoint_without_a_scheme_is_refused() {
        assert!(matches!(
            builder(&settings("127.0.0.1:3900")),
            Err(ObjectError::Config(_))
        ));
    }

    #[tokio::test]
    async fn presigned_links_are_path_style_and_last_the_given_time() {
        let store = S3Store::new(&settings("https://account.r2.cloudflarestorage.com")).unwrap();
        let url = store
            .presign("org/1/file.png", Duration::hours(1))
            .await
            .unwrap();
        assert!(
            url.starts_with("https://account.r2.cloudflarestorage.com/bilet-media/org/1/file.png?"),
            "{url}"
        );
        assert!(url.contains("X-Amz-Expires=3600"), "{url}");
        assert!(url.contains("X-Amz-Signature="), "{url}");
        assert!(matches!(
            store.presign("org/../file.png", Duration::hours(1)).await,
            Err(ObjectError::Key { .. })
        ));
        assert!(matches!(
            store.presign("org/file.png", Duration::seconds(-1)).await,
            Err(ObjectError::Config(_))
        ));
    }

    #[tokio::test]
    async fn links_are_signed_for_the_public_endpoint_when_there_is_one() {
        let store = S3Store::new(&S3Settings {
            public_endpoint: Some("https://media.example.org/"),
            ..settings("http://10.0.0.5:3900")
        })
        .unwrap();
        let url = store
            .presign("org/file.png", Duration::hours(1))
            .await
            .unwrap();
        assert!(
            url.starts_with("https://media.example.org/bilet-media/org/file.png?"),
            "{url}"
        );
        assert!(!url.contains("10.0.0.5"), "{url}");
        let refused = S3Store::new(&S3Settings {
            public_endpoint: Some("media.example.org"),
            ..settings("http://10.0.0.5:3900")
        });
        match refused {
            Err(ObjectError::Config(why)) => {
                assert!(why.contains("storage.public_endpoint"), "{why}")
            }
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }
}
