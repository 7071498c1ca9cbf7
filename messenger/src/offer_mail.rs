//! Sending the mail that stands in for a waiting-list offer, and what its failure means to
//! the broker: a mail server that is down is an outage (the event waits, its tries are not
//! spent), a refusal is an ordinary failure (retried, then dead-lettered where
//! `bilet dlq replay notifications` brings it back), and an address that can never work is
//! recorded as a failed message rather than retried forever.

use domain::envelope::Envelope;
use storage::broker::{HandlerError, Outage};
use storage::mail::{Mail, MailError, Mailer};
use storage::notifications::queue::Mailed;

/// Sends `mail` for `event`; `Ok` says how it ended for the record, `Err` fails the delivery.
pub async fn send(mailer: &Mailer, mail: &Mail, event: &Envelope) -> Result<Mailed, HandlerError> {
    match mailer.send(mail).await {
        Ok(()) => Ok(Mailed::Sent),
        Err(MailError::Invalid(why)) => {
            tracing::warn!(event = %event.id, reason = %why, "waiting-list offer not mailable");
            Ok(Mailed::Failed(format!("permanent: {why}")))
        }
        Err(e) if e.is_temporary() => Err(Box::new(Outage(format!("offer mail not sent: {e}")))),
        Err(e) => Err(format!("offer mail for {} refused: {e}", event.id).into()),
    }
}
