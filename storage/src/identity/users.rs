//! User accounts: email registration, messenger sign-in, login bookkeeping (failed attempts
//! and the lock), profile changes and soft deletion.

use super::mail_tokens::{self, TokenKind};
use super::publish;
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::identity::{MemberRemoved, UserChange, UserChanged};
use domain::error::Refusal;
use domain::i18n::Lang;
use domain::identity::limits;
use domain::identity::refusals::IdentityRefusal;
use domain::ids::UserId;
use domain::roles::Role;
use tokio_postgres::Row;
use uuid::Uuid;

/// A user as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct User {
    /// Id.
    pub id: UserId,
    /// Linked messenger account id.
    pub messenger_id: Option<String>,
    /// Lower-case email, if the account has one.
    pub email: Option<String>,
    /// bcrypt hash, if the account has a password.
    pub password_hash: Option<String>,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Whether the email was verified.
    pub email_verified: bool,
    /// When it was verified.
    pub email_verified_at: Option<DateTime<Utc>>,
    /// Last successful sign-in.
    pub last_login_at: Option<DateTime<Utc>>,
    /// Until when the account is locked after failed logins.
    pub locked_until: Option<DateTime<Utc>>,
    /// Avatar media file.
    pub avatar_id: Option<Uuid>,
    /// Whether the user is a platform administrator.
    pub platform_admin: bool,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Raised by every change that ends the user's access tokens (see `revocations`).
    pub access_version: i64,
    /// Whether a platform administrator blocked the account.
    pub blocked: bool,
}

const COLUMNS: &str = "u.id, u.messenger_id, u.email, u.password_hash, u.first_name, u.last_name,
    u.email_verified, u.email_verified_at, u.last_login_at, u.locked_until, u.avatar_id,
    EXISTS (SELECT 1 FROM user_service.platform_admins a WHERE a.user_id = u.id), u.created_at,
    u.access_version, u.blocked_at IS NOT NULL";

fn from_row(row: &Row) -> User {
    User {
        id: UserId(row.get(0)),
        messenger_id: row.get(1),
        email: row.get(2),
        password_hash: row.get(3),
        first_name: row.get(4),
        last_name: row.get(5),
        email_verified: row.get(6),
        email_verified_at: row.get(7),
        last_login_at: row.get(8),
        locked_until: row.get(9),
        avatar_id: row.get(10),
        platform_admin: row.get(11),
        created_at: row.get(12),
        access_version: row.get(13),
        blocked: row.get(14),
    }
}

/// What other services learn of a user after `method` changed them.
fn changed(user: &User, method: UserChange) -> UserChanged {
    UserChanged {
        user_id: user.id,
        email: user.email.clone(),
        first_name: user.first_name.clone(),
        last_name: user.last_name.clone(),
        messenger_id: user.messenger_id.clone(),
        avatar_id: user.avatar_id,
        method: Some(method),
        deleted: false,
    }
}

/// An active (not deleted) user by id.
pub async fn by_id(db: &Database, id: UserId) -> Result<Option<User>> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM user_service.users u WHERE u.id = $1 AND u.deleted_at IS NULL"),
            &[&id.as_uuid()],
        )
        .await?;
    Ok(row.as_ref().map(from_row))
}

/// An active user by (already lower-cased) email.
pub async fn by_email(db: &Database, email: &str) -> Result<Option<User>> {
    let client = db.client().await?;
    let row = client
        .query_opt(
            &format!("SELECT {COLUMNS} FROM user_service.users u WHERE u.email = $1 AND u.deleted_at IS NULL"),
            &[&email],
        )
        .await?;
    Ok(row.as_ref().map(from_row))
}

/// Registers an email account without sending anything (tools and benchmarks). A taken email
/// (also by a deleted account) is a conflict.
pub async fn register(
    db: &Database,
    email: &str,
    password_hash: &str,
    first_name: &str,
    last_name: &str,
    now: DateTime<Utc>,
) -> Result<User> {
    let tx = db.begin(Scope::anonymous()).await?;
    let user = insert_email_account(&tx, email, password_hash, first_name, last_name, now).await?;
    tx.commit().await?;
    Ok(user)
}

