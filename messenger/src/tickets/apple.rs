//! "Add to Apple Wallet": a `.pkpass`, the zip of `pass.json`, its icons, `manifest.json`
//! (the SHA-1 of every other file) and `signature`, a detached PKCS#7 SignedData over the
//! manifest made with the pass type certificate's key, carrying that certificate and Apple's
//! WWDR intermediate. The DER is written by hand (`super::der`): the structure is small and
//! fixed, and a CMS crate would bring a second crypto stack beside ring.

use super::der::{self, SET, context, sequence, set_of, tlv};
use super::{PassTicket, WalletError, lang_code, pem, rsa_key};
use chrono::{DateTime, SecondsFormat, Utc};
use domain::i18n::Lang;
use ring::digest::{SHA1_FOR_LEGACY_USE_ONLY, SHA256, digest};
use ring::rand::SystemRandom;
use ring::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{Cursor, Write};

/// The content type of a pass.
pub const CONTENT_TYPE: &str = "application/vnd.apple.pkpass";

const DATA: &[u64] = &[1, 2, 840, 113_549, 1, 7, 1];
const SIGNED_DATA: &[u64] = &[1, 2, 840, 113_549, 1, 7, 2];
const CONTENT_TYPE_ATTR: &[u64] = &[1, 2, 840, 113_549, 1, 9, 3];
const MESSAGE_DIGEST_ATTR: &[u64] = &[1, 2, 840, 113_549, 1, 9, 4];
const SIGNING_TIME_ATTR: &[u64] = &[1, 2, 840, 113_549, 1, 9, 5];
const SHA256_ALG: &[u64] = &[2, 16, 840, 1, 101, 3, 4, 2, 1];
const RSA_ENCRYPTION: &[u64] = &[1, 2, 840, 113_549, 1, 1, 1];

/// A pass type's signing setup.
pub struct AppleWallet {
    pass_type_id: String,
    team_id: String,
    organization: String,
    certificate: Vec<u8>,
    wwdr: Vec<u8>,
    key: RsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for AppleWallet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppleWallet")
            .field("pass_type_id", &self.pass_type_id)
            .field("team_id", &self.team_id)
            .finish_non_exhaustive()
    }
}

fn certificate_der(text: &str, setting: &'static str) -> Result<Vec<u8>, WalletError> {
    let (_, der) =
        pem::first(text, &["CERTIFICATE"]).map_err(|why| WalletError::Certificate(setting, why))?;
    der::certificate(&der).map_err(|why| WalletError::Certificate(setting, why))?;
    Ok(der)
}

/// The sheet's labels on the pass.
struct Labels {
    date: &'static str,
    event: &'static str,
    holder: &'static str,
    ticket_type: &'static str,
    place: &'static str,
    code: &'static str,
    description: &'static str,
}

fn labels(lang: Lang) -> Labels {
    match lang {
        Lang::Ru => Labels {
            date: "Дата",
            event: "Событие",
            holder: "Участник",
            ticket_type: "Тип билета",
            place: "Место",
            code: "Код подтверждения",
            description: "Билет",
        },
        Lang::En => Labels {
            date: "Date",
            event: "Event",
            holder: "Participant",
            ticket_type: "Ticket type",
            place: "Place",
            code: "Confirmation code",
            description: "Ticket",
        },
    }
}

/// A square icon of `side` pixels: a white ticket with notched sides on bilet's blue.
fn icon(side: u32) -> Result<Vec<u8>, WalletError> {
    let s = side as f32;
    let image = image::RgbImage::from_fn(side, side, |x, y| {
        let (fx, fy) = (x as f32 + 0.5, y as f32 + 0.5);
        let inside = fx > s * 0.14 && fx < s * 0.86 && fy > s * 0.28 && fy < s * 0.72;
        let notch = |cx: f32| (fx - cx).powi(2) + (fy - s * 0.5).powi(2) < (s * 0.09).powi(2);
        if inside && !notch(s * 0.14) && !notch(s * 0.86) {
            image::Rgb([255, 255, 255])
        } else {
            image::Rgb([31, 58, 95])
        }
    });
    let mut png = Vec::new();
    image
        .write_to(&mut Cursor::new(&mut png), image::ImageFormat::Png)
        .map_err(|e| WalletError::Archive(e.to_string()))?;
    Ok(png)
}

impl AppleWallet {
    /// The pass type `pass_type_id` of team `team_id`, signed with the certificate, its
    /// key and Apple's WWDR certificate (PEM each); the certificate must be the key's.
    pub fn new(
        pass_type_id: &str,
        team_id: &str,
        organization: &str,
        certificate_pem: &str,
        wwdr_pem: &str,
        private_key_pem: &str,
    ) -> Result<AppleWallet, WalletError> {
        let certificate = certificate_der(certificate_pem, "wallet.apple_certificate")?;
        let wwdr = certificate_der(wwdr_pem, "wallet.apple_wwdr_certificate")?;
        let key = rsa_key(private_key_pem, "wallet.apple_private_key")?;
        let parts = der::certificate(&certificate)
            .map_err(|why| WalletError::Certificate("wallet.apple_certificate", why))?;
        if parts.public_key != key.public().as_ref() {
            return Err(WalletError::Certificate(
                "wallet.apple_certificate",
                "is not the certificate of wallet.apple_private_key".into(),
            ));
        }
        Ok(AppleWallet {
            pass_type_id: pass_type_id.trim().to_string(),
            team_id: team_id.trim().to_string(),
            organization: organization.to_string(),
            certificate,
            wwdr,
            key,
            rng: SystemRandom::new(),
        })
    }

