//! Outgoing mail (address verification and password reset only). SMTP when `smtp.url` is
//! set; otherwise each message is written as an `.eml` file under the data directory.

use lettre::message::{Mailbox, Message, header::ContentType};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::path::PathBuf;

/// Why a mail could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// An address or the message is malformed.
    #[error("invalid mail: {0}")]
    Invalid(String),
    /// The SMTP server refused or did not answer.
    #[error("smtp: {0}")]
    Smtp(String),
    /// The mail file could not be written.
    #[error("mail file: {0}")]
    File(#[from] std::io::Error),
}

/// A plain-text mail.
#[derive(Clone, Debug)]
pub struct Mail {
    /// Recipient address.
    pub to: String,
    /// Subject line.
    pub subject: String,
    /// Plain-text body.
    pub body: String,
}

/// Sends mail through SMTP or into files.
#[derive(Clone)]
pub struct Mailer {
    from: Mailbox,
    transport: Transport,
}

#[derive(Clone)]
enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    Files(PathBuf),
}

impl Mailer {
    /// From `smtp://[user:password@]host[:port]` (plain SMTP to a relay, which handles TLS
    /// onwards); `None` writes files into `dir`.
    pub fn new(url: Option<&str>, from: &str, dir: PathBuf) -> Result<Mailer, MailError> {
        let from: Mailbox = from
            .parse()
            .map_err(|e| MailError::Invalid(format!("sender {from}: {e}")))?;
        let transport = match url {
            Some(url) => Transport::Smtp(smtp_transport(url)?),
            None => Transport::Files(dir),
        };
        Ok(Mailer { from, transport })
    }

    /// Sends one mail.
    pub async fn send(&self, mail: &Mail) -> Result<(), MailError> {
        let to: Mailbox = mail
            .to
            .parse()
            .map_err(|e| MailError::Invalid(format!("recipient: {e}")))?;
        let message = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(mail.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(mail.body.clone())
            .map_err(|e| MailError::Invalid(e.to_string()))?;
        match &self.transport {
            Transport::Smtp(smtp) => {
                smtp.send(message)
                    .await
                    .map_err(|e| MailError::Smtp(e.to_string()))?;
            }
            Transport::Files(dir) => {
                tokio::fs::create_dir_all(dir).await?;
                let path = dir.join(format!("{}.eml", uuid::Uuid::now_v7()));
                tokio::fs::write(path, message.formatted()).await?;
            }
        }
        Ok(())
    }
}

fn smtp_transport(url: &str) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
    let invalid = || {
        MailError::Invalid(format!(
            "SMTP url must be smtp://[user:password@]host[:port], got {}",
            domain_mask(url)
        ))
    };
    let rest = url
        .strip_prefix("smtp://")
        .ok_or_else(invalid)?
        .trim_end_matches('/');
    let (credentials, address) = match rest.rsplit_once('@') {
        Some((creds, address)) => (Some(creds), address),
        None => (None, rest),
    };
    let (host, port) = match address.rsplit_once(':') {
        Some((host, port)) => (host, port.parse::<u16>().map_err(|_| invalid())?),
        None => (address, 25),
    };
    if host.is_empty() {
        return Err(invalid());
    }
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host).port(port);
    if let Some(creds) = credentials {
        let (user, password) = creds.split_once(':').unwrap_or((creds, ""));
        builder = builder.credentials(lettre::transport::smtp::authentication::Credentials::new(
            user.to_string(),
            password.to_string(),
        ));
    }
    Ok(builder.build())
}

fn domain_mask(url: &str) -> String {
    domain::config::mask_url_password(url)
}
