//! The send queue and its log. A message is written with the change that caused it (the
//! consumer's transaction), claimed by a sender under a lease, and ends SENT, FAILED or
//! SKIPPED; every attempt and every skip leaves a row in the send log. A sender that dies
//! leaves its lease to run out, and the message is claimed again.

use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Duration, Utc};
use domain::ids::{EventId, TenantId, UserId};
use domain::notifications::delivery::{LogOutcome, MessageStatus, SkipReason};
use uuid::Uuid;

/// A message to queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewMessage {
    /// The organization it concerns, if any.
    pub tenant_id: Option<TenantId>,
    /// Who it is for (absent for answers to chats not linked to anyone).
    pub user_id: Option<UserId>,
    /// Where it goes; absent when the person has no linked chat.
    pub chat_id: Option<i64>,
    /// Template name, or `bot.reply` for the bot's answers.
    pub kind: String,
    /// The broker event it answers; a message per event, person and kind at most.
    pub source_event: Option<EventId>,
    /// The MarkdownV2 text.
    pub text: String,
    /// A check-in code to send as a QR image with the text as its caption.
    pub ticket_code: Option<String>,
    /// A link button under the text.
    pub button: Option<Button>,
    /// Why it is not sent at all, when it is not.
    pub skip: Option<SkipReason>,
}

/// A link button under a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Button {
    /// What it says.
    pub text: String,
    /// Where it leads (https).
    pub url: String,
}

/// A claimed message, to be sent now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// Its id.
    pub id: Uuid,
    /// The organization.
    pub tenant_id: Option<Uuid>,
    /// The person.
    pub user_id: Option<Uuid>,
    /// The chat.
    pub chat_id: i64,
    /// Template name.
    pub kind: String,
    /// The MarkdownV2 text.
    pub text: String,
    /// QR image content, when it carries a ticket.
    pub ticket_code: Option<String>,
    /// A link button under the text.
    pub button: Option<Button>,
    /// Tries so far that counted.
    pub attempts: i32,
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempted {
    /// Delivered.
    Sent,
    /// Failed; try again at `at`. `counts` says whether it used up a try (a 429 does not).
    Retry {
        /// Why.
        reason: String,
        /// When.
        at: DateTime<Utc>,
        /// Whether it used up a try.
        counts: bool,
    },
    /// Failed for good.
    Failed(String),
}

/// The ids of the messages written by `enqueue`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Enqueued {
    /// Waiting to be sent.
    pub queued: Vec<Uuid>,
    /// Written finished, as skipped.
    pub skipped: Vec<Uuid>,
}

