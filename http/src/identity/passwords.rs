//! bcrypt on the blocking pool: hashing costs a quarter of a second at cost 12 and must not
//! stall the request threads.

use crate::error::ApiError;
use std::sync::OnceLock;

/// Hashes a password.
pub async fn hash(password: String, cost: u32) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || bcrypt::hash(password, cost))
        .await
        .map_err(|e| ApiError::internal(&e))?
        .map_err(|e| ApiError::internal(&e))
}

/// Whether `password` matches `hash`; a malformed hash never matches.
pub async fn verify(password: String, hash: String) -> bool {
    tokio::task::spawn_blocking(move || bcrypt::verify(password, &hash).unwrap_or(false))
        .await
        .unwrap_or(false)
}

/// Spends the time of a real check when there is no account, so a sign-in attempt does not
/// reveal whether the email is registered.
pub async fn verify_nothing(password: String, cost: u32) {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let _ = tokio::task::spawn_blocking(move || {
        let dummy =
            DUMMY.get_or_init(|| bcrypt::hash("dummy-password-0", cost).unwrap_or_default());
        let _ = bcrypt::verify(password, dummy);
    })
    .await;
}
