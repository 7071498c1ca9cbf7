//! The messenger (Telegram Login Widget) sign-in check: the payload's fields, sorted and
//! joined as `key=value` lines, must carry an HMAC-SHA256 keyed with SHA-256 of the bot token,
//! and `auth_date` must be recent.

use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Why a payload was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WidgetError {
    /// `hash` or `auth_date` is missing or malformed.
    Malformed,
    /// The hash does not match: forged or altered.
    BadHash,
    /// Signed too long ago (or in the future).
    Stale,
}

/// Checks a widget payload given as field name → value (all fields, `hash` included).
pub fn verify_widget(
    fields: &BTreeMap<String, String>,
    bot_token: &str,
    now: DateTime<Utc>,
    max_age: Duration,
) -> Result<(), WidgetError> {
    let hash = fields.get("hash").ok_or(WidgetError::Malformed)?;
    let expected = hex::decode(hash).map_err(|_| WidgetError::Malformed)?;
    let auth_date: i64 = fields
        .get("auth_date")
        .and_then(|d| d.parse().ok())
        .ok_or(WidgetError::Malformed)?;
    let check_string = data_check_string(fields);
    let secret = Sha256::digest(bot_token.as_bytes());
    let mut mac = Hmac::<Sha256>::new_from_slice(&secret).map_err(|_| WidgetError::Malformed)?;
    mac.update(check_string.as_bytes());
    // verify_slice compares in constant time.
    mac.verify_slice(&expected)
        .map_err(|_| WidgetError::BadHash)?;
    let signed = DateTime::from_timestamp(auth_date, 0).ok_or(WidgetError::Malformed)?;
    let age = now - signed;
    if age > max_age || age < -Duration::minutes(1) {
        return Err(WidgetError::Stale);
    }
    Ok(())
}

/// The signed text: every field except `hash`, sorted by name, `key=value` joined by `\n`.
pub fn data_check_string(fields: &BTreeMap<String, String>) -> String {
    fields
        .iter()
        .filter(|(k, _)| k.as_str() != "hash")
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The bot's numeric id: the part of its token before the colon. Telegram's sign-in page
/// names the bot by it; it is public (any user of the bot sees it), unlike the rest.
pub fn bot_id(bot_token: &str) -> Option<u64> {
    let (id, secret) = bot_token.split_once(':')?;
    if secret.is_empty() {
        return None;
    }
    id.parse().ok().filter(|id| *id > 0)
}

/// Signs a payload the way Telegram does; used by tests and the fake Bot API.
pub fn sign_widget(fields: &BTreeMap<String, String>, bot_token: &str) -> String {
    let secret = Sha256::digest(bot_token.as_bytes());
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&secret) else {
        return String::new();
    };
    mac.update(data_check_string(fields).as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bot_id_is_the_tokens_number() {
        assert_eq!(bot_id("123456:AAE-secret"), Some(123456));
        assert_eq!(bot_id("123456"), None);
        assert_eq!(bot_id("123456:"), None);
        assert_eq!(bot_id("abc:secret"), None);
        assert_eq!(bot_id("0:secret"), None);
        assert_eq!(bot_id(":secret"), None);
    }

    fn payload(now: DateTime<Utc>) -> BTreeMap<String, String> {
        let mut f = BTreeMap::new();
        f.insert("id".into(), "42".into());
        f.insert("first_name".into(), "Анна".into());
        f.insert("auth_date".into(), now.timestamp().to_string());
        let hash = sign_widget(&f, "123:TOKEN");
        f.insert("hash".into(), hash);
        f
    }

    #[test]
    fn genuine_recent_payload_passes() {
        let now = Utc::now();
        assert_eq!(
            verify_widget(&payload(now), "123:TOKEN", now, Duration::minutes(10)),
            Ok(())
        );
    }

    #[test]
    fn altered_forged_and_stale_payloads_fail() {
        let now = Utc::now();
        let mut altered = payload(now);
        altered.insert("id".into(), "43".into());
        assert_eq!(
            verify_widget(&altered, "123:TOKEN", now, Duration::minutes(10)),
            Err(WidgetError::BadHash)
        );
        assert_eq!(
            verify_widget(&payload(now), "other", now, Duration::minutes(10)),
            Err(WidgetError::BadHash)
        );
        let later = now + Duration::minutes(11);
        assert_eq!(
            verify_widget(&payload(now), "123:TOKEN", later, Duration::minutes(10)),
            Err(WidgetError::Stale)
        );
        let mut no_hash = payload(now);
        no_hash.remove("hash");
        assert_eq!(
            verify_widget(&no_hash, "123:TOKEN", now, Duration::minutes(10)),
            Err(WidgetError::Malformed)
        );
    }
}
