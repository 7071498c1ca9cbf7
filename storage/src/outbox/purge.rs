//! The outbox's days: each UTC day of events has a table of its own (partitions of the outbox
//! on its v7 ids, migration `outbox_by_day`), made ahead of the day, and dropped whole once
//! everything in it has been published for a week.

use crate::db::{Database, DbError, Schema};
use chrono::{DateTime, Utc};

/// How long a published event is kept for inspection.
pub const KEEP_PUBLISHED: chrono::Duration = chrono::Duration::days(7);

/// How far ahead the days' tables are made: a maintenance round that fails or is late by a day
/// still finds tomorrow's table there.
pub const DAYS_AHEAD: chrono::Duration = chrono::Duration::days(2);

/// Rows one statement deletes from the default table: one statement for all would hold its
/// locks and write one huge WAL record.
const SLICE: i64 = 10_000;

/// Makes the tables of the days from `now` to `DAYS_AHEAD` after it that have none; returns
/// how many were made. A day whose table cannot be had now (its lock busy, rows of it already
/// in the default table) is left for the next round; its rows go to the default table.
pub async fn prepare_days(
    db: &Database,
    schema: Schema,
    now: DateTime<Utc>,
) -> Result<u64, DbError> {
    let client = db.client().await?;
    let made: i32 = client
        .query_one(
            &format!("SELECT {}.outbox_cover($1, $2)", schema.name()),
            &[&now, &(now + DAYS_AHEAD)],
        )
        .await?
        .get(0);
    Ok(u64::try_from(made).unwrap_or(0))
}

/// Forgets the events of `schema` published before `before`: drops the table of every day that
/// ended before it and holds nothing unpublished or published since, then deletes such events
/// from the default table (the events no day's table took) slice by slice. Returns how many
/// events went. A day with one event kept stays whole until that one may go too.
pub async fn purge_published(
    db: &Database,
    schema: Schema,
    before: DateTime<Utc>,
) -> Result<u64, DbError> {
    let s = schema.name();
    let client = db.client().await?;
    let dropped: i64 = client
        .query_one(&format!("SELECT {s}.outbox_drop_published($1)"), &[&before])
        .await?
        .get(0);
    // An event's id is a v7 id minted before it was written and published, so every row to
    // delete sorts below the floor of `before`: each slice reads that range of the id index.
    let sql = format!(
        "DELETE FROM {s}.outbox_default WHERE id = ANY(ARRAY(
            SELECT id FROM {s}.outbox_default WHERE id < $1 AND published_at < $2 ORDER BY id LIMIT $3))"
    );
    let floor = domain::ids::v7_floor(before);
    let mut purged = u64::try_from(dropped).unwrap_or(0);
    loop {
        let n = client.execute(&sql, &[&floor, &before, &SLICE]).await?;
        purged += n;
        if n < SLICE as u64 {
            return Ok(purged);
        }
    }
}
