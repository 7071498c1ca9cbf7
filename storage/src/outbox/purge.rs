//! Forgetting published events once nobody will look at them again.

use crate::db::{Database, DbError, Schema};
use chrono::{DateTime, Utc};

/// How long a published event is kept for inspection.
pub const KEEP_PUBLISHED: chrono::Duration = chrono::Duration::days(7);

/// Rows one statement deletes: an on-sale day is millions of them, and one statement for all
/// would hold its locks and write one huge WAL record.
const SLICE: i64 = 10_000;

/// Deletes the events of `schema` published before `before`, slice by slice. An event's id is
/// a v7 id minted before it was written, and it is published after that, so every row to
/// delete sorts below the floor of `before`: each slice reads that range of the id index
/// rather than every row of the table, whatever the history kept.
pub async fn purge_published(
    db: &Database,
    schema: Schema,
    before: DateTime<Utc>,
) -> Result<u64, DbError> {
    let client = db.client().await?;
    let sql = format!(
        "DELETE FROM {s}.outbox WHERE seq = ANY(ARRAY(
            SELECT seq FROM {s}.outbox WHERE id < $1 AND published_at < $2 ORDER BY id LIMIT $3))",
        s = schema.name()
    );
    let floor = domain::ids::v7_floor(before);
    let mut purged = 0;
    loop {
        let n = client.execute(&sql, &[&floor, &before, &SLICE]).await?;
        purged += n;
        if n < SLICE as u64 {
            return Ok(purged);
        }
    }
}
