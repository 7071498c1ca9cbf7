//! The identity service's mail consumer: sends the mail of each `mail.requested` event once.
//!
//! The inbox claim and the send form one step: the claim is written in a transaction that
//! commits only after the mail went out. A failed send rolls the claim back and fails the
//! delivery, so the broker brings the event back; a redelivery after a successful send finds
//! the claim and sends nothing. (If the commit itself fails after a send, the mail goes out
//! twice: a duplicate mail is better than a lost one.)

use crate::broker::{Handler, HandlerError, Outage};
use crate::db::{Database, Schema, Scope};
use crate::inbox;
use crate::mail::{Mail, Mailer};
use async_trait::async_trait;
use domain::envelope::Envelope;
use domain::identity::mail_request::{EVENT_TYPE, MailRequest};

/// The consumer name (queue `bilet.identity-mail`).
pub const CONSUMER: &str = "identity-mail";

/// The routing keys it listens to.
pub const PATTERNS: &[&str] = &[EVENT_TYPE];

/// Renders and sends requested mails.
pub struct MailSender {
    db: Database,
    mailer: Mailer,
    public_url: String,
}

impl MailSender {
    /// A consumer sending through `mailer`, with links under `public_url`.
    pub fn new(db: Database, mailer: Mailer, public_url: &str) -> MailSender {
        MailSender {
            db,
            mailer,
            public_url: public_url.to_string(),
        }
    }
}

#[async_trait]
impl Handler for MailSender {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        if event.event_type != EVENT_TYPE {
            return Ok(());
        }
        let request: MailRequest = serde_json::from_value(event.data.clone())
            .map_err(|e| format!("{EVENT_TYPE} {} is malformed: {e}", event.id))?;
        let tx = self.db.begin(Scope::anonymous()).await?;
        // The claim's row stays locked until commit, so a second delivery of the same event
        // running meanwhile waits here instead of sending a second mail.
        if !inbox::claim(&tx, Schema::UserService, CONSUMER, event.id).await? {
            return Ok(());
        }
        let (subject, body) = request.render(&self.public_url);
        let mail = Mail {
            to: request.to,
            subject,
            body,
        };
        if let Err(e) = self.mailer.send(&mail).await {
            // Dropping `tx` rolls the claim back. A mail server that is down is an outage:
            // retried until it is back, never dead-lettered; a refused mail is retried a few
            // times and then parked in the dead-letter queue.
            return Err(if e.is_temporary() {
                Box::new(Outage(format!("mail not sent: {e}")))
            } else {
                format!("mail {} refused: {e}", event.id).into()
            });
        }
        // The token has done its job; the outbox row need not keep a usable link until the
        // relay purges it.
        tx.execute(
            "UPDATE user_service.outbox SET data = data - 'token' WHERE id = $1",
            &[&event.id.as_uuid()],
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}
