//! Platform administrators: users who review organization requests. Granted and revoked from
//! the command line (`bilet admin grant|revoke <email>`), never over the API.

use crate::db::{Database, DbError};
use domain::ids::UserId;

/// Result of a grant or revoke.
#[derive(Debug, PartialEq, Eq)]
pub enum AdminChange {
    /// The role was added or removed.
    Changed(UserId),
    /// The user already was (or was not) an administrator.
    Unchanged(UserId),
    /// No active user has that email.
    NoSuchUser,
}

async fn user_by_email(db: &Database, email: &str) -> Result<Option<UserId>, DbError> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            "SELECT id FROM user_service.users WHERE email = lower($1) AND deleted_at IS NULL",
            &[&email.trim()],
        )
        .await?;
    Ok(row.map(|r| UserId(r.get(0))))
}

/// Makes the user with `email` a platform administrator.
pub async fn grant(db: &Database, email: &str) -> Result<AdminChange, DbError> {
    let Some(user) = user_by_email(db, email).await? else {
        return Ok(AdminChange::NoSuchUser);
    };
    let client = db.client().await?;
    let n = client
        .execute(
            "INSERT INTO user_service.platform_admins (user_id) VALUES ($1) ON CONFLICT DO NOTHING",
            &[&user.as_uuid()],
        )
        .await?;
    Ok(if n == 1 {
        AdminChange::Changed(user)
    } else {
        AdminChange::Unchanged(user)
    })
}

/// Removes the platform administrator role from the user with `email`.
pub async fn revoke(db: &Database, email: &str) -> Result<AdminChange, DbError> {
    let Some(user) = user_by_email(db, email).await? else {
        return Ok(AdminChange::NoSuchUser);
    };
    let client = db.client().await?;
    let n = client
        .execute(
            "DELETE FROM user_service.platform_admins WHERE user_id = $1",
            &[&user.as_uuid()],
        )
        .await?;
    Ok(if n == 1 {
        AdminChange::Changed(user)
    } else {
        AdminChange::Unchanged(user)
    })
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
