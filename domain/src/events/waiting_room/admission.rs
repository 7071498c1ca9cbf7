//! Admissions: what a visitor let in by the waiting room shows when they register. An
//! admission names the event, the account and its expiry, signed with the installation's
//! key, so every gateway and events node checks it alone, without reading the queue.
//!
//! Its text is `<event>.<account>.<expiry, unix seconds>.<HMAC-SHA256, hex>`.

use crate::events::refusals::EventRefusal;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

/// The header a registration carries its admission in.
pub const HEADER: &str = "x-admission";

/// Why an admission is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdmissionRefusal {
    /// None was shown while the room is on.
    Missing,
    /// Not made with the installation's key, or changed since.
    Forged,
    /// Past its expiry.
    Expired,
    /// Given to another account.
    OtherAccount,
    /// Given for another event.
    OtherEvent,
}

impl AdmissionRefusal {
    /// The label it is counted under.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Missing => "missing",
            Self::Forged => "forged",
            Self::Expired => "expired",
            Self::OtherAccount => "other_account",
            Self::OtherEvent => "other_event",
        }
    }

    /// What the caller is told.
    pub fn refusal(self) -> EventRefusal {
        match self {
            Self::Missing => EventRefusal::AdmissionRequired,
            Self::Forged => EventRefusal::AdmissionForged,
            Self::Expired => EventRefusal::AdmissionExpired,
            Self::OtherAccount => EventRefusal::AdmissionOfAnotherAccount,
            Self::OtherEvent => EventRefusal::AdmissionOfAnotherEvent,
        }
    }
}

/// The key admissions are signed with, derived from the installation's secret so that there
/// is one secret to keep and an admission is of no use as anything else.
pub fn key(secret: &[u8]) -> Vec<u8> {
    mac(secret).map_or_else(Vec::new, |mut m| {
        m.update(b"bilet waiting-room admissions");
        m.finalize().into_bytes().to_vec()
    })
}

fn mac(key: &[u8]) -> Option<Hmac<Sha256>> {
    Hmac::<Sha256>::new_from_slice(key).ok()
}

fn signed(key: &[u8], event: Uuid, account: Uuid, expires: i64) -> Option<Hmac<Sha256>> {
    let mut m = mac(key)?;
    m.update(format!("{}\n{}\n{}", event.simple(), account.simple(), expires).as_bytes());
    Some(m)
}

/// An admission to `event` for `account` until `expires`.
pub fn sign(key: &[u8], event: Uuid, account: Uuid, expires: DateTime<Utc>) -> String {
    let at = expires.timestamp();
    let signature = signed(key, event, account, at)
        .map(|m| hex::encode(m.finalize().into_bytes()))
        .unwrap_or_default();
    format!(
        "{}.{}.{}.{}",
        event.simple(),
        account.simple(),
        at,
        signature
    )
}

/// Checks an admission shown by `account` to register for `event` at `now`. A forgery is
/// told apart before anything it claims is believed.
pub fn verify(
    key: &[u8],
    admission: &str,
    event: Uuid,
    account: Uuid,
    now: DateTime<Utc>,
) -> Result<(), AdmissionRefusal> {
    let mut parts = admission.trim().split('.');
    let (Some(e), Some(a), Some(x), Some(s), None) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return Err(AdmissionRefusal::Forged);
    };
    let (Ok(named_event), Ok(named_account), Ok(expires), Ok(signature)) = (
        Uuid::try_parse(e),
        Uuid::try_parse(a),
        x.parse::<i64>(),
        hex::decode(s),
    ) else {
        return Err(AdmissionRefusal::Forged);
    };
    let m = signed(key, named_event, named_account, expires).ok_or(AdmissionRefusal::Forged)?;
    // Constant-time comparison.
    m.verify_slice(&signature)
        .map_err(|_| AdmissionRefusal::Forged)?;
    if named_event != event {
        return Err(AdmissionRefusal::OtherEvent);
    }
    if named_account != account {
        return Err(AdmissionRefusal::OtherAccount);
    }
    if now.timestamp() >= expires {
        return Err(AdmissionRefusal::Expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn an_admission_works_for_its_event_and_account_until_it_expires() {
        let key = key(b"installation secret");
        let (event, account, now) = (Uuid::now_v7(), Uuid::now_v7(), Utc::now());
        let admission = sign(&key, event, account, now + Duration::minutes(10));
        assert_eq!(verify(&key, &admission, event, account, now), Ok(()));
        assert_eq!(
            verify(
                &key,
                &admission,
                event,
                account,
                now + Duration::minutes(10)
            ),
            Err(AdmissionRefusal::Expired)
        );
        assert_eq!(
            verify(&key, &admission, Uuid::now_v7(), account, now),
            Err(AdmissionRefusal::OtherEvent)
        );
        assert_eq!(
            verify(&key, &admission, event, Uuid::now_v7(), now),
            Err(AdmissionRefusal::OtherAccount)
        );
    }

    #[test]
    fn anything_changed_or_made_up_is_a_forgery() {
        let key = key(b"installation secret");
        let (event, account, now) = (Uuid::now_v7(), Uuid::now_v7(), Utc::now());
        let admission = sign(&key, event, account, now + Duration::minutes(10));
        let parts: Vec<&str> = admission.split('.').collect();
        // A later expiry, another account, a signature of another key, garbage.
        let later = format!(
            "{}.{}.{}.{}",
            parts[0],
            parts[1],
            parts[2].parse::<i64>().unwrap() + 3600,
            parts[3]
        );
        let other = Uuid::now_v7();
        let moved = format!("{}.{}.{}.{}", parts[0], other.simple(), parts[2], parts[3]);
        let foreign = sign(
            &super::key(b"another installation"),
            event,
            account,
            now + Duration::minutes(10),
        );
        for forged in [
            later.as_str(),
            moved.as_str(),
            foreign.as_str(),
            "",
            "a.b.c.d",
            "x",
            &format!("{admission}.x"),
        ] {
            assert_eq!(
                verify(&key, forged, event, account, now),
                Err(AdmissionRefusal::Forged),
                "{forged}"
            );
        }
        assert_eq!(
            verify(&key, &moved, event, other, now),
            Err(AdmissionRefusal::Forged),
            "taken over by the account it names"
        );
    }
}