/// Queues messages inside the caller's transaction; a repeat of (event, person, kind) is
/// ignored. Skipped messages are written finished, with their log row.
pub async fn enqueue(tx: &Tx, messages: &[NewMessage], now: DateTime<Utc>) -> Result<Enqueued> {
    if messages.is_empty() {
        return Ok(Enqueued::default());
    }
    let n = messages.len();
    let mut ids = Vec::with_capacity(n);
    let mut tenants = Vec::with_capacity(n);
    let mut users = Vec::with_capacity(n);
    let mut chats = Vec::with_capacity(n);
    let mut kinds = Vec::with_capacity(n);
    let mut sources = Vec::with_capacity(n);
    let mut texts = Vec::with_capacity(n);
    let mut codes = Vec::with_capacity(n);
    let mut button_texts = Vec::with_capacity(n);
    let mut button_urls = Vec::with_capacity(n);
    let mut statuses = Vec::with_capacity(n);
    let mut reasons = Vec::with_capacity(n);
    for m in messages {
        ids.push(Uuid::now_v7());
        tenants.push(m.tenant_id.map(|t| t.as_uuid()));
        users.push(m.user_id.map(|u| u.as_uuid()));
        chats.push(m.chat_id);
        kinds.push(m.kind.as_str());
        sources.push(m.source_event.map(|e| e.as_uuid()));
        texts.push(m.text.as_str());
        codes.push(m.ticket_code.as_deref());
        button_texts.push(m.button.as_ref().map(|b| b.text.as_str()));
        button_urls.push(m.button.as_ref().map(|b| b.url.as_str()));
        let status = match m.skip {
            Some(_) => MessageStatus::Skipped,
            None => MessageStatus::Queued,
        };
        statuses.push(status.as_str());
        reasons.push(m.skip.map(SkipReason::as_str));
    }
    let rows = tx
        .query(
            "INSERT INTO notification_service.messages
                (id, tenant_id, user_id, chat_id, kind, source_event_id, text, ticket_code, status, reason,
                 next_attempt_at, created_at, finished_at, button_text, button_url)
             SELECT m.id, m.tenant_id, m.user_id, m.chat_id, m.kind, m.source, m.text, m.code, m.status, m.reason,
                    $11::timestamptz, $11::timestamptz, CASE WHEN m.status = 'SKIPPED' THEN $11::timestamptz END,
                    m.button_text, m.button_url
             FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::bigint[], $5::text[], $6::uuid[], $7::text[],
                         $8::text[], $9::text[], $10::text[], $12::text[], $13::text[])
                  AS m(id, tenant_id, user_id, chat_id, kind, source, text, code, status, reason, button_text, button_url)
             ON CONFLICT (source_event_id, user_id, kind) WHERE source_event_id IS NOT NULL DO NOTHING
             RETURNING id, status, tenant_id, user_id, chat_id, kind, reason",
            &[
                &ids, &tenants, &users, &chats, &kinds, &sources, &texts, &codes, &statuses,
                &reasons, &now, &button_texts, &button_urls,
            ],
        )
        .await?;
    let skipped_rows: Vec<_> = rows
        .iter()
        .filter(|r| r.get::<_, &str>(1) == MessageStatus::Skipped.as_str())
        .collect();
    let skipped: Vec<Uuid> = skipped_rows.iter().map(|r| r.get(0)).collect();
    if !skipped.is_empty() {
        // From what the insert returned: reading the messages back would only find what it
        // just wrote. Nothing else checks the log's message (notification_service V9).
        let tenants: Vec<Option<Uuid>> = skipped_rows.iter().map(|r| r.get(2)).collect();
        let users: Vec<Option<Uuid>> = skipped_rows.iter().map(|r| r.get(3)).collect();
        let chats: Vec<Option<i64>> = skipped_rows.iter().map(|r| r.get(4)).collect();
        let kinds: Vec<&str> = skipped_rows.iter().map(|r| r.get(5)).collect();
        let reasons: Vec<Option<&str>> = skipped_rows.iter().map(|r| r.get(6)).collect();
        tx.execute(
            "INSERT INTO notification_service.send_log (message_id, tenant_id, user_id, chat_id, kind, attempt, outcome, reason, at)
             SELECT l.id, l.tenant_id, l.user_id, l.chat_id, l.kind, 0, $7, l.reason, $8
             FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::bigint[], $5::text[], $6::text[])
                  AS l(id, tenant_id, user_id, chat_id, kind, reason)",
            &[
                &skipped,
                &tenants,
                &users,
                &chats,
                &kinds,
                &reasons,
                &LogOutcome::Skipped.as_str(),
                &now,
            ],
        )
        .await?;
    }
    let queued = rows
        .iter()
        .filter(|r| r.get::<_, &str>(1) == MessageStatus::Queued.as_str())
        .map(|r| r.get(0))
        .collect();
    Ok(Enqueued { queued, skipped })
}

/// How a mail standing in for a message ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mailed {
    /// The mail server took it.
    Sent,
    /// It can never be sent (a malformed address); why.
    Failed(String),
}

