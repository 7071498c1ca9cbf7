//! Sessions as chains of refresh tokens. A token is stored only as its SHA-256, is valid 7
//! days and is used once: refreshing revokes it and issues the next token of the same session.
//! Presenting a token that was already used revokes its whole session (reuse detection). A
//! user keeps at most 10 active tokens; issuing an 11th revokes the oldest.

use super::revocations;
use crate::db::{Database, Scope, Tx};
use crate::error::Result;
use base64::Engine;
use chrono::{DateTime, Utc};
use domain::error::Refusal;
use domain::identity::limits;
use domain::identity::refusals::IdentityRefusal;
use domain::ids::{TenantId, UserId};
use sha2::{Digest, Sha256};
use uuid::Uuid;

/// A refresh token just issued; the token text exists only here and in the response.
#[derive(Clone, Debug)]
pub struct Issued {
    /// The token to hand to the client.
    pub token: String,
    /// The session it belongs to.
    pub session_id: Uuid,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
}

/// A successful refresh.
#[derive(Clone, Debug)]
pub struct Rotated {
    /// Whose session it is.
    pub user: UserId,
    /// The organization the session was working in.
    pub tenant: Option<TenantId>,
    /// The next token of the session.
    pub issued: Issued,
}

/// The stored form of a token.
pub fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn invalid() -> Refusal {
    Refusal::from(IdentityRefusal::RefreshTokenInvalid)
}

async fn insert(
    tx: &Tx,
    user: UserId,
    session: Uuid,
    tenant: Option<TenantId>,
    client: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Issued> {
    let token = new_token();
    let expires_at = now + limits::refresh_token_ttl();
    tx.execute(
        "INSERT INTO user_service.refresh_tokens (id, user_id, session_id, token_hash, organization_id, expires_at, created_at, client)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[&Uuid::now_v7(), &user.as_uuid(), &session, &hash(&token), &tenant.map(|t| t.as_uuid()), &expires_at, &now, &client],
    )
    .await?;
    Ok(Issued {
        token,
        session_id: session,
        expires_at,
    })
}

/// Longest description of what started a session that is kept.
pub const MAX_CLIENT_CHARS: usize = 200;

/// Starts a new session for `user` from `client` (its User-Agent), revoking the oldest beyond
/// the limit.
pub async fn start(
    db: &Database,
    user: UserId,
    client: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Issued> {
    let client: Option<String> = client
        .map(|c| {
            c.chars()
                .filter(|c| !c.is_control())
                .take(MAX_CLIENT_CHARS)
                .collect::<String>()
        })
        .filter(|c| !c.trim().is_empty());
    let tx = db.begin(Scope::user(user)).await?;
    let issued = insert(&tx, user, Uuid::now_v7(), None, client.as_deref(), now).await?;
    let pushed_out = tx
        .query(
            "UPDATE user_service.refresh_tokens SET revoked = true, revoked_at = $2
             WHERE id IN (
                SELECT id FROM user_service.refresh_tokens
                WHERE user_id = $1 AND NOT revoked AND expires_at > $2
                ORDER BY created_at DESC, id DESC OFFSET $3)
             RETURNING session_id",
            &[&user.as_uuid(), &now, &limits::MAX_SESSIONS],
        )
        .await?;
    let pushed_out: Vec<Uuid> = pushed_out.iter().map(|r| r.get(0)).collect();
    revocations::sessions(&tx, user, &pushed_out).await?;
    tx.commit().await?;
    Ok(issued)
}

/// Exchanges a refresh token for the next one of its session.
pub async fn rotate(db: &Database, token: &str, now: DateTime<Utc>) -> Result<Rotated> {
    let tx = db.begin(Scope::anonymous()).await?;
    let used = tx
        .query_opt(
            "UPDATE user_service.refresh_tokens SET revoked = true, revoked_at = $2
             WHERE token_hash = $1 AND NOT revoked AND expires_at > $2
             RETURNING user_id, session_id, organization_id, client",
            &[&hash(token), &now],
        )
        .await?;
    let Some(row) = used else {
        let known = tx
            .query_opt(
                "SELECT session_id, revoked, user_id FROM user_service.refresh_tokens WHERE token_hash = $1",
                &[&hash(token)],
            )
            .await?;
        if let Some(row) = known {
            let revoked: bool = row.get(1);
            if revoked {
                // A used token came back: someone holds a copy. End the whole session, its
                // access tokens included, so neither the thief nor the victim keeps one.
                let session: Uuid = row.get(0);
                tx.execute(
                    "UPDATE user_service.refresh_tokens SET revoked = true, revoked_at = $2
                     WHERE session_id = $1 AND NOT revoked",
                    &[&session, &now],
                )
                .await?;
                revocations::sessions(&tx, UserId(row.get(2)), &[session]).await?;
                tx.commit().await?;
                tracing::warn!(%session, "refresh token reused; session revoked");
            }
        }
        return Err(invalid().into());
    };
    let user = UserId(row.get(0));
    let session: Uuid = row.get(1);
    let tenant: Option<TenantId> = row.get::<_, Option<Uuid>>(2).map(TenantId);
    // The user may have been deleted or blocked since the session started.
    let active: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM user_service.users WHERE id = $1 AND deleted_at IS NULL AND blocked_at IS NULL)",
            &[&user.as_uuid()],
        )
        .await?
        .get(0);
    if !active {
        return Err(invalid().into());
    }
    let client: Option<String> = row.get(3);
    let issued = insert(&tx, user, session, tenant, client.as_deref(), now).await?;
    tx.commit().await?;
    Ok(Rotated {
        user,
        tenant,
        issued,
    })
}