/// Registers an email account and, in the same transaction, its verification token and the
/// request for the verification mail in `lang`: the account never exists without its mail on
/// the way. A taken email (also by a deleted account) is a conflict.
pub async fn register_with_verification(
    db: &Database,
    email: &str,
    password_hash: &str,
    first_name: &str,
    last_name: &str,
    lang: Lang,
    now: DateTime<Utc>,
) -> Result<User> {
    let tx = db.begin(Scope::anonymous()).await?;
    let user = insert_email_account(&tx, email, password_hash, first_name, last_name, now).await?;
    // The sign-up mail is one of the address's three an hour. Asks made for the address before
    // it had an account (forgot-password, resend) may have used them up: the account is
    // created all the same, and a resend after the hour brings the link.
    if mail_tokens::count_against_limit(&tx, email, TokenKind::EmailVerification, now).await? {
        let to = mail_tokens::Recipient {
            user: user.id,
            email,
            first_name: &user.first_name,
        };
        mail_tokens::issue(&tx, to, TokenKind::EmailVerification, lang, now).await?;
    } else {
        tracing::info!(user = %user.id, "sign-up mail skipped: the address's hourly limit is used up");
    }
    tx.commit().await?;
    Ok(user)
}

async fn insert_email_account(
    tx: &Tx,
    email: &str,
    password_hash: &str,
    first_name: &str,
    last_name: &str,
    now: DateTime<Utc>,
) -> Result<User> {
    let id = UserId::new();
    let inserted = tx
        .query_opt(
            "INSERT INTO user_service.users (id, email, password_hash, first_name, last_name, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT DO NOTHING RETURNING id",
            &[&id.as_uuid(), &email, &password_hash, &first_name, &last_name, &now],
        )
        .await?;
    if inserted.is_none() {
        return Err(Refusal::from(IdentityRefusal::EmailTaken).into());
    }
    let row = tx
        .query_one(
            &format!("SELECT {COLUMNS} FROM user_service.users u WHERE u.id = $1"),
            &[&id.as_uuid()],
        )
        .await?;
    let user = from_row(&row);
    publish(
        tx,
        None,
        Some(user.id),
        DomainEvent::UserRegistered(changed(&user, UserChange::Email)),
    )
    .await?;
    Ok(user)
}

/// Signs in with a verified messenger account, creating the user on first sign-in.
/// Returns the user and whether it was created.
pub async fn messenger_sign_in(
    db: &Database,
    messenger_id: &str,
    first_name: &str,
    last_name: &str,
    now: DateTime<Utc>,
) -> Result<(User, bool)> {
    let tx = db.begin(Scope::anonymous()).await?;
    let existing = tx
        .query_opt(
            &format!("SELECT {COLUMNS}, u.deleted_at FROM user_service.users u WHERE u.messenger_id = $1 FOR UPDATE"),
            &[&messenger_id],
        )
        .await?;
    if let Some(row) = existing {
        let deleted: Option<DateTime<Utc>> = row.get("deleted_at");
        if deleted.is_some() {
            return Err(Refusal::from(IdentityRefusal::AccountDeleted).into());
        }
        let user = from_row(&row);
        tx.execute(
            "UPDATE user_service.users SET last_login_at = $2 WHERE id = $1",
            &[&user.id.as_uuid(), &now],
        )
        .await?;
        tx.commit().await?;
        return Ok((user, false));
    }
    let id = UserId::new();
    let row = tx
        .query_one(
            &format!(
                "WITH u AS (
                    INSERT INTO user_service.users (id, messenger_id, first_name, last_name, last_login_at, created_at, updated_at)
                    VALUES ($1, $2, $3, $4, $5, $5, $5) RETURNING *
                 ) SELECT {COLUMNS} FROM u"
            ),
            &[&id.as_uuid(), &messenger_id, &first_name, &last_name, &now],
        )
        .await?;
    let user = from_row(&row);
    publish(
        &tx,
        None,
        Some(user.id),
        DomainEvent::UserRegistered(changed(&user, UserChange::Messenger)),
    )
    .await?;
    tx.commit().await?;
    Ok((user, true))
}

