//! "Add to Google Wallet": a link `https://pay.google.com/gp/v/save/<jwt>` whose JWT, signed
//! RS256 by the issuer's service account, carries the event's ticket class and the ticket
//! itself. Google creates both when the link is opened, so bilet calls no Google API and
//! needs no network: the link is the whole pass.

use super::{PassTicket, WalletError, lang_code, rsa_key};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, SecondsFormat, Utc};
use domain::i18n::Lang;
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::{Value, json};

/// Where a save link points.
pub const SAVE_URL: &str = "https://pay.google.com/gp/v/save/";

/// An issuer's signing setup.
pub struct GoogleWallet {
    issuer_id: String,
    service_account: String,
    issuer_name: String,
    origins: Vec<String>,
    key: RsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for GoogleWallet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoogleWallet")
            .field("issuer_id", &self.issuer_id)
            .field("service_account", &self.service_account)
            .finish_non_exhaustive()
    }
}

/// A text in the one language the pass is written in.
fn localized(text: &str, lang: Lang) -> Value {
    json!({"defaultValue": {"language": lang_code(lang), "value": text}})
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

impl GoogleWallet {
    /// The issuer `issuer_id`, signing as `service_account` with `private_key_pem` (PKCS#8 or
    /// PKCS#1); `origin` is the site that shows the button (the public URL).
    pub fn new(
        issuer_id: &str,
        service_account: &str,
        private_key_pem: &str,
        issuer_name: &str,
        origin: &str,
    ) -> Result<GoogleWallet, WalletError> {
        let issuer_id = issuer_id.trim();
        if issuer_id.is_empty()
            || !issuer_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return Err(WalletError::Setting(
                "wallet.google_issuer_id must be the issuer's id (digits)".into(),
            ));
        }
        Ok(GoogleWallet {
            issuer_id: issuer_id.to_string(),
            service_account: service_account.trim().to_string(),
            issuer_name: issuer_name.to_string(),
            origins: vec![origin.trim_end_matches('/').to_string()],
            key: rsa_key(private_key_pem, "wallet.google_private_key")?,
            rng: SystemRandom::new(),
        })
    }

    /// The class of an event's tickets: `<issuer>.<event id>`.
    pub fn class_id(&self, ticket: &PassTicket) -> String {
        format!("{}.{}", self.issuer_id, ticket.event_id)
    }

    /// The ticket's object: `<issuer>.<registration id>`.
    pub fn object_id(&self, ticket: &PassTicket) -> String {
        format!("{}.{}", self.issuer_id, ticket.registration_id)
    }

    /// The claims of the save link's JWT.
    pub fn claims(&self, ticket: &PassTicket, lang: Lang, now: DateTime<Utc>) -> Value {
        let class_id = self.class_id(ticket);
        let mut date_time = json!({"start": rfc3339(ticket.starts_at)});
        if let Some(end) = ticket.ends_at {
            date_time["end"] = json!(rfc3339(end));
        }
        let mut class = json!({
            "id": class_id,
            "issuerName": self.issuer_name,
            "reviewStatus": "UNDER_REVIEW",
            "eventName": localized(&ticket.event_title, lang),
            "dateTime": date_time,
        });
        if let Some(place) = &ticket.place {
            class["venue"] = json!({
                "name": localized(place, lang),
                "address": localized(place, lang),
            });
        }
        let object = json!({
            "id": self.object_id(ticket),
            "classId": class_id,
            "state": "ACTIVE",
            "barcode": {
                "type": "QR_CODE",
                "value": ticket.barcode,
                "alternateText": ticket.code,
            },
            "ticketHolderName": ticket.holder,
            "ticketType": localized(&ticket.ticket_type, lang),
            "reservationInfo": {"confirmationCode": ticket.code},
        });
        json!({
            "iss": self.service_account,
            "aud": "google",
            "typ": "savetowallet",
            "iat": now.timestamp(),
            "origins": self.origins,
            "payload": {
                "eventTicketClasses": [class],
                "eventTicketObjects": [object],
            },
        })
    }

    /// The save link of a ticket.
    pub fn save_url(
        &self,
        ticket: &PassTicket,
        lang: Lang,
        now: DateTime<Utc>,
    ) -> Result<String, WalletError> {
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
        let claims = URL_SAFE_NO_PAD.encode(self.claims(ticket, lang, now).to_string());
        let signed = format!("{header}.{claims}");
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(
                &RSA_PKCS1_SHA256,
                &self.rng,
                signed.as_bytes(),
                &mut signature,
            )
            .map_err(|_| WalletError::Sign)?;
        Ok(format!(
            "{SAVE_URL}{signed}.{}",
            URL_SAFE_NO_PAD.encode(signature)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tickets::tests::{TEST_KEY_PKCS8, ticket};
    use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

    fn wallet() -> GoogleWallet {
        GoogleWallet::new(
            "3388000000012345678",
            "passes@bilet-test.iam.gserviceaccount.com",
            TEST_KEY_PKCS8,
            "bilet",
            "https://tickets.example.org/",
        )
        .unwrap()
    }

    #[test]
    fn the_link_is_a_jwt_signed_with_the_service_accounts_key() {
        let wallet = wallet();
        let now = Utc::now();
        let url = wallet.save_url(&ticket(), Lang::Ru, now).unwrap();
        let jwt = url.strip_prefix(SAVE_URL).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "RS256");
        let claims: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims, wallet.claims(&ticket(), Lang::Ru, now));
        let public =
            UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, wallet.key.public().as_ref());
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
    }

    #[test]
    fn the_claims_carry_the_class_and_the_ticket() {
        let t = ticket();
        let claims = wallet().claims(&t, Lang::En, Utc::now());
        assert_eq!(claims["iss"], "passes@bilet-test.iam.gserviceaccount.com");
        assert_eq!(claims["aud"], "google");
        assert_eq!(claims["typ"], "savetowallet");
        assert_eq!(claims["origins"], json!(["https://tickets.example.org"]));
        let class = &claims["payload"]["eventTicketClasses"][0];
        assert_eq!(class["id"], format!("3388000000012345678.{}", t.event_id));
        assert_eq!(class["eventName"]["defaultValue"]["value"], t.event_title);
        assert_eq!(class["eventName"]["defaultValue"]["language"], "en");
        assert_eq!(class["dateTime"]["start"], "2026-12-01T16:00:00Z");
        assert_eq!(
            class["venue"]["address"]["defaultValue"]["value"],
            "Москва, Тверская, 1"
        );
        let object = &claims["payload"]["eventTicketObjects"][0];
        assert_eq!(
            object["id"],
            format!("3388000000012345678.{}", t.registration_id)
        );
        assert_eq!(object["classId"], class["id"]);
        assert_eq!(object["state"], "ACTIVE");
        assert_eq!(
            object["barcode"],
            json!({"type": "QR_CODE", "value": "K7M2X9QA", "alternateText": "K7M2X9QA"})
        );
        assert_eq!(object["ticketHolderName"], "Анна Ли");
        assert_eq!(object["ticketType"]["defaultValue"]["value"], "Партер");
    }

    #[test]
    fn a_bad_issuer_or_key_is_refused() {
        let bad = GoogleWallet::new("", "a@b", TEST_KEY_PKCS8, "bilet", "https://x");
        assert!(matches!(bad, Err(WalletError::Setting(_))));
        let bad = GoogleWallet::new(
            "1",
            "a@b",
            "-----BEGIN PRIVATE KEY-----\nAAEC\n-----END PRIVATE KEY-----",
            "bilet",
            "https://x",
        );
        assert!(matches!(bad, Err(WalletError::Key(..))));
    }
}
