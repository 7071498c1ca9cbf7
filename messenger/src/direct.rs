//! A message asked for directly (`POST /api/v1/notifications/send`, internal): one template
//! to one user, rendered in their language and queued like any other. The caller's
//! idempotency key stands in for a source event, so a repeated request queues nothing new.

use crate::sender::SendQueue;
use chrono::Utc;
use domain::ids::{EventId, TenantId, UserId};
use domain::notifications::Kind;
use domain::notifications::delivery::{MessageStatus, SkipReason};
use domain::notifications::templates;
use std::collections::BTreeMap;
use storage::notifications::projection;
use storage::notifications::queue::{self, NewMessage};
use storage::{Database, Scope};
use uuid::Uuid;

/// What to send.
#[derive(Clone, Debug)]
pub struct Request {
    /// To whom.
    pub user: UserId,
    /// Which template.
    pub kind: Kind,
    /// Its variables (escaped when rendered).
    pub values: BTreeMap<String, String>,
    /// The organization it concerns, if any.
    pub tenant: Option<TenantId>,
    /// The caller's idempotency key.
    pub key: Option<Uuid>,
}

/// What became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Queued {
    /// The message.
    pub id: Uuid,
    /// QUEUED, or SKIPPED with the reason (or later states, for a repeated key).
    pub status: MessageStatus,
    /// Why it was skipped or failed.
    pub reason: Option<String>,
    /// Whether an earlier request with the same key queued it.
    pub replayed: bool,
}

/// Queues the message (or finds the one queued under the same key) and wakes the sender.
pub async fn send(
    db: &Database,
    sender: &SendQueue,
    bot_on: bool,
    request: Request,
) -> storage::Result<Queued> {
    let source = request.key.map(EventId);
    let tx = db.begin(Scope::system()).await?;
    if let Some(source) = source
        && let Some((id, status, reason)) =
            queue::find(&tx, source, request.user, request.kind.as_str()).await?
    {
        tx.commit().await?;
        return Ok(Queued {
            id,
            status,
            reason,
            replayed: true,
        });
    }
    let to = projection::recipient(&tx, request.user, "", "").await?;
    let mut values = request.values;
    values
        .entry("firstName".into())
        .or_insert_with(|| to.first_name.clone());
    let skip = if !to.preferences.allows(request.kind) {
        Some(SkipReason::OptedOut)
    } else if !bot_on {
        Some(SkipReason::BotDisabled)
    } else if to.chat_id.is_none() {
        tracing::warn!(user = %request.user, kind = request.kind.as_str(), "no linked messenger chat: notification skipped");
        Some(SkipReason::NoChat)
    } else {
        None
    };
    let message = NewMessage {
        button: None,
        tenant_id: request.tenant,
        user_id: Some(request.user),
        chat_id: to.chat_id,
        kind: request.kind.as_str().to_string(),
        source_event: source,
        text: templates::render(request.kind, to.preferences.language, &values),
        ticket_code: None,
        skip,
    };
    let written = queue::enqueue(&tx, std::slice::from_ref(&message), Utc::now()).await?;
    let fresh = written
        .queued
        .first()
        .map(|id| (*id, MessageStatus::Queued))
        .or_else(|| {
            written
                .skipped
                .first()
                .map(|id| (*id, MessageStatus::Skipped))
        });
    let answer = match (fresh, source) {
        (Some((id, status)), _) => Queued {
            id,
            status,
            reason: skip.map(|s| s.as_str().to_string()),
            replayed: false,
        },
        // The same key arrived twice at once and the other request wrote first.
        (None, Some(source)) => {
            let (id, status, reason) =
                queue::find(&tx, source, request.user, request.kind.as_str())
                    .await?
                    .ok_or_else(|| storage::Error::Refused(domain::error::Refusal::not_found()))?;
            Queued {
                id,
                status,
                reason,
                replayed: true,
            }
        }
        (None, None) => return Err(storage::Error::Refused(domain::error::Refusal::not_found())),
    };
    tx.commit().await?;
    if answer.status == MessageStatus::Queued && !answer.replayed {
        sender.wake();
    }
    Ok(answer)
}
