//! What a participant is handed for a confirmed ticket besides the web page: a one-page PDF
//! (`pdf`), and passes for the phone's wallet where the operator configured signing keys
//! (`google`: a signed "save to Google Wallet" link; `apple`: a signed `.pkpass`). Each takes
//! plain data and returns bytes or text: nothing here reads the database or the network, so
//! all of it is tested without either.

pub mod apple;
mod der;
pub mod google;
pub mod pdf;
mod pem;

use chrono::{DateTime, Utc};
use domain::i18n::Lang;

/// What one ticket shows, already in the reader's words: the event's time written on the
/// event's clock, the place as an address or a link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TicketSheet {
    /// The language of the sheet's own labels.
    pub lang: Lang,
    /// The event's title.
    pub event_title: String,
    /// When it starts, on the event's clock with its zone (`01.12.2026 19:00 MSK`).
    pub starts: String,
    /// Where: an address, a link, or nothing known.
    pub place: Option<String>,
    /// The ticket type's name.
    pub ticket_type: String,
    /// The participant's name as registered.
    pub holder: String,
    /// The confirmation code, as the door types it.
    pub code: String,
    /// What the QR code carries: the same value the web ticket's QR code does (the code).
    pub qr_value: String,
}

/// What a wallet pass says about its ticket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassTicket {
    /// The registration (the pass's serial number).
    pub registration_id: uuid::Uuid,
    /// The event (its class: one per event).
    pub event_id: uuid::Uuid,
    /// The event's title.
    pub event_title: String,
    /// When it starts.
    pub starts_at: DateTime<Utc>,
    /// When it ends, if said.
    pub ends_at: Option<DateTime<Utc>>,
    /// When it starts, written on the event's clock.
    pub starts_text: String,
    /// Where: an address, a link, or nothing known.
    pub place: Option<String>,
    /// The ticket type's name.
    pub ticket_type: String,
    /// The participant's name.
    pub holder: String,
    /// The confirmation code.
    pub code: String,
    /// What the pass's barcode carries (the code, as the web ticket's QR code).
    pub barcode: String,
}

/// Where an event is: its address, else its link.
fn place(event: &domain::contract::events::EventSummary) -> Option<String> {
    [&event.location_address, &event.location_url]
        .into_iter()
        .flatten()
        .map(|p| p.trim())
        .find(|p| !p.is_empty())
        .map(str::to_string)
}

/// When an event starts, on its clock, as messages write it.
fn starts_text(event: &domain::contract::events::EventSummary, lang: Lang) -> String {
    use domain::notifications::times::{Zone, date};
    let zone = Zone::or_utc(event.timezone.as_deref().unwrap_or("UTC"));
    date(event.starts_at, zone, lang)
}

fn holder(registration: &storage::events::registrations::Registration) -> String {
    format!(
        "{} {}",
        registration.first_name.trim(),
        registration.last_name.trim()
    )
    .trim()
    .to_string()
}

/// The sheet of a held ticket, in `lang`.
pub fn sheet(ticket: &storage::events::tickets::HeldTicket, lang: Lang) -> TicketSheet {
    let code = ticket.registration.confirmation_code.clone();
    TicketSheet {
        lang,
        event_title: ticket.event.title.clone(),
        starts: starts_text(&ticket.event, lang),
        place: place(&ticket.event),
        ticket_type: ticket.ticket_type.clone(),
        holder: holder(&ticket.registration),
        qr_value: code.clone(),
        code,
    }
}

/// What a wallet pass of a held ticket says, in `lang`.
pub fn pass(ticket: &storage::events::tickets::HeldTicket, lang: Lang) -> PassTicket {
    let code = ticket.registration.confirmation_code.clone();
    PassTicket {
        registration_id: ticket.registration.id,
        event_id: ticket.event.event_id,
        event_title: ticket.event.title.clone(),
        starts_at: ticket.event.starts_at,
        ends_at: ticket.event.ends_at,
        starts_text: starts_text(&ticket.event, lang),
        place: place(&ticket.event),
        ticket_type: ticket.ticket_type.clone(),
        holder: holder(&ticket.registration),
        barcode: code.clone(),
        code,
    }
}