    /// The pass's `pass.json`.
    pub fn pass_json(&self, ticket: &PassTicket, lang: Lang) -> Value {
        let words = labels(lang);
        let field = |key: &str, label: &str, value: &str| json!({"key": key, "label": label, "value": value});
        let mut auxiliary = vec![field("type", words.ticket_type, &ticket.ticket_type)];
        if let Some(place) = &ticket.place {
            auxiliary.push(field("place", words.place, place));
        }
        json!({
            "formatVersion": 1,
            "passTypeIdentifier": self.pass_type_id,
            "teamIdentifier": self.team_id,
            "serialNumber": ticket.registration_id.to_string(),
            "organizationName": self.organization,
            "description": format!("{}: {}", words.description, ticket.event_title),
            "logoText": self.organization,
            "foregroundColor": "rgb(255, 255, 255)",
            "backgroundColor": "rgb(31, 58, 95)",
            "labelColor": "rgb(200, 214, 229)",
            "relevantDate": ticket.starts_at.to_rfc3339_opts(SecondsFormat::Secs, true),
            "eventTicket": {
                "headerFields": [field("date", words.date, &ticket.starts_text)],
                "primaryFields": [field("event", words.event, &ticket.event_title)],
                "secondaryFields": [
                    field("holder", words.holder, &ticket.holder),
                    field("code", words.code, &ticket.code),
                ],
                "auxiliaryFields": auxiliary,
                "backFields": [field("code-back", words.code, &ticket.code)],
            },
            "barcodes": [{
                "format": "PKBarcodeFormatQR",
                "message": ticket.barcode,
                "messageEncoding": "iso-8859-1",
                "altText": ticket.code,
            }],
            "locale": lang_code(lang),
        })
    }

    /// The detached PKCS#7 SignedData over `manifest`, signed at `now`.
    pub fn signature(&self, manifest: &[u8], now: DateTime<Utc>) -> Result<Vec<u8>, WalletError> {
        let signer = der::certificate(&self.certificate)
            .map_err(|why| WalletError::Certificate("wallet.apple_certificate", why))?;
        let attribute =
            |kind: &[u64], value: Vec<u8>| sequence(&[&der::oid(kind), &set_of(SET, &[&value])]);
        let attributes = [
            attribute(CONTENT_TYPE_ATTR, der::oid(DATA)),
            attribute(SIGNING_TIME_ATTR, der::utc_time(now)),
            attribute(
                MESSAGE_DIGEST_ATTR,
                tlv(der::OCTET_STRING, digest(&SHA256, manifest).as_ref()),
            ),
        ];
        let attributes: Vec<&[u8]> = attributes.iter().map(Vec::as_slice).collect();
        // What is signed is the attributes as a SET; the SignerInfo keeps them as [0].
        let signed = set_of(SET, &attributes);
        let mut signature = vec![0; self.key.public().modulus_len()];
        self.key
            .sign(&RSA_PKCS1_SHA256, &self.rng, &signed, &mut signature)
            .map_err(|_| WalletError::Sign)?;
        let signer_info = sequence(&[
            &der::uint(1),
            &sequence(&[signer.issuer, signer.serial]),
            &der::algorithm(SHA256_ALG),
            &set_of(context(0), &attributes),
            &der::algorithm(RSA_ENCRYPTION),
            &tlv(der::OCTET_STRING, &signature),
        ]);
        let signed_data = sequence(&[
            &der::uint(1),
            &set_of(SET, &[&der::algorithm(SHA256_ALG)]),
            &sequence(&[&der::oid(DATA)]),
            &set_of(context(0), &[&self.certificate, &self.wwdr]),
            &set_of(SET, &[&signer_info]),
        ]);
        Ok(sequence(&[
            &der::oid(SIGNED_DATA),
            &tlv(context(0), &signed_data),
        ]))
    }

