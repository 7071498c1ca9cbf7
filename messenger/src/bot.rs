//! The bot: long polling of the Bot API's getUpdates, and the answers to `/start <token>`
//! (binds the chat to an account), `/start <invite code>` (accepts the invite for the
//! linked account), `/help` and `/tickets`. Answers go through the send queue like every
//! other message, so they keep to the same limits and land in the same log.

use crate::invites::{Accepted, Invites};
use crate::sender::SendQueue;
use crate::telegram::Telegram;
use chrono::Utc;
use domain::clock::Clock;
use domain::i18n::Lang;
use domain::ids::UserId;
use domain::notifications::Kind;
use domain::notifications::commands::Command;
use domain::notifications::delivery::Failure;
use domain::notifications::replies::{Reply, TICKETS_SHOWN};
use domain::notifications::templates;
use domain::notifications::times;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use storage::notifications::links::{self, Redeemed};
use storage::notifications::preferences;
use storage::notifications::projection;
use storage::notifications::queue::{self, NewMessage};
use storage::{Database, Scope};
use teloxide_core::types::{Message, UpdateKind};
use tokio::sync::watch;

/// Kind recorded in the send log for the bot's answers.
pub const REPLY_KIND: &str = "bot.reply";

/// What the bot needs.
pub struct Bot {
    /// The pool.
    pub db: Database,
    /// The Bot API.
    pub telegram: Telegram,
    /// Where answers are queued.
    pub queue: SendQueue,
    /// The identity service's invite endpoints.
    pub invites: Invites,
    /// The clock of rules (token expiry, what is upcoming).
    pub clock: Arc<dyn Clock>,
    /// The bot's username, for commands addressed to it.
    pub username: String,
    /// Long-poll timeout in seconds.
    pub poll_timeout: u32,
}

impl Bot {
    /// Polls for updates until `stop` turns true.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        if !self.telegram.is_on() {
            return;
        }
        let mut offset = 0i32;
        let mut backoff = Duration::from_secs(1);
        loop {
            let polled = tokio::select! {
                polled = self.telegram.updates(offset, self.poll_timeout) => polled,
                _ = stop.changed() => return,
            };
            let wait = match polled {
                Ok(updates) => {
                    backoff = Duration::from_secs(1);
                    for update in updates {
                        offset = offset.max(
                            i32::try_from(update.id.0)
                                .unwrap_or(i32::MAX)
                                .saturating_add(1),
                        );
                        if let UpdateKind::Message(message) = update.kind {
                            self.answer(&message).await;
                        }
                    }
                    continue;
                }
                Err(Failure::RetryAfter(wait)) => wait,
                Err(failure) => {
                    tracing::warn!(reason = %failure.reason(), "getUpdates failed; polling again later");
                    let wait = backoff;
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                    wait
                }
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Answers one message of a private chat; other chats and non-text messages are ignored.
    async fn answer(&self, message: &Message) {
        let Some(text) = message.text() else { return };
        if !message.chat.is_private() {
            return;
        }
        let chat = message.chat.id.0;
        let sender_lang = message
            .from
            .as_ref()
            .and_then(|u| u.language_code.as_deref())
            .map(Lang::from_accept_language)
            .unwrap_or_default();
        let first_name = message
            .from
            .as_ref()
            .map(|u| u.first_name.clone())
            .unwrap_or_default();
        let (user, text) = match self.reply_to(chat, text, &first_name, sender_lang).await {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(chat, error = %e, "bot command failed");
                (None, Reply::TryLater.text(sender_lang))
            }
        };
        let reply = NewMessage {
            button: None,
            tenant_id: None,
            user_id: user,
            chat_id: Some(chat),
            kind: REPLY_KIND.into(),
            source_event: None,
            text,
            ticket_code: None,
            skip: None,
        };
        match self.enqueue(reply).await {
            Ok(()) => self.queue.wake(),
            Err(e) => tracing::warn!(chat, error = %e, "could not queue the bot's answer"),
        }
    }

    async fn enqueue(&self, reply: NewMessage) -> storage::Result<()> {
        let tx = self.db.begin(Scope::system()).await?;
        queue::enqueue(&tx, &[reply], Utc::now()).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The answer to `text` from `chat` and who it is for.
    async fn reply_to(
        &self,
        chat: i64,
        text: &str,
        first_name: &str,
        sender_lang: Lang,
    ) -> Result<(Option<UserId>, String), String> {
        let linked = self.user_of(chat).await.map_err(|e| e.to_string())?;
        let lang = match linked {
            Some(user) => {
                preferences::get(&self.db, user)
                    .await
                    .map_err(|e| e.to_string())?
                    .language
            }
            None => sender_lang,
        };
        let reply = match Command::parse(text, &self.username) {
            Command::Start(None) | Command::Help => Reply::Help,
            Command::Start(Some(payload)) => {
                match links::redeem(&self.db, &payload, chat, self.clock.now())
                    .await
                    .map_err(|e| e.to_string())?
                {
                    Redeemed::Linked(user) => {
                        return self
                            .welcome(user, first_name)
                            .await
                            .map(|t| (Some(user), t));
                    }
                    Redeemed::Used => Reply::LinkUsed,
                    Redeemed::Expired => Reply::LinkExpired,
                    Redeemed::Unknown => match linked {
                        None => Reply::LinkFirst,
                        Some(user) => match self.invites.accept(user, &payload).await? {
                            Accepted::Joined(name) => Reply::Joined(name),
                            Accepted::Refused => Reply::InviteRefused,
                            Accepted::Unknown => Reply::UnknownCode,
                        },
                    },
                }
            }
            Command::Tickets => match linked {
                None => Reply::TicketsNeedLink,
                Some(user) => {
                    let tickets = self.tickets(user).await.map_err(|e| e.to_string())?;
                    if tickets.is_empty() {
                        Reply::NoTickets
                    } else {
                        Reply::Tickets(
                            tickets
                                .into_iter()
                                .map(|t| (t.title, times::date(t.starts_at, t.zone, lang), t.code))
                                .collect(),
                        )
                    }
                }
            },
            Command::Unknown => Reply::NotUnderstood,
        };
        Ok((linked, reply.text(lang)))
    }

    async fn user_of(&self, chat: i64) -> storage::Result<Option<UserId>> {
        let tx = self.db.begin(Scope::system()).await?;
        let user = projection::user_of_chat(&tx, chat).await?;
        tx.commit().await?;
        Ok(user)
    }

    async fn tickets(&self, user: UserId) -> storage::Result<Vec<projection::Ticket>> {
        let tx = self.db.begin(Scope::system()).await?;
        let tickets =
            projection::upcoming_tickets(&tx, user, self.clock.now(), TICKETS_SHOWN as i64).await?;
        tx.commit().await?;
        Ok(tickets)
    }

    /// The welcome for a freshly linked chat, in the user's language.
    async fn welcome(&self, user: UserId, telegram_name: &str) -> Result<String, String> {
        let tx = self
            .db
            .begin(Scope::system())
            .await
            .map_err(|e| e.to_string())?;
        let to = projection::recipient(&tx, user, telegram_name, "")
            .await
            .map_err(|e| e.to_string())?;
        tx.commit().await.map_err(|e| e.to_string())?;
        let values = BTreeMap::from([("firstName".to_string(), to.first_name.clone())]);
        Ok(templates::render(
            Kind::UserWelcome,
            to.preferences.language,
            &values,
        ))
    }
}
