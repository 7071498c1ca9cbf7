//! Outgoing mail (address verification and password reset only). SMTP when `smtp.url` is
//! set; otherwise each message is written as an `.eml` file under the data directory.
//! Mail is sent by the identity service's mail consumer (`identity::mail_consumer`), which
//! retries what failed for a reason that may pass (`MailError::is_temporary`).

use lettre::message::{Mailbox, Message, header::ContentType};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::path::PathBuf;
use std::time::Duration;

/// How long one SMTP exchange may take. The consumer holds its inbox claim (a database
/// transaction) while sending, so a relay that stops answering must not hold it for long.
const SMTP_TIMEOUT: Duration = Duration::from_secs(20);

/// Why a mail could not be sent.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    /// An address or the message is malformed.
    #[error("invalid mail: {0}")]
    Invalid(String),
    /// The SMTP server could not be reached, did not answer in time or asked to try later
    /// (4xx).
    #[error("smtp unavailable: {0}")]
    Unavailable(String),
    /// The SMTP server refused the mail for good (5xx).
    #[error("smtp refused: {0}")]
    Rejected(String),
    /// The mail file could not be written.
    #[error("mail file: {0}")]
    File(#[from] std::io::Error),
}

impl MailError {
    /// Whether sending the same mail again later may succeed: the server was down or busy, or
    /// the disk was. A malformed or refused mail fails the same way every time.
    pub fn is_temporary(&self) -> bool {
        matches!(self, MailError::Unavailable(_) | MailError::File(_))
    }
}

fn smtp_error(error: lettre::transport::smtp::Error) -> MailError {
    if error.is_permanent() || error.is_client() {
        MailError::Rejected(error.to_string())
    } else {
        MailError::Unavailable(error.to_string())
    }
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
                smtp.send(message).await.map_err(smtp_error)?;
            }
            Transport::Files(dir) => {
                tokio::fs::create_dir_all(dir).await?;
                // Written aside and renamed, so a reader of the folder never sees half a mail.
                let name = uuid::Uuid::now_v7();
                let partial = dir.join(format!(".{name}.eml.tmp"));
                tokio::fs::write(&partial, message.formatted()).await?;
                tokio::fs::rename(&partial, dir.join(format!("{name}.eml"))).await?;
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
    let mut builder = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host)
        .port(port)
        .timeout(Some(SMTP_TIMEOUT));
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
