//! The `mail.requested` event: what the identity service asks its mail consumer to send.
//! Sign-up, resend-verification and forgot-password write it in the transaction that creates
//! the mail token, so a mail is requested if and only if its token exists; the consumer
//! renders it with `mails` and sends it.

use super::{limits, mails};
use crate::i18n::Lang;
use chrono::Duration;
use serde::{Deserialize, Serialize};

/// The event type (and routing key).
pub const EVENT_TYPE: &str = "mail.requested";

/// What a mail token is for, and so which mail carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TokenKind {
    /// Confirms the email address.
    EmailVerification,
    /// Allows one password reset.
    PasswordReset,
}

impl TokenKind {
    /// Database spelling (the spec's `type` column), also used in the event.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EmailVerification => "EMAIL_VERIFICATION",
            Self::PasswordReset => "PASSWORD_RESET",
        }
    }

    /// How long a token of this kind is valid.
    pub fn ttl(self) -> Duration {
        match self {
            Self::EmailVerification => limits::email_verification_ttl(),
            Self::PasswordReset => limits::password_reset_ttl(),
        }
    }
}

/// The payload of `mail.requested`: everything needed to render and address the mail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MailRequest {
    /// Which mail.
    pub kind: TokenKind,
    /// Recipient address.
    pub to: String,
    /// The language of the request that asked for the mail.
    pub lang: Lang,
    /// The token for the link. The database keeps only its hash, so the event is the one
    /// place it travels; the consumer removes it from the outbox row once the mail is sent.
    pub token: String,
    /// The recipient's first name, for templates that greet by name.
    #[serde(default)]
    pub first_name: String,
}

impl MailRequest {
    /// The event's `data`, in the spelling `Deserialize` reads back.
    pub fn to_event_data(&self) -> serde_json::Value {
        serde_json::json!({
            "kind": self.kind,
            "to": self.to,
            "lang": self.lang,
            "token": self.token,
            "firstName": self.first_name,
        })
    }

    /// The link the mail carries, under the platform's public URL: both open pages of the web
    /// front (the verification page confirms the address as it opens and says so in words).
    pub fn link(&self, public_url: &str) -> String {
        let base = public_url.trim_end_matches('/');
        match self.kind {
            TokenKind::EmailVerification => format!("{base}/verify-email?token={}", self.token),
            TokenKind::PasswordReset => format!("{base}/reset-password?token={}", self.token),
        }
    }

    /// Subject and body of the mail.
    pub fn render(&self, public_url: &str) -> (String, String) {
        let link = self.link(public_url);
        match self.kind {
            TokenKind::EmailVerification => mails::verification(self.lang, &link),
            TokenKind::PasswordReset => mails::password_reset(self.lang, &link),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(kind: TokenKind) -> MailRequest {
        MailRequest {
            kind,
            to: "a@example.com".into(),
            lang: Lang::En,
            token: "t0k3n".into(),
            first_name: "Anna".into(),
        }
    }

    #[test]
    fn links_point_where_the_mails_say() {
        assert_eq!(
            request(TokenKind::EmailVerification).link("http://localhost:8080/"),
            "http://localhost:8080/verify-email?token=t0k3n"
        );
        assert_eq!(
            request(TokenKind::PasswordReset).link("https://bilet.example"),
            "https://bilet.example/reset-password?token=t0k3n"
        );
        let (subject, body) = request(TokenKind::PasswordReset).render("https://b.example");
        assert_eq!(subject, "Password reset");
        assert!(body.contains("https://b.example/reset-password?token=t0k3n"));
    }

    #[test]
    fn the_payload_round_trips_in_the_event_spelling() {
        let r = request(TokenKind::EmailVerification);
        let json = r.to_event_data();
        assert_eq!(json, serde_json::to_value(&r).unwrap());
        assert_eq!(json["kind"], "EMAIL_VERIFICATION");
        assert_eq!(json["lang"], "en");
        assert_eq!(json["firstName"], "Anna");
        assert_eq!(serde_json::from_value::<MailRequest>(json).unwrap(), r);
        assert_eq!(
            TokenKind::PasswordReset.as_str(),
            serde_json::to_value(TokenKind::PasswordReset).unwrap()
        );
    }
}