    /// The `.pkpass` of a ticket.
    pub fn pkpass(
        &self,
        ticket: &PassTicket,
        lang: Lang,
        now: DateTime<Utc>,
    ) -> Result<Vec<u8>, WalletError> {
        let pass = serde_json::to_vec_pretty(&self.pass_json(ticket, lang))
            .map_err(|e| WalletError::Archive(e.to_string()))?;
        let files: Vec<(&str, Vec<u8>)> = vec![
            ("pass.json", pass),
            ("icon.png", icon(29)?),
            ("icon@2x.png", icon(58)?),
        ];
        let manifest: BTreeMap<&str, String> = files
            .iter()
            .map(|(name, bytes)| {
                let sha1 = digest(&SHA1_FOR_LEGACY_USE_ONLY, bytes);
                let hex: String = sha1.as_ref().iter().map(|b| format!("{b:02x}")).collect();
                (*name, hex)
            })
            .collect();
        let manifest = serde_json::to_vec_pretty(&manifest)
            .map_err(|e| WalletError::Archive(e.to_string()))?;
        let signature = self.signature(&manifest, now)?;

        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        let archive = |e: &dyn std::fmt::Display| WalletError::Archive(e.to_string());
        for (name, bytes) in files.iter().map(|(n, b)| (*n, b.as_slice())).chain([
            ("manifest.json", manifest.as_slice()),
            ("signature", signature.as_slice()),
        ]) {
            zip.start_file(name, options).map_err(|e| archive(&e))?;
            zip.write_all(bytes).map_err(|e| archive(&e))?;
        }
        Ok(zip.finish().map_err(|e| archive(&e))?.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tickets::tests::{TEST_CERT, TEST_KEY_PKCS8, ticket};
    use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};
    use std::io::Read;

    fn wallet() -> AppleWallet {
        AppleWallet::new(
            "pass.test.bilet",
            "TEAM123456",
            "bilet",
            TEST_CERT,
            TEST_CERT,
            TEST_KEY_PKCS8,
        )
        .unwrap()
    }

    #[test]
    fn the_pass_says_the_ticket_and_carries_its_code() {
        let t = ticket();
        let pass = wallet().pass_json(&t, Lang::Ru);
        assert_eq!(pass["formatVersion"], 1);
        assert_eq!(pass["passTypeIdentifier"], "pass.test.bilet");
        assert_eq!(pass["teamIdentifier"], "TEAM123456");
        assert_eq!(pass["serialNumber"], t.registration_id.to_string());
        assert_eq!(pass["relevantDate"], "2026-12-01T16:00:00Z");
        assert_eq!(
            pass["barcodes"],
            json!([{"format": "PKBarcodeFormatQR", "message": "K7M2X9QA", "messageEncoding": "iso-8859-1", "altText": "K7M2X9QA"}])
        );
        assert_eq!(
            pass["eventTicket"]["primaryFields"][0]["value"],
            t.event_title
        );
        assert_eq!(
            pass["eventTicket"]["secondaryFields"][0]["value"],
            "Анна Ли"
        );
    }

    #[test]
    fn the_archive_holds_every_file_its_manifest_hashes_and_a_signature() {
        let bytes = wallet().pkpass(&ticket(), Lang::En, Utc::now()).unwrap();
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let mut read = |name: &str| {
            let mut out = Vec::new();
            archive
                .by_name(name)
                .unwrap()
                .read_to_end(&mut out)
                .unwrap();
            out
        };
        let manifest: BTreeMap<String, String> =
            serde_json::from_slice(&read("manifest.json")).unwrap();
        assert_eq!(manifest.len(), 3);
        for (name, hash) in &manifest {
            let sha1 = digest(&SHA1_FOR_LEGACY_USE_ONLY, &read(name));
            let hex: String = sha1.as_ref().iter().map(|b| format!("{b:02x}")).collect();
            assert_eq!(&hex, hash, "{name}");
        }
        assert!(!read("signature").is_empty());
        let icon = image::load_from_memory(&read("icon.png")).unwrap();
        assert_eq!((icon.width(), icon.height()), (29, 29));
    }

    #[test]
    fn the_signature_is_pkcs7_signed_data_whose_attributes_verify() {
        let wallet = wallet();
        let manifest = br#"{"pass.json":"00"}"#;
        let signature = wallet.signature(manifest, Utc::now()).unwrap();
        let (content_info, rest) = der::read(&signature).unwrap();
        assert!(rest.is_empty());
        let outer = der::children(content_info.content).unwrap();
        assert_eq!(outer[0].raw, &der::oid(SIGNED_DATA)[..]);
        let signed_data = der::children(der::read(outer[1].content).unwrap().0.content).unwrap();
        assert_eq!(signed_data[0].raw, &der::uint(1)[..]);
        assert_eq!(signed_data[3].tag, context(0), "the certificates");
        let signer_info =
            der::children(der::children(signed_data[4].content).unwrap()[0].content).unwrap();
        let attributes = signer_info[3];
        assert_eq!(attributes.tag, context(0));
        // The signature covers the attributes re-tagged as a SET, and they hold the
        // manifest's digest.
        let mut as_set = attributes.raw.to_vec();
        as_set[0] = SET;
        let digest_attr = tlv(der::OCTET_STRING, digest(&SHA256, manifest).as_ref());
        assert!(
            as_set
                .windows(digest_attr.len())
                .any(|w| w == digest_attr.as_slice())
        );
        let public =
            UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, wallet.key.public().as_ref());
        public.verify(&as_set, signer_info[5].content).unwrap();
    }

    #[test]
    fn a_certificate_of_another_key_is_refused() {
        let other = "-----BEGIN CERTIFICATE-----\nMAA=\n-----END CERTIFICATE-----\n";
        assert!(matches!(
            AppleWallet::new("p", "t", "o", other, TEST_CERT, TEST_KEY_PKCS8),
            Err(WalletError::Certificate("wallet.apple_certificate", _))
        ));
    }
}
