//! Signed links to files in the local store: the path, an expiry and an HMAC over both, so a
//! link works until it expires and any change to it is refused.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The signature of `key` valid until `expires` (unix seconds), hex-encoded.
pub fn sign(secret: &[u8], key: &str, expires: i64) -> String {
    let mut mac = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    mac.update(key.as_bytes());
    mac.update(b"\n");
    mac.update(expires.to_string().as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// Why a link is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRefusal {
    /// Past its expiry.
    Expired,
    /// The signature does not match the path and expiry.
    Altered,
}

/// Checks a link at `now`.
pub fn verify(
    secret: &[u8],
    key: &str,
    expires: i64,
    signature: &str,
    now: DateTime<Utc>,
) -> Result<(), LinkRefusal> {
    let Ok(given) = hex::decode(signature) else {
        return Err(LinkRefusal::Altered);
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return Err(LinkRefusal::Altered);
    };
    mac.update(key.as_bytes());
    mac.update(b"\n");
    mac.update(expires.to_string().as_bytes());
    // Constant-time comparison.
    mac.verify_slice(&given).map_err(|_| LinkRefusal::Altered)?;
    if now.timestamp() >= expires {
        return Err(LinkRefusal::Expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_works_until_it_expires_and_not_when_altered() {
        let now = Utc::now();
        let expires = now.timestamp() + 3600;
        let sig = sign(b"secret", "t/a.jpg", expires);
        assert_eq!(verify(b"secret", "t/a.jpg", expires, &sig, now), Ok(()));
        assert_eq!(
            verify(
                b"secret",
                "t/a.jpg",
                expires,
                &sig,
                now + chrono::Duration::seconds(3600)
            ),
            Err(LinkRefusal::Expired)
        );
        assert_eq!(
            verify(b"secret", "t/b.jpg", expires, &sig, now),
            Err(LinkRefusal::Altered)
        );
        assert_eq!(
            verify(b"secret", "t/a.jpg", expires + 1, &sig, now),
            Err(LinkRefusal::Altered)
        );
        assert_eq!(
            verify(b"other", "t/a.jpg", expires, &sig, now),
            Err(LinkRefusal::Altered)
        );
        assert_eq!(
            verify(b"secret", "t/a.jpg", expires, "zz", now),
            Err(LinkRefusal::Altered)
        );
    }
}
