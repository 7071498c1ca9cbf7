//! Users' notification settings: the defaults until a user changes them.

use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::i18n::Lang;
use domain::ids::UserId;
use domain::notifications::Preferences;

/// The settings of `user` (the defaults when never changed).
pub async fn get(db: &Database, user: UserId) -> Result<Preferences> {
    let tx = db.begin(Scope::user(user)).await?;
    let row = tx
        .query_opt(
            "SELECT reminders, changes, waiting_list, receipts, language FROM notification_service.preferences
             WHERE user_id = $1",
            &[&user.as_uuid()],
        )
        .await?;
    tx.commit().await?;
    Ok(row
        .map(|r| Preferences {
            reminders: r.get(0),
            changes: r.get(1),
            waiting_list: r.get(2),
            receipts: r.get(3),
            language: if r.get::<_, String>(4) == "en" {
                Lang::En
            } else {
                Lang::Ru
            },
        })
        .unwrap_or_default())
}

/// Replaces the settings of `user`.
pub async fn put(
    db: &Database,
    user: UserId,
    p: &Preferences,
    now: DateTime<Utc>,
) -> Result<Preferences> {
    let tx = db.begin(Scope::user(user)).await?;
    let language = match p.language {
        Lang::En => "en",
        Lang::Ru => "ru",
    };
    tx.execute(
        "INSERT INTO notification_service.preferences (user_id, reminders, changes, waiting_list, receipts, language, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (user_id) DO UPDATE SET reminders = $2, changes = $3, waiting_list = $4, receipts = $5,
             language = $6, updated_at = $7",
        &[&user.as_uuid(), &p.reminders, &p.changes, &p.waiting_list, &p.receipts, &language, &now],
    )
    .await?;
    tx.commit().await?;
    Ok(p.clone())
}
