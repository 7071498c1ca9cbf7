//! Single-use mail tokens: email verification (24 hours) and password reset (1 hour), and
//! the limit of 3 such mails per hour per address, both kinds and the sign-up mail together.
//!
//! A token is stored only as its SHA-256 (hex), like a refresh token: whoever reads the table
//! cannot use what they read. The token itself goes into a `mail.requested` event written in
//! the same transaction, which the mail consumer (`mail_consumer`) turns into the mail.

use super::publish;
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::error::Refusal;
use domain::i18n::Lang;
use domain::identity::limits;
use domain::identity::mail_request::MailRequest;
use domain::identity::refusals::IdentityRefusal;
use domain::ids::UserId;
use uuid::Uuid;

pub use domain::identity::mail_request::TokenKind;

/// The stored form of a mail token.
pub fn hash(token: &str) -> String {
    super::sessions::hash(token)
}

/// Who a mail goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Recipient<'a> {
    /// The account.
    pub user: UserId,
    /// Its (lower-case) address.
    pub email: &'a str,
    /// Its first name.
    pub first_name: &'a str,
}

/// Creates a token of `kind` for `to` inside `tx` and requests its mail in `lang`, so the
/// token exists if and only if its mail will be sent.
pub(crate) async fn issue(
    tx: &Tx,
    to: Recipient<'_>,
    kind: TokenKind,
    lang: Lang,
    now: DateTime<Utc>,
) -> Result<()> {
    // A UUID, as the spec's links use; 122 random bits.
    let token = Uuid::new_v4().to_string();
    tx.execute(
        "INSERT INTO user_service.verification_tokens (id, user_id, token, type, expires_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[&Uuid::now_v7(), &to.user.as_uuid(), &hash(&token), &kind.as_str(), &(now + kind.ttl()), &now],
    )
    .await?;
    let request = MailRequest {
        kind,
        to: to.email.to_string(),
        lang,
        token,
        first_name: to.first_name.to_string(),
    };
    publish(tx, None, Some(to.user), DomainEvent::MailRequested(request)).await?;
    Ok(())
}

/// Counts a mail of `kind` to `email` against the hourly limit inside `tx`: true, and the mail
/// recorded, when `limits::mail_allowed`; false, and nothing recorded, otherwise. Every kind
/// counts against the one limit, as the spec's "3 per hour per email" reads.
pub(crate) async fn count_against_limit(
    tx: &Tx,
    email: &str,
    kind: TokenKind,
    now: DateTime<Utc>,
) -> Result<bool> {
    // Serialize mails to one address so two parallel ones cannot both pass the count.
    super::lock(tx, &format!("mail:{email}")).await?;
    let recent: i64 = tx
        .query_one(
            "SELECT count(*) FROM user_service.mail_requests WHERE email = $1 AND created_at > $2",
            &[&email, &(now - limits::mail_window())],
        )
        .await?
        .get(0);
    if !limits::mail_allowed(recent) {
        return Ok(false);
    }
    tx.execute(
        "INSERT INTO user_service.mail_requests (email, kind, created_at) VALUES ($1, $2, $3)",
        &[&email, &kind.as_str(), &now],
    )
    .await?;
    Ok(true)
}

/// A verification or reset mail asked for by address (known or not). Counts the request
/// against the hourly limit and, for an active account that needs the mail, issues the token
/// and requests the mail, all in one transaction. False when the limit is reached, in which
/// case nothing is recorded.
pub async fn request(
    db: &Database,
    email: &str,
    kind: TokenKind,
    lang: Lang,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = db.begin(Scope::anonymous()).await?;
    if !count_against_limit(&tx, email, kind, now).await? {
        return Ok(false);
    }
    // An address already verified gets no second verification mail.
    let user = tx
        .query_opt(
            "SELECT id, first_name FROM user_service.users
             WHERE email = $1 AND deleted_at IS NULL AND ($2 OR NOT email_verified)",
            &[&email, &(kind == TokenKind::PasswordReset)],
        )
        .await?;
    if let Some(row) = user {
        let first_name: String = row.get(1);
        let to = Recipient {
            user: UserId(row.get(0)),
            email,
            first_name: &first_name,
        };
        issue(&tx, to, kind, lang, now).await?;
    }
    tx.commit().await?;
    Ok(true)
}

fn unusable() -> Refusal {
    Refusal::from(IdentityRefusal::MailLinkUnusable)
}

/// Spends a token of `kind` inside `tx`; returns its user.
async fn spend(tx: &Tx, token: &str, kind: TokenKind, now: DateTime<Utc>) -> Result<UserId> {
    let row = tx
        .query_opt(
            "UPDATE user_service.verification_tokens t SET used_at = $3
             FROM user_service.users u
             WHERE t.token = $1 AND t.type = $2 AND t.used_at IS NULL AND t.expires_at > $3
               AND u.id = t.user_id AND u.deleted_at IS NULL
             RETURNING t.user_id",
            &[&hash(token), &kind.as_str(), &now],
        )
        .await?
        .ok_or_else(unusable)?;
    Ok(UserId(row.get(0)))
}

/// Spends every outstanding reset token of `user` inside `tx`: once the password was reset or
/// changed, an older reset link must not set it again.
pub(crate) async fn spend_resets(tx: &Tx, user: UserId, now: DateTime<Utc>) -> Result<()> {
    tx.execute(
        "UPDATE user_service.verification_tokens SET used_at = $3
         WHERE user_id = $1 AND type = $2 AND used_at IS NULL",
        &[&user.as_uuid(), &TokenKind::PasswordReset.as_str(), &now],
    )
    .await?;
    Ok(())
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

/// Resets a password with its token, spends the user's other reset tokens and ends every
/// session of the user.
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
    spend_resets(&tx, user, now).await?;
    super::sessions::end_all(&tx, user, now).await?;
    tx.commit().await?;
    Ok(user)
}
