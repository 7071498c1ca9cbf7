//! The local-directory store: files under `<data_dir>/media`, served by bilet itself through
//! links carrying an expiry and an HMAC over the key and expiry.

use super::ObjectError;
use chrono::{DateTime, Duration, Utc};
use domain::config::Config;
use domain::media::links;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::path::PathBuf;

/// Files under a directory.
#[derive(Clone, Debug)]
pub struct LocalStore {
    root: PathBuf,
    public_url: String,
    link_secret: Vec<u8>,
}

impl LocalStore {
    /// The store under `<data_dir>/media`, linking through `http.public_url`.
    pub(super) fn from_config(config: &Config) -> LocalStore {
        LocalStore {
            root: config.data_dir.join("media"),
            public_url: config.http.public_url.trim_end_matches('/').to_string(),
            link_secret: link_secret(config),
        }
    }

    fn path(&self, key: &str) -> Result<PathBuf, ObjectError> {
        if key
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
        {
            return Err(ObjectError::Config(format!("invalid key {key}")));
        }
        Ok(self.root.join(key))
    }

    pub(super) async fn put(&self, key: &str, bytes: &[u8]) -> Result<(), ObjectError> {
        let path = self.path(key)?;
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir).await?;
        }
        // Write aside and rename, so a reader never sees half a file.
        let partial = path.with_extension("partial");
        tokio::fs::write(&partial, bytes).await?;
        tokio::fs::rename(&partial, &path).await?;
        Ok(())
    }

    pub(super) async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, ObjectError> {
        match tokio::fs::read(self.path(key)?).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub(super) async fn delete(&self, key: &str) -> Result<(), ObjectError> {
        match tokio::fs::remove_file(self.path(key)?).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    pub(super) fn url(&self, key: &str, now: DateTime<Utc>, ttl: Duration) -> String {
        let expires = (now + ttl).timestamp();
        let signature = links::sign(&self.link_secret, key, expires);
        format!(
            "{}/api/v1/media/files/{key}?expires={expires}&signature={signature}",
            self.public_url
        )
    }

    /// Checks a link this store signed and returns the file's bytes.
    pub async fn open_link(
        &self,
        key: &str,
        expires: i64,
        signature: &str,
        now: DateTime<Utc>,
    ) -> Result<Result<Option<Vec<u8>>, links::LinkRefusal>, ObjectError> {
        if let Err(refusal) = links::verify(&self.link_secret, key, expires, signature, now) {
            return Ok(Err(refusal));
        }
        Ok(Ok(self.get(key).await?))
    }
}

/// The key signing local links, derived from the JWT secret so there is one secret to keep.
fn link_secret(config: &Config) -> Vec<u8> {
    let base = config
        .auth
        .jwt_secret
        .as_ref()
        .map(|s| s.expose().as_bytes().to_vec())
        .unwrap_or_default();
    hmac_sha256(&base, b"bilet media links").to_vec()
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        // HMAC takes keys of any length.
        Err(_) => return [0; 32],
    };
    mac.update(data);
    mac.finalize().into_bytes().into()
}
