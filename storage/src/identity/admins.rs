//! Platform administrators: users who review organization requests. Granted and revoked from
//! the command line (`bilet admin grant|revoke <email>`), never over the API; so is blocking an
//! account (`bilet admin block|unblock <email>`), which ends its access at once.

use crate::db::{Database, DbError};
use domain::ids::UserId;

/// Result of a grant or revoke.
#[derive(Debug, PartialEq, Eq)]
pub enum AdminChange {
    /// The role was added or removed.
    Changed(UserId),
    /// The user already was (or was not) an administrator.
    Unchanged(UserId),
    /// No active user has that email (or Telegram id).
    NoSuchUser,
}

/// The active user an administrator names: by email, or by Telegram id for accounts that
/// only ever signed in through the messenger (an email always has an `@`, an id never).
async fn user_by_email(db: &Database, email: &str) -> Result<Option<UserId>, DbError> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT id FROM user_service.users
             WHERE (email = lower($1) OR (strpos($1, '@') = 0 AND messenger_id = $1))
               AND deleted_at IS NULL",
            &[&email.trim()],
        )
        .await?;
    Ok(row.map(|r| UserId(r.get(0))))
}

/// Runs `sql` (one statement over `$1`, the user's id) for the user with `email`; one row
/// changed means the change was made.
async fn change(db: &Database, email: &str, sql: &str) -> Result<AdminChange, DbError> {
    let Some(user) = user_by_email(db, email).await? else {
        return Ok(AdminChange::NoSuchUser);
    };
    let client = db.client().await?;
    let n = client.execute(sql, &[&user.as_uuid()]).await?;
    Ok(outcome(n, user))
}

fn outcome(rows: u64, user: UserId) -> AdminChange {
    if rows == 1 {
        AdminChange::Changed(user)
    } else {
        AdminChange::Unchanged(user)
    }
}

/// Makes the user with `email` a platform administrator.
pub async fn grant(db: &Database, email: &str) -> Result<AdminChange, DbError> {
    change(
        db,
        email,
        "INSERT INTO user_service.platform_admins (user_id) VALUES ($1) ON CONFLICT DO NOTHING",
    )
    .await
}

/// Removes the platform administrator role from the user with `email`.
pub async fn revoke(db: &Database, email: &str) -> Result<AdminChange, DbError> {
    change(
        db,
        email,
        "DELETE FROM user_service.platform_admins WHERE user_id = $1",
    )
    .await
}

/// Whether a user is a platform administrator.
pub async fn is_admin(db: &Database, user: UserId) -> Result<bool, DbError> {
    let client = db.client().await?;
    Ok(client
        .query_opt(
            "SELECT 1 FROM user_service.platform_admins WHERE user_id = $1",
            &[&user.as_uuid()],
        )
        .await?
        .is_some())
}

/// Blocks the account with `email`: its sessions and access tokens end now, and signing in,
/// refreshing and messenger sign-in are refused until it is unblocked.
pub async fn block(
    db: &Database,
    email: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> crate::error::Result<AdminChange> {
    let Some(user) = user_by_email(db, email).await? else {
        return Ok(AdminChange::NoSuchUser);
    };
    let tx = db.begin(crate::db::Scope::user(user)).await?;
    let n = tx
        .execute(
            "UPDATE user_service.users SET blocked_at = $2, updated_at = $2 WHERE id = $1 AND blocked_at IS NULL",
            &[&user.as_uuid(), &now],
        )
        .await?;
    super::sessions::end_all(&tx, user, now).await?;
    tx.commit().await?;
    Ok(outcome(n, user))
}

/// Lets the account with `email` sign in again.
pub async fn unblock(db: &Database, email: &str) -> Result<AdminChange, DbError> {
    change(
        db,
        email,
        "UPDATE user_service.users SET blocked_at = NULL WHERE id = $1 AND blocked_at IS NOT NULL",
    )
    .await
}