/// Records, inside the caller's transaction, a message that went by mail instead of the
/// messenger (`channel = 'email'`), finished, with its log row. A repeat of (event, person,
/// kind) is ignored like in `enqueue`.
pub async fn record_mail(
    tx: &Tx,
    message: &NewMessage,
    outcome: &Mailed,
    now: DateTime<Utc>,
) -> Result<()> {
    let (status, logged, reason) = match outcome {
        Mailed::Sent => (MessageStatus::Sent, LogOutcome::Sent, None),
        Mailed::Failed(why) => (
            MessageStatus::Failed,
            LogOutcome::Failed,
            Some(why.as_str()),
        ),
    };
    let row = tx
        .query_opt(
            "INSERT INTO notification_service.messages
                (id, tenant_id, user_id, chat_id, kind, source_event_id, text, status, reason, attempts,
                 next_attempt_at, created_at, finished_at, channel)
             VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8, 1, $9, $9, $9, 'email')
             ON CONFLICT (source_event_id, user_id, kind) WHERE source_event_id IS NOT NULL DO NOTHING
             RETURNING id",
            &[
                &Uuid::now_v7(),
                &message.tenant_id.map(|t| t.as_uuid()),
                &message.user_id.map(|u| u.as_uuid()),
                &message.kind,
                &message.source_event.map(|e| e.as_uuid()),
                &message.text,
                &status.as_str(),
                &reason,
                &now,
            ],
        )
        .await?;
    if let Some(row) = row {
        let id: Uuid = row.get(0);
        tx.execute(
            "INSERT INTO notification_service.send_log (message_id, tenant_id, user_id, chat_id, kind, attempt, outcome, reason, at, channel)
             SELECT id, tenant_id, user_id, NULL, kind, 1, $2, reason, $3, 'email'
             FROM notification_service.messages WHERE id = $1",
            &[&id, &logged.as_str(), &now],
        )
        .await?;
    }
    Ok(())
}

/// Claims up to `limit` messages due at `now` (and those whose sender's lease ran out) for
/// `lease`, oldest first.
pub async fn claim_due(
    db: &Database,
    now: DateTime<Utc>,
    limit: i64,
    lease: Duration,
) -> Result<Vec<Outgoing>> {
    let tx = db.begin(Scope::system()).await?;
    let rows = tx
        .query(
            "UPDATE notification_service.messages m SET status = 'SENDING', lease_until = $2
             FROM (SELECT id FROM notification_service.messages
                   WHERE (status = 'QUEUED' AND next_attempt_at <= $1) OR (status = 'SENDING' AND lease_until <= $1)
                   ORDER BY next_attempt_at, id LIMIT $3 FOR UPDATE SKIP LOCKED) due
             WHERE m.id = due.id
             RETURNING m.id, m.tenant_id, m.user_id, m.chat_id, m.kind, m.text, m.ticket_code, m.attempts,
                       m.next_attempt_at, m.button_text, m.button_url",
            &[&now, &(now + lease), &limit],
        )
        .await?;
    tx.commit().await?;
    let mut claimed: Vec<(DateTime<Utc>, Outgoing)> = rows
        .iter()
        .filter_map(|r| {
            // A queued message always has a chat: those without one are written SKIPPED.
            let chat: Option<i64> = r.get(3);
            chat.map(|chat_id| {
                (
                    r.get(8),
                    Outgoing {
                        id: r.get(0),
                        tenant_id: r.get(1),
                        user_id: r.get(2),
                        chat_id,
                        kind: r.get(4),
                        text: r.get(5),
                        ticket_code: r.get(6),
                        button: match (
                            r.get::<_, Option<String>>(9),
                            r.get::<_, Option<String>>(10),
                        ) {
                            (Some(text), Some(url)) => Some(Button { text, url }),
                            _ => None,
                        },
                        attempts: r.get(7),
                    },
                )
            })
        })
        .collect();
    claimed.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.id.cmp(&b.1.id)));
    Ok(claimed.into_iter().map(|(_, m)| m).collect())
}

