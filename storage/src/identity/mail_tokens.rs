//! Single-use mail tokens: email verification (24 hours) and password reset (1 hour), and
//! the limit of 3 such mails per hour per address.

use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Duration, Utc};
use domain::error::{ErrorCode, Refusal};
use domain::identity::limits;
use domain::ids::UserId;
use uuid::Uuid;

/// What a token is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenKind {
    /// Confirms the email address.
    EmailVerification,
    /// Allows one password reset.
    PasswordReset,
}

impl TokenKind {
    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::EmailVerification => "EMAIL_VERIFICATION",
            Self::PasswordReset => "PASSWORD_RESET",
        }
    }

    fn ttl(self) -> Duration {
        match self {
            Self::EmailVerification => limits::email_verification_ttl(),
            Self::PasswordReset => limits::password_reset_ttl(),
        }
    }
}

/// Counts a mail request for `email` (known or not); false when the hourly limit is reached,
/// in which case nothing is recorded and no mail may be sent.
pub async fn allow_request(
    db: &Database,
    email: &str,
    kind: TokenKind,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = db.begin(Scope::anonymous()).await?;
    // Serialize requests for one address so two parallel ones cannot both pass the count.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("mail:{email}")],
    )
    .await?;
    let recent: i64 = tx
        .query_one(
            "SELECT count(*) FROM user_service.mail_requests WHERE email = $1 AND kind = $2 AND created_at > $3",
            &[&email, &kind.as_str(), &(now - limits::mail_window())],
        )
        .await?
        .get(0);
    if recent >= limits::MAILS_PER_WINDOW {
        return Ok(false);
    }
    tx.execute(
        "INSERT INTO user_service.mail_requests (email, kind, created_at) VALUES ($1, $2, $3)",
        &[&email, &kind.as_str(), &now],
    )
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// Creates a token for `user`; returns its text (a UUID, as used in links).
pub async fn create(
    db: &Database,
    user: UserId,
    kind: TokenKind,
    now: DateTime<Utc>,
) -> Result<String> {
    let client = db.client().await?;
    let token = Uuid::new_v4().to_string();
    client
        .execute(
            "INSERT INTO user_service.verification_tokens (id, user_id, token, type, expires_at, created_at)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[&Uuid::now_v7(), &user.as_uuid(), &token, &kind.as_str(), &(now + kind.ttl()), &now],
        )
        .await?;
    Ok(token)
}

fn unusable() -> Refusal {
    Refusal::with(
        ErrorCode::BusinessRule,
        "Ссылка недействительна, уже использована или истекла",
        "The link is invalid, already used or expired",
    )
}

/// Spends a token of `kind` inside `tx`; returns its user.
async fn spend(tx: &crate::Tx, token: &str, kind: TokenKind, now: DateTime<Utc>) -> Result<UserId> {
    let row = tx
        .query_opt(
            "UPDATE user_service.verification_tokens t SET used_at = $3
             FROM user_service.users u
             WHERE t.token = $1 AND t.type = $2 AND t.used_at IS NULL AND t.expires_at > $3
               AND u.id = t.user_id AND u.deleted_at IS NULL
             RETURNING t.user_id",
            &[&token, &kind.as_str(), &now],
        )
        .await?
        .ok_or_else(unusable)?;
    Ok(UserId(row.get(0)))
}

/// Verifies an email address with its token.
pub async fn verify_email(db: &Database, token: &str, now: DateTime<Utc>) -> Result<UserId> {
    let tx = db.begin(Scope::anonymous()).await?;
    let user = spend(&tx, token, TokenKind::EmailVerification, now).await?;
    tx.execute(
        "UPDATE user_service.users SET email_verified = true, email_verified_at = $2 WHERE id = $1",
        &[&user.as_uuid(), &now],
    )
    .await?;
    tx.commit().await?;
    Ok(user)
}

/// Resets a password with its token and ends every session of the user.
pub async fn reset_password(
    db: &Database,
    token: &str,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<UserId> {
    let tx = db.begin(Scope::anonymous()).await?;
    let user = spend(&tx, token, TokenKind::PasswordReset, now).await?;
    tx.execute(
        "UPDATE user_service.users SET password_hash = $2, failed_logins = 0, locked_until = NULL, updated_at = $3
         WHERE id = $1",
        &[&user.as_uuid(), &password_hash, &now],
    )
    .await?;
    super::sessions::end_all(&tx, user, now).await?;
    tx.commit().await?;
    Ok(user)
}
