//! Binding a messenger chat to an account: a signed-in user gets a one-time token for the bot's
//! deep link; `/start <token>` in a chat redeems it once, before it expires.

use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Duration, Utc};
use domain::ids::UserId;

/// How long a link token can be redeemed.
pub const TOKEN_TTL: Duration = Duration::minutes(15);

/// What redeeming a token did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redeemed {
    /// The chat now belongs to this user (a chat linked to someone else before moves over).
    Linked(UserId),
    /// No such token.
    Unknown,
    /// Too late.
    Expired,
    /// Redeemed before.
    Used,
}

/// A new token for `user` (24 random bytes, URL-safe: Telegram's start parameter alphabet).
pub async fn create(
    db: &Database,
    user: UserId,
    now: DateTime<Utc>,
) -> Result<(String, DateTime<Utc>)> {
    use base64::Engine;
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 24]>());
    let expires = now + TOKEN_TTL;
    let tx = db.begin(Scope::system()).await?;
    tx.execute(
        "INSERT INTO notification_service.link_tokens (token, user_id, expires_at, created_at) VALUES ($1, $2, $3, $4)",
        &[&token, &user.as_uuid(), &expires, &now],
    )
    .await?;
    tx.commit().await?;
    Ok((token, expires))
}

/// Redeems `token` for `chat`, once.
pub async fn redeem(db: &Database, token: &str, chat: i64, now: DateTime<Utc>) -> Result<Redeemed> {
    let tx = db.begin(Scope::system()).await?;
    let Some(row) = tx
        .query_opt(
            "SELECT user_id, expires_at, used_at FROM notification_service.link_tokens WHERE token = $1 FOR UPDATE",
            &[&token],
        )
        .await?
    else {
        return Ok(Redeemed::Unknown);
    };
    let (user, expires, used): (uuid::Uuid, DateTime<Utc>, Option<DateTime<Utc>>) =
        (row.get(0), row.get(1), row.get(2));
    if used.is_some() {
        return Ok(Redeemed::Used);
    }
    if now >= expires {
        return Ok(Redeemed::Expired);
    }
    tx.execute(
        "UPDATE notification_service.link_tokens SET used_at = $2 WHERE token = $1",
        &[&token, &now],
    )
    .await?;
    // One chat per user and one user per chat: the newest link wins both ways.
    tx.execute(
        "DELETE FROM notification_service.chats WHERE chat_id = $1 AND user_id <> $2",
        &[&chat, &user],
    )
    .await?;
    tx.execute(
        "INSERT INTO notification_service.chats (user_id, chat_id, linked_at) VALUES ($1, $2, $3)
         ON CONFLICT (user_id) DO UPDATE SET chat_id = $2, linked_at = $3",
        &[&user, &chat, &now],
    )
    .await?;
    tx.commit().await?;
    Ok(Redeemed::Linked(UserId(user)))
}

/// The chat linked to `user`, if any.
pub async fn chat_of(db: &Database, user: UserId) -> Result<Option<i64>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT chat_id FROM notification_service.chats WHERE user_id = $1",
            &[&user.as_uuid()],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| r.get(0)))
}

/// When `user`'s chat was linked, if one is.
pub async fn linked_at(db: &Database, user: UserId) -> Result<Option<DateTime<Utc>>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT linked_at FROM notification_service.chats WHERE user_id = $1",
            &[&user.as_uuid()],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| r.get(0)))
}
