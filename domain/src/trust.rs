//! Who may speak to a service. A service port answers only requests that carry an assertion
//! signed with the secret gateways and services share: who signed it (the gateway, or another
//! service for internal routes), when, and exactly which request it covers (method, path and
//! query, user, tenant, roles). A forged identity header, a request sent straight to a service
//! port, or an assertion replayed for another path or after a minute is refused.

use crate::config::Service;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Header carrying the assertion.
pub const HEADER: &str = "x-bilet-assertion";

/// How far the signer's clock may be from the verifier's, in seconds, either way. Also how
/// long a captured assertion could be replayed for the very same request.
pub const MAX_SKEW_SECONDS: i64 = 60;

/// Shortest shared secret production accepts, in bytes.
pub const MIN_SECRET_BYTES: usize = 32;

/// The request an assertion covers, as the verifier sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request<'a> {
    /// HTTP method, upper case.
    pub method: &'a str,
    /// Path and query exactly as sent.
    pub target: &'a str,
    /// `X-User-Id`, empty for anonymous requests.
    pub user: &'a str,
    /// `X-Tenant-Id`, empty when there is none.
    pub tenant: &'a str,
    /// `X-User-Roles`, empty when there are none.
    pub roles: &'a str,
}

/// Why an assertion was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    /// No assertion at all.
    #[error("no service assertion")]
    Missing,
    /// Not of the form `v1.<signer>.<unix time>.<hex signature>`.
    #[error("malformed service assertion")]
    Malformed,
    /// Signed too long ago (or too far in the future).
    #[error("stale service assertion")]
    Stale,
    /// The signature does not match this request and secret.
    #[error("service assertion does not match the request")]
    BadSignature,
}

fn signer_name(signer: Service) -> &'static str {
    signer.name()
}

fn signer_from(name: &str) -> Option<Service> {
    Service::ALL.into_iter().find(|s| s.name() == name)
}

fn mac(secret: &[u8], signer: Service, at: i64, request: &Request<'_>) -> Option<Hmac<Sha256>> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).ok()?;
    // Fields are separated by a newline, which none of them can contain (header values and
    // request targets exclude it), so two different requests never sign the same text.
    for part in [
        "bilet-assertion-v1",
        signer_name(signer),
        &at.to_string(),
        request.method,
        request.target,
        request.user,
        request.tenant,
        request.roles,
    ] {
        mac.update(part.as_bytes());
        mac.update(b"\n");
    }
    Some(mac)
}

/// The assertion `signer` gives for `request` at unix time `at`.
pub fn sign(secret: &[u8], signer: Service, at: i64, request: &Request<'_>) -> String {
    let signature = mac(secret, signer, at, request)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default();
    format!("v1.{}.{at}.{signature}", signer_name(signer))
}

/// Checks `assertion` against `request` at unix time `now`; answers who signed it.
pub fn verify(
    secret: &[u8],
    assertion: Option<&str>,
    now: i64,
    request: &Request<'_>,
) -> Result<Service, TrustError> {
    let assertion = assertion.ok_or(TrustError::Missing)?;
    let mut parts = assertion.trim().split('.');
    let (Some("v1"), Some(signer), Some(at), Some(signature), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(TrustError::Malformed);
    };
    let signer = signer_from(signer).ok_or(TrustError::Malformed)?;
    let at: i64 = at.parse().map_err(|_| TrustError::Malformed)?;
    let signature = hex::decode(signature).map_err(|_| TrustError::Malformed)?;
    // abs_diff, not (now - at).abs(): `at` comes from the caller and i64::MIN would overflow.
    if now.abs_diff(at) > MAX_SKEW_SECONDS.unsigned_abs() {
        return Err(TrustError::Stale);
    }
    let mac = mac(secret, signer, at, request).ok_or(TrustError::BadSignature)?;
    // verify_slice compares in constant time.
    mac.verify_slice(&signature)
        .map_err(|_| TrustError::BadSignature)?;
    Ok(signer)
}

/// The fingerprint of the secrets every events node of a cluster must share: the service
/// secret (the gateway signs what it forwards with it) and the token secret (every node checks
/// the caller's token).
pub fn cluster_fingerprint(service_secret: &[u8], jwt_secret: &[u8]) -> String {
    let mut both = Vec::with_capacity(service_secret.len() + jwt_secret.len() + 8);
    both.extend_from_slice(&(service_secret.len() as u64).to_be_bytes());
    both.extend_from_slice(service_secret);
    both.extend_from_slice(jwt_secret);
    fingerprint(&both)
}

