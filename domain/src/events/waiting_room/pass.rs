//! Place passes: what a visitor shows to read where they stand without the node reading their
//! place. A pass names the event, the account, the place's turn and when it was taken, and
//! whether the turn is still the pre-queue's (redrawn when the sale opens), signed with a key
//! of its own, so only the installation makes one and a pass is of no use as an admission.
//!
//! Its text is `<event>.<account>.<turn>.<joined, unix µs>.<p|t>.<HMAC-SHA256, hex>` (`p`: a
//! pre-queue turn not drawn yet; `t`: a turn that stays).

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

/// The header a pass is shown in.
pub const HEADER: &str = "x-queue-place";

/// What a valid pass says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// The place's turn when the pass was made.
    pub ordinal: i64,
    /// When the place was taken.
    pub joined_at: DateTime<Utc>,
    /// The turn is the pre-queue's and was not drawn yet: it changes at the draw.
    pub undrawn: bool,
}

/// The key passes are signed with, derived from the installation's secret.
pub fn key(secret: &[u8]) -> Vec<u8> {
    Hmac::<Sha256>::new_from_slice(secret).map_or_else(
        |_| Vec::new(),
        |mut m| {
            m.update(b"bilet waiting-room places");
            m.finalize().into_bytes().to_vec()
        },
    )
}

fn body(event: Uuid, account: Uuid, pass: &Pass) -> String {
    format!(
        "{}.{}.{}.{}.{}",
        event.simple(),
        account.simple(),
        pass.ordinal,
        pass.joined_at.timestamp_micros(),
        if pass.undrawn { 'p' } else { 't' }
    )
}

fn signature(key: &[u8], body: &str) -> Option<Hmac<Sha256>> {
    let mut m = Hmac::<Sha256>::new_from_slice(key).ok()?;
    m.update(body.as_bytes());
    Some(m)
}

/// A pass to `account`'s place in `event`'s room.
pub fn sign(key: &[u8], event: Uuid, account: Uuid, pass: &Pass) -> String {
    let body = body(event, account, pass);
    let sig = signature(key, &body)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default();
    format!("{body}.{sig}")
}

/// What a pass shown by `account` for `event` says; `None` when it is not one the
/// installation made for them (the caller then reads the place itself).
pub fn read(key: &[u8], shown: &str, event: Uuid, account: Uuid) -> Option<Pass> {
    let (body, sig) = shown.trim().rsplit_once('.')?;
    let mut parts = body.split('.');
    let (e, a, o, j, u) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    if parts.next().is_some() {
        return None;
    }
    signature(key, body)?
        .verify_slice(&hex::decode(sig).ok()?)
        .ok()?;
    if Uuid::try_parse(e).ok()? != event || Uuid::try_parse(a).ok()? != account {
        return None;
    }
    Some(Pass {
        ordinal: o.parse().ok()?,
        joined_at: DateTime::from_timestamp_micros(j.parse().ok()?)?,
        undrawn: match u {
            "p" => true,
            "t" => false,
            _ => return None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_reads_back_for_its_place_only() {
        let key = key(b"installation secret");
        let (event, account) = (Uuid::now_v7(), Uuid::now_v7());
        let pass = Pass {
            ordinal: 41,
            joined_at: DateTime::from_timestamp_micros(1_800_000_000_123_456).unwrap(),
            undrawn: true,
        };
        let shown = sign(&key, event, account, &pass);
        assert_eq!(read(&key, &shown, event, account), Some(pass));
        assert_eq!(
            read(&key, &shown, Uuid::now_v7(), account),
            None,
            "another event"
        );
        assert_eq!(
            read(&key, &shown, event, Uuid::now_v7()),
            None,
            "another account"
        );
        let earlier = shown.replacen(".41.", ".1.", 1);
        assert_eq!(
            read(&key, &earlier, event, account),
            None,
            "a turn moved up"
        );
        let foreign = sign(&super::key(b"another"), event, account, &pass);
        assert_eq!(read(&key, &foreign, event, account), None);
        assert_eq!(read(&key, "", event, account), None);
        assert_eq!(read(&key, &format!("x.{shown}"), event, account), None);
    }

    #[test]
    fn a_pass_is_no_admission() {
        let secret = b"installation secret";
        assert_ne!(key(secret), super::super::admission::key(secret));
    }
}