/// Ends the session a refresh token belongs to (logout), its access tokens included. Unknown
/// tokens are ignored.
pub async fn end_session(db: &Database, token: &str, now: DateTime<Utc>) -> Result<()> {
    let tx = db.begin(Scope::anonymous()).await?;
    let ended = tx
        .query_opt(
            "WITH ended AS (
                UPDATE user_service.refresh_tokens SET revoked = true, revoked_at = $2
                WHERE NOT revoked AND session_id = (SELECT session_id FROM user_service.refresh_tokens WHERE token_hash = $1)
                RETURNING user_id, session_id)
             SELECT user_id, session_id FROM ended LIMIT 1",
            &[&hash(token), &now],
        )
        .await?;
    if let Some(row) = ended {
        revocations::sessions(&tx, UserId(row.get(0)), &[row.get(1)]).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// A session as its owner sees it on their profile.
#[derive(Clone, Debug)]
pub struct SessionInfo {
    pub id: Uuid,
    /// What started it (a User-Agent), when known.
    pub client: Option<String>,
    /// The oldest token of its chain still stored: when it was signed in, unless that is
    /// older than the tokens' lifetime.
    pub started_at: DateTime<Utc>,
    /// Its last refresh (or its start).
    pub last_used_at: DateTime<Utc>,
    /// When it ends unless refreshed again.
    pub expires_at: DateTime<Utc>,
}

/// The user's active sessions, the most recently used first.
pub async fn list(db: &Database, user: UserId, now: DateTime<Utc>) -> Result<Vec<SessionInfo>> {
    let tx = db.begin(Scope::user(user)).await?;
    let rows = tx
        .query(
            "SELECT a.session_id, a.client, a.expires_at, a.created_at,
                    (SELECT min(s.created_at) FROM user_service.refresh_tokens s
                      WHERE s.session_id = a.session_id AND s.user_id = a.user_id)
             FROM user_service.refresh_tokens a
             WHERE a.user_id = $1 AND NOT a.revoked AND a.expires_at > $2
             ORDER BY a.created_at DESC, a.id DESC",
            &[&user.as_uuid(), &now],
        )
        .await?;
    tx.commit().await?;
    Ok(rows
        .iter()
        .map(|r| SessionInfo {
            id: r.get(0),
            client: r.get(1),
            expires_at: r.get(2),
            last_used_at: r.get(3),
            started_at: r.get::<_, Option<DateTime<Utc>>>(4).unwrap_or(r.get(3)),
        })
        .collect())
}

/// Ends one session of the user, its access tokens included (signing out another device).
/// Not found when it is not theirs or has ended already.
pub async fn end_one(db: &Database, user: UserId, session: Uuid, now: DateTime<Utc>) -> Result<()> {
    let tx = db.begin(Scope::user(user)).await?;
    let ended = tx
        .execute(
            "UPDATE user_service.refresh_tokens SET revoked = true, revoked_at = $3
             WHERE user_id = $1 AND session_id = $2 AND NOT revoked AND expires_at > $3",
            &[&user.as_uuid(), &session, &now],
        )
        .await?;
    if ended == 0 {
        return Err(Refusal::not_found().into());
    }
    revocations::sessions(&tx, user, &[session]).await?;
    tx.commit().await?;
    Ok(())
}

/// Ends every session of a user and every access token they hold, inside a larger change.
pub async fn end_all(tx: &Tx, user: UserId, now: DateTime<Utc>) -> Result<()> {
    tx.execute(
        "UPDATE user_service.refresh_tokens SET revoked = true, revoked_at = $2 WHERE user_id = $1 AND NOT revoked",
        &[&user.as_uuid(), &now],
    )
    .await?;
    revocations::user(tx, user).await
}

/// Remembers the organization a session switched to, so refreshing keeps it.
pub async fn set_tenant(
    db: &Database,
    user: UserId,
    session: Uuid,
    tenant: TenantId,
) -> Result<()> {
    let client = db.client().await?;
    client
        .execute(
            "UPDATE user_service.refresh_tokens SET organization_id = $3 WHERE session_id = $2 AND user_id = $1 AND NOT revoked",
            &[&user.as_uuid(), &session, &tenant.as_uuid()],
        )
        .await?;
    Ok(())
}

/// Active sessions of a user.
pub async fn active_count(db: &Database, user: UserId, now: DateTime<Utc>) -> Result<i64> {
    let client = db.client().await?;
    Ok(client
        .query_one(
            "SELECT count(*) FROM user_service.refresh_tokens WHERE user_id = $1 AND NOT revoked AND expires_at > $2",
            &[&user.as_uuid(), &now],
        )
        .await?
        .get(0))
}

/// The hourly cleanup: deletes expired refresh tokens, spent mail tokens and old revocations.
/// Returns the number of refresh tokens deleted.
pub async fn purge_expired(db: &Database, now: DateTime<Utc>) -> Result<u64> {
    let client = db.client().await?;
    let n = client
        .execute(
            "DELETE FROM user_service.refresh_tokens WHERE expires_at <= $1",
            &[&now],
        )
        .await?;
    client
        .execute(
            "DELETE FROM user_service.verification_tokens WHERE expires_at <= $1::timestamptz - interval '1 day'",
            &[&now],
        )
        .await?;
    client
        .execute(
            "DELETE FROM user_service.mail_requests WHERE created_at <= $1::timestamptz - interval '1 day'",
            &[&now],
        )
        .await?;
    // Kept a day although a token lifetime would do: a gateway that was away reads them back.
    revocations::purge(db, now - chrono::Duration::days(1)).await?;
    Ok(n)
}