/// Why a wallet pass could not be set up or made.
#[derive(Debug, thiserror::Error)]
pub enum WalletError {
    /// A setting is unusable.
    #[error("{0}")]
    Setting(String),
    /// A private key does not read as an RSA key.
    #[error("{0} is not a usable RSA private key in PEM: {1}")]
    Key(&'static str, String),
    /// A certificate does not read, or is not the key's.
    #[error("{0} {1}")]
    Certificate(&'static str, String),
    /// Signing failed (never with a key that loaded).
    #[error("signing the pass failed")]
    Sign,
    /// Writing the archive or its JSON failed.
    #[error("cannot write the pass: {0}")]
    Archive(String),
}

/// The RSA key of PEM `text` (PKCS#8 `PRIVATE KEY` or PKCS#1 `RSA PRIVATE KEY`), named
/// `setting` in errors.
fn rsa_key(text: &str, setting: &'static str) -> Result<ring::signature::RsaKeyPair, WalletError> {
    let (label, der) = pem::first(text, &["PRIVATE KEY", "RSA PRIVATE KEY"])
        .map_err(|why| WalletError::Key(setting, why))?;
    let key = if label == "PRIVATE KEY" {
        ring::signature::RsaKeyPair::from_pkcs8(&der)
    } else {
        ring::signature::RsaKeyPair::from_der(&der)
    };
    key.map_err(|e| WalletError::Key(setting, e.to_string()))
}

/// The BCP 47 tag of a language.
fn lang_code(lang: Lang) -> &'static str {
    match lang {
        Lang::Ru => "ru",
        Lang::En => "en",
    }
}

/// The wallet passes an installation issues: each kind only with its signing keys.
#[derive(Debug, Default)]
pub struct Wallets {
    /// Google Wallet save links.
    pub google: Option<google::GoogleWallet>,
    /// Apple Wallet passes.
    pub apple: Option<apple::AppleWallet>,
}

impl Wallets {
    /// The passes `config` gives keys for; `public_url` is the site the buttons are on. A
    /// kind with a setting missing is off; one whose key or certificate does not read is an
    /// error, since the operator meant it on.
    pub fn from_config(
        config: &domain::config::WalletConfig,
        public_url: &str,
    ) -> Result<Wallets, WalletError> {
        let issuer = match config.issuer_name.trim() {
            "" => "bilet",
            name => name,
        };
        let google = match (&config.google_private_key, config.google_named()) {
            (Some(key), true) => Some(google::GoogleWallet::new(
                &config.google_issuer_id,
                &config.google_service_account,
                key.expose(),
                issuer,
                public_url,
            )?),
            _ => None,
        };
        let apple = match (&config.apple_private_key, config.apple_named()) {
            (Some(key), true) => Some(apple::AppleWallet::new(
                &config.apple_pass_type_id,
                &config.apple_team_id,
                issuer,
                &config.apple_certificate,
                &config.apple_wwdr_certificate,
                key.expose(),
            )?),
            _ => None,
        };
        Ok(Wallets { google, apple })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A test-only RSA key and its self-signed certificate (testdata/README.md).
    pub(crate) const TEST_KEY_PKCS8: &str = include_str!("testdata/test-key.pem");
    pub(crate) const TEST_CERT: &str = include_str!("testdata/test-cert.pem");

    pub(crate) fn ticket() -> PassTicket {
        PassTicket {
            registration_id: uuid::Uuid::from_u128(0x0190_a000_0000_7000_8000_0000_0000_0002),
            event_id: uuid::Uuid::from_u128(0x0190_a000_0000_7000_8000_0000_0000_0001),
            event_title: "Вечер камерной музыки".into(),
            starts_at: "2026-12-01T16:00:00Z".parse().unwrap(),
            ends_at: None,
            starts_text: "01.12.2026 19:00 MSK".into(),
            place: Some("Москва, Тверская, 1".into()),
            ticket_type: "Партер".into(),
            holder: "Анна Ли".into(),
            code: "K7M2X9QA".into(),
            barcode: "K7M2X9QA".into(),
        }
    }

    #[test]
    fn passes_are_off_without_keys_and_on_with_them() {
        let mut config = domain::config::WalletConfig::default();
        let none = Wallets::from_config(&config, "https://x").unwrap();
        assert!(none.google.is_none() && none.apple.is_none());
        config.google_issuer_id = "3388000000012345678".into();
        config.google_service_account = "a@b.iam.gserviceaccount.com".into();
        assert!(
            Wallets::from_config(&config, "https://x")
                .unwrap()
                .google
                .is_none(),
            "no key"
        );
        config.google_private_key = domain::config::Secret::parse(TEST_KEY_PKCS8);
        config.apple_pass_type_id = "pass.test.bilet".into();
        config.apple_team_id = "TEAM123456".into();
        config.apple_certificate = TEST_CERT.into();
        config.apple_wwdr_certificate = TEST_CERT.into();
        config.apple_private_key = domain::config::Secret::parse(TEST_KEY_PKCS8);
        let both = Wallets::from_config(&config, "https://x").unwrap();
        assert!(both.google.is_some() && both.apple.is_some());
        config.google_private_key = domain::config::Secret::parse("not a key");
        assert!(matches!(
            Wallets::from_config(&config, "https://x"),
            Err(WalletError::Key("wallet.google_private_key", _))
        ));
    }
}