/// What a process tells its peers about its secret, so that they can find out they were given
/// different ones: an HMAC of a fixed label keyed with the secret. Unlike a plain hash, it is
/// of no use for signing and cannot be looked up in a table of hashes of known values.
pub fn fingerprint(secret: &[u8]) -> String {
    match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mut mac) => {
            mac.update(b"bilet-service-secret-fingerprint-v1");
            hex::encode(&mac.finalize().into_bytes()[..16])
        }
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_tell_secrets_apart_without_showing_them() {
        let a = fingerprint(b"test-service-secret-test-service-secret");
        assert_eq!(a, fingerprint(b"test-service-secret-test-service-secret"));
        assert_ne!(a, fingerprint(b"another-secret-another-secret-another"));
        assert_eq!(a.len(), 32);
        use sha2::Digest;
        let plain = hex::encode(Sha256::digest(b"test-service-secret-test-service-secret"));
        assert!(!plain.starts_with(&a), "not a plain hash of the secret");
    }

    const SECRET: &[u8] = b"a-secret-shared-by-the-cluster-32b!";

    fn request() -> Request<'static> {
        Request {
            method: "POST",
            target: "/api/v1/organizations/1/switch?x=1",
            user: "0190a000-0000-7000-8000-000000000001",
            tenant: "",
            roles: "",
        }
    }

    #[test]
    fn a_signed_request_verifies_and_names_its_signer() {
        let header = sign(SECRET, Service::Gateway, 1_000, &request());
        assert!(header.starts_with("v1.gateway.1000."));
        assert_eq!(
            verify(SECRET, Some(&header), 1_030, &request()),
            Ok(Service::Gateway)
        );
        let by_service = sign(SECRET, Service::Notifications, 1_000, &request());
        assert_eq!(
            verify(SECRET, Some(&by_service), 1_000, &request()),
            Ok(Service::Notifications)
        );
    }

    #[test]
    fn any_change_to_the_request_breaks_it() {
        let header = sign(SECRET, Service::Gateway, 1_000, &request());
        let changes = [
            Request {
                method: "GET",
                ..request()
            },
            Request {
                target: "/api/v1/organizations/2/switch?x=1",
                ..request()
            },
            Request {
                user: "0190a000-0000-7000-8000-000000000002",
                ..request()
            },
            Request {
                tenant: "0190a000-0000-7000-8000-000000000003",
                ..request()
            },
            Request {
                roles: "OWNER",
                ..request()
            },
        ];
        for changed in changes {
            assert_eq!(
                verify(SECRET, Some(&header), 1_000, &changed),
                Err(TrustError::BadSignature),
                "{changed:?}"
            );
        }
        assert_eq!(
            verify(b"another-secret", Some(&header), 1_000, &request()),
            Err(TrustError::BadSignature)
        );
        // The signer is signed too: a gateway assertion cannot be relabelled as a service's.
        let relabelled = header.replace("v1.gateway.", "v1.notifications.");
        assert_eq!(
            verify(SECRET, Some(&relabelled), 1_000, &request()),
            Err(TrustError::BadSignature)
        );
    }

    #[test]
    fn stale_missing_and_malformed_assertions_are_refused() {
        let header = sign(SECRET, Service::Gateway, 1_000, &request());
        assert_eq!(
            verify(SECRET, Some(&header), 1_061, &request()),
            Err(TrustError::Stale)
        );
        assert_eq!(
            verify(SECRET, Some(&header), 939, &request()),
            Err(TrustError::Stale)
        );
        for extreme in [i64::MIN, i64::MAX] {
            let header = sign(SECRET, Service::Gateway, extreme, &request());
            assert_eq!(
                verify(SECRET, Some(&header), 1_000, &request()),
                Err(TrustError::Stale),
                "at={extreme}"
            );
        }
        assert_eq!(
            verify(SECRET, None, 1_000, &request()),
            Err(TrustError::Missing)
        );
        for bad in [
            "",
            "v1",
            "v2.gateway.1000.00",
            "v1.nobody.1000.00",
            "v1.gateway.soon.00",
            "v1.gateway.1000.zz",
            "v1.gateway.1000.00.extra",
        ] {
            assert_eq!(
                verify(SECRET, Some(bad), 1_000, &request()),
                Err(TrustError::Malformed),
                "{bad}"
            );
        }
    }
}