/// When the next queued message falls due (or the next lease runs out), if any is waiting.
pub async fn next_due(db: &Database) -> Result<Option<DateTime<Utc>>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_one(
            "SELECT min(CASE WHEN status = 'QUEUED' THEN next_attempt_at ELSE lease_until END)
             FROM notification_service.messages WHERE status IN ('QUEUED', 'SENDING')",
            &[],
        )
        .await?;
    tx.commit().await?;
    Ok(row.get(0))
}

/// Writes how an attempt of `message` ended, and its log row.
pub async fn record(
    db: &Database,
    message: &Outgoing,
    result: &Attempted,
    now: DateTime<Utc>,
) -> Result<()> {
    let tx = db.begin(Scope::system()).await?;
    let counted = match result {
        Attempted::Retry { counts: false, .. } => message.attempts,
        _ => message.attempts + 1,
    };
    let (status, outcome, reason, next) = match result {
        Attempted::Sent => (MessageStatus::Sent, LogOutcome::Sent, None, None),
        Attempted::Retry { reason, at, .. } => (
            MessageStatus::Queued,
            LogOutcome::Retry,
            Some(reason.as_str()),
            Some(*at),
        ),
        Attempted::Failed(reason) => (
            MessageStatus::Failed,
            LogOutcome::Failed,
            Some(reason.as_str()),
            None,
        ),
    };
    let finished = next.is_none().then_some(now);
    tx.execute(
        "UPDATE notification_service.messages SET status = $2, attempts = $3, reason = $4,
            next_attempt_at = COALESCE($5, next_attempt_at), lease_until = NULL, finished_at = $6
         WHERE id = $1",
        &[
            &message.id,
            &status.as_str(),
            &counted,
            &reason,
            &next,
            &finished,
        ],
    )
    .await?;
    // The log counts every attempt, a 429 included.
    tx.execute(
        "INSERT INTO notification_service.send_log (message_id, tenant_id, user_id, chat_id, kind, attempt, outcome, reason, at)
         SELECT $1, $2, $3, $4, $5, 1 + (SELECT count(*) FROM notification_service.send_log WHERE message_id = $1 AND outcome <> 'SKIPPED'),
                $6, $7, $8",
        &[
            &message.id,
            &message.tenant_id,
            &message.user_id,
            &message.chat_id,
            &message.kind,
            &outcome.as_str(),
            &reason,
            &now,
        ],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Gives claimed messages back to the queue (a sender stopping before it sent them).
pub async fn release(db: &Database, ids: &[Uuid]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let tx = db.begin(Scope::system()).await?;
    tx.execute(
        "UPDATE notification_service.messages SET status = 'QUEUED', lease_until = NULL
         WHERE id = ANY($1) AND status = 'SENDING'",
        &[&ids],
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The state of one message (status, tries that counted, last reason).
pub async fn status(
    db: &Database,
    id: Uuid,
) -> Result<Option<(MessageStatus, i32, Option<String>)>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT status, attempts, reason FROM notification_service.messages WHERE id = $1",
            &[&id],
        )
        .await?;
    tx.commit().await?;
    Ok(row.and_then(|r| MessageStatus::parse(r.get(0)).map(|s| (s, r.get(1), r.get(2)))))
}

/// The message queued for (`source`, `user`, `kind`), if there is one: id, status, reason.
pub async fn find(
    tx: &Tx,
    source: EventId,
    user: UserId,
    kind: &str,
) -> Result<Option<(Uuid, MessageStatus, Option<String>)>> {
    let row = tx
        .query_opt(
            "SELECT id, status, reason FROM notification_service.messages
             WHERE source_event_id = $1 AND user_id = $2 AND kind = $3",
            &[&source.as_uuid(), &user.as_uuid(), &kind],
        )
        .await?;
    Ok(row.and_then(|r| MessageStatus::parse(r.get(1)).map(|s| (r.get(0), s, r.get(2)))))
}