/// Records a failed password check (a login, or a wrong current password at a password
/// change: both guess the same secret); returns the lock expiry when this failure locked the
/// account.
pub async fn login_failed(
    db: &Database,
    id: UserId,
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>> {
    let client = db.client().await?;
    let lock_until = now + limits::lock_duration();
    let row = client
        .query_one(
            "UPDATE user_service.users SET
                failed_logins = CASE WHEN failed_logins + 1 >= $2 THEN 0 ELSE failed_logins + 1 END,
                locked_until = CASE WHEN failed_logins + 1 >= $2 THEN $3 ELSE locked_until END
             WHERE id = $1 RETURNING locked_until",
            &[&id.as_uuid(), &limits::MAX_FAILED_LOGINS, &lock_until],
        )
        .await?;
    let locked: Option<DateTime<Utc>> = row.get(0);
    Ok(locked.filter(|l| *l > now))
}

/// Records a successful login: the failure count starts over.
pub async fn login_succeeded(db: &Database, id: UserId, now: DateTime<Utc>) -> Result<()> {
    let client = db.client().await?;
    client
        .execute(
            "UPDATE user_service.users SET failed_logins = 0, locked_until = NULL, last_login_at = $2 WHERE id = $1",
            &[&id.as_uuid(), &now],
        )
        .await?;
    Ok(())
}

/// Profile fields a user may change; `None` leaves a field as it is.
#[derive(Clone, Debug, Default)]
pub struct ProfileChange {
    /// New first name.
    pub first_name: Option<String>,
    /// New last name.
    pub last_name: Option<String>,
    /// New avatar (`Some(None)` removes it).
    pub avatar_id: Option<Option<Uuid>>,
}

/// Updates the profile and publishes user.updated.
pub async fn update_profile(
    db: &Database,
    id: UserId,
    change: &ProfileChange,
    now: DateTime<Utc>,
) -> Result<User> {
    let tx = db.begin(Scope::user(id)).await?;
    let row = tx
        .query_opt(
            &format!(
                "WITH u AS (
                    UPDATE user_service.users SET
                        first_name = COALESCE($2, first_name),
                        last_name = COALESCE($3, last_name),
                        avatar_id = CASE WHEN $4 THEN $5 ELSE avatar_id END,
                        updated_at = $6
                    WHERE id = $1 AND deleted_at IS NULL RETURNING *
                 ) SELECT {COLUMNS} FROM u"
            ),
            &[
                &id.as_uuid(),
                &change.first_name,
                &change.last_name,
                &change.avatar_id.is_some(),
                &change.avatar_id.flatten(),
                &now,
            ],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let user = from_row(&row);
    publish(
        &tx,
        None,
        Some(id),
        DomainEvent::UserUpdated(changed(&user, UserChange::Profile)),
    )
    .await?;
    tx.commit().await?;
    Ok(user)
}

/// Replaces the password, starts the failed-login count over (the current password was just
/// proven), spends every outstanding reset token and ends every session of the user.
pub async fn set_password(
    db: &Database,
    id: UserId,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let tx = db.begin(Scope::user(id)).await?;
    tx.execute(
        "UPDATE user_service.users SET password_hash = $2, failed_logins = 0, locked_until = NULL, updated_at = $3
         WHERE id = $1",
        &[&id.as_uuid(), &password_hash, &now],
    )
    .await?;
    mail_tokens::spend_resets(&tx, id, now).await?;
    super::sessions::end_all(&tx, id, now).await?;
    tx.commit().await?;
    Ok(())
}

/// Soft-deletes the account: sessions end, memberships go, the email and messenger id stay
/// reserved. An owner must delete their organizations first.
pub async fn soft_delete(db: &Database, id: UserId, now: DateTime<Utc>) -> Result<()> {
    let tx = db.begin(Scope::user(id)).await?;
    let owns: i64 = tx
        .query_one(
            "SELECT count(*) FROM user_service.organization_members m
             JOIN user_service.organizations o ON o.id = m.organization_id
             WHERE m.user_id = $1 AND m.role = 'OWNER' AND o.deleted_at IS NULL",
            &[&id.as_uuid()],
        )
        .await?
        .get(0);
    if owns > 0 {
        return Err(Refusal::from(IdentityRefusal::OwnsOrganizations).into());
    }
    let removed = tx
        .query(
            "DELETE FROM user_service.organization_members WHERE user_id = $1 RETURNING organization_id, role",
            &[&id.as_uuid()],
        )
        .await?;
    for row in removed {
        let org: Uuid = row.get(0);
        let role: String = row.get(1);
        publish(
            &tx,
            Some(org.into()),
            Some(id),
            DomainEvent::MemberRemoved(MemberRemoved {
                organization_id: org.into(),
                user_id: id,
                role: role.parse().unwrap_or(Role::Moderator),
                removed_at: Some(now),
                reason: Some("ACCOUNT_DELETED".into()),
            }),
        )
        .await?;
    }
    tx.execute(
        "DELETE FROM user_service.group_members WHERE user_id = $1",
        &[&id.as_uuid()],
    )
    .await?;
    tx.execute(
        "UPDATE user_service.users SET deleted_at = $2, updated_at = $2 WHERE id = $1 AND deleted_at IS NULL",
        &[&id.as_uuid(), &now],
    )
    .await?;
    super::sessions::end_all(&tx, id, now).await?;
    publish(
        &tx,
        None,
        Some(id),
        DomainEvent::UserUpdated(UserChanged::deleted(id)),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}
