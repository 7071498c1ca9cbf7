//! Sealing an organization's provider keys for storage: XChaCha20-Poly1305 under a key derived
//! from `payments.credentials_key` (SHA-256 of it), a random nonce per seal, and the row's
//! organization and provider as associated data, so a sealed key copied into another
//! organization's row does not open.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use domain::events::checkout::ProviderKind;
use domain::ids::TenantId;
use sha2::{Digest, Sha256};

const NONCE: usize = 24;

/// Seals and opens stored provider keys.
#[derive(Clone)]
pub struct Sealer {
    cipher: XChaCha20Poly1305,
}

/// A sealed value that does not open: another key, another row, or damaged.
#[derive(Debug, thiserror::Error)]
#[error("a stored provider key does not open (was PAYMENTS_CREDENTIALS_KEY changed?)")]
pub struct Unreadable;

fn associated(tenant: TenantId, provider: ProviderKind) -> Vec<u8> {
    format!("{}:{}", tenant.as_uuid(), provider.as_str()).into_bytes()
}

impl Sealer {
    /// The sealer of `secret`.
    pub fn new(secret: &str) -> Sealer {
        let key = Sha256::digest(secret.as_bytes());
        Sealer {
            cipher: XChaCha20Poly1305::new(&key),
        }
    }

    /// `plain`, sealed for `tenant`'s account at `provider`.
    pub fn seal(&self, tenant: TenantId, provider: ProviderKind, plain: &str) -> Vec<u8> {
        let nonce: [u8; NONCE] = rand::random();
        let aad = associated(tenant, provider);
        let sealed = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: plain.as_bytes(),
                    aad: &aad,
                },
            )
            // Encryption fails only past 256 GiB of input.
            .unwrap_or_default();
        [nonce.as_slice(), &sealed].concat()
    }

    /// What `sealed` holds, if it was sealed under this key for this row.
    pub fn open(
        &self,
        tenant: TenantId,
        provider: ProviderKind,
        sealed: &[u8],
    ) -> Result<String, Unreadable> {
        if sealed.len() <= NONCE {
            return Err(Unreadable);
        }
        let (nonce, body) = sealed.split_at(NONCE);
        let aad = associated(tenant, provider);
        let plain = self
            .cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: body,
                    aad: &aad,
                },
            )
            .map_err(|_| Unreadable)?;
        String::from_utf8(plain).map_err(|_| Unreadable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_key_opens_only_for_its_row_and_key() {
        let sealer = Sealer::new("a key of the installation, long and random enough");
        let (a, b) = (TenantId::new(), TenantId::new());
        let sealed = sealer.seal(a, ProviderKind::YooKassa, "live_secret");
        assert!(
            !sealed.windows(11).any(|w| w == b"live_secret"),
            "not in the clear"
        );
        assert_eq!(
            sealer.open(a, ProviderKind::YooKassa, &sealed).unwrap(),
            "live_secret"
        );
        assert!(
            sealer.open(b, ProviderKind::YooKassa, &sealed).is_err(),
            "another organization"
        );
        assert!(
            sealer.open(a, ProviderKind::Stripe, &sealed).is_err(),
            "another provider"
        );
        assert!(
            Sealer::new("another key")
                .open(a, ProviderKind::YooKassa, &sealed)
                .is_err()
        );
        let mut damaged = sealed.clone();
        *damaged.last_mut().unwrap() ^= 1;
        assert!(sealer.open(a, ProviderKind::YooKassa, &damaged).is_err());
        assert_ne!(
            sealer.seal(a, ProviderKind::YooKassa, "live_secret"),
            sealed,
            "a fresh nonce"
        );
    }
}
