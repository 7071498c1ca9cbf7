//! The identity service's mail consumer: sends the mail of each `mail.requested` event once.
//!
//! The inbox claim and the send form one step: the claim is written in a transaction that
//! commits only after the mail went out. A failed send rolls the claim back and fails the
//! delivery, so the broker brings the event back; a redelivery after a successful send finds
//! the claim and sends nothing. (If the commit itself fails after a send, the mail goes out
//! twice: a duplicate mail is better than a lost one.)

use crate::broker::{HandlerError, Outage};
use crate::db::{Schema, Scope, Tx};
use crate::inbox::{Projection, Received};
use crate::mail::{Mail, Mailer};
use async_trait::async_trait;
use domain::contract::{DomainEvent, Kind};

/// Renders and sends requested mails (consumer `identity-mail`).
pub struct MailSender {
    mailer: Mailer,
    public_url: String,
}

impl MailSender {
    /// A consumer sending through `mailer`, with links under `public_url`.
    pub fn new(mailer: Mailer, public_url: &str) -> MailSender {
        MailSender {
            mailer,
            public_url: public_url.to_string(),
        }
    }
}

#[async_trait]
impl Projection for MailSender {
    const NAME: &'static str = "identity-mail";
    const SCHEMA: Schema = Schema::UserService;
    const TAKES: &'static [Kind] = &[Kind::MailRequested];
    type Done = ();

    fn scope(&self, _: &Received<'_>) -> Result<Scope, HandlerError> {
        Ok(Scope::anonymous())
    }

    async fn apply(&self, tx: &Tx, received: &Received<'_>) -> Result<(), HandlerError> {
        let DomainEvent::MailRequested(request) = &received.event else {
            return Ok(());
        };
        let id = received.envelope.id;
        let (subject, body) = request.render(&self.public_url);
        let mail = Mail {
            to: request.to.clone(),
            subject,
            body,
        };
        if let Err(e) = self.mailer.send(&mail).await {
            // The error rolls the claim back. A mail server that is down is an outage:
            // retried until it is back, never dead-lettered; a refused mail is retried a few
            // times and then parked in the dead-letter queue.
            return Err(if e.is_temporary() {
                Box::new(Outage(format!("mail not sent: {e}")))
            } else {
                format!("mail {id} refused: {e}").into()
            });
        }
        // The token has done its job; the outbox row need not keep a usable link until the
        // relay purges it.
        tx.execute(
            "UPDATE user_service.outbox SET data = data - 'token' WHERE id = $1",
            &[&id.as_uuid()],
        )
        .await?;
        Ok(())
    }
}
