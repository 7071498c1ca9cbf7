//! The consumer side of exactly-once: a handler claims an event id inside the transaction
//! that applies the event. A redelivered event finds its id taken and changes nothing.

use crate::db::{DbError, Schema, Tx};
use domain::ids::EventId;

/// Claims `event` for `consumer` within `tx`. Returns false when it was already processed,
/// in which case the caller must skip its work (and may simply drop the transaction).
pub async fn claim(
    tx: &Tx,
    schema: Schema,
    consumer: &str,
    event: EventId,
) -> Result<bool, DbError> {
    let inserted = tx
        .execute(
            &format!(
                "INSERT INTO {}.processed_events (consumer, event_id) VALUES ($1, $2)
                 ON CONFLICT DO NOTHING",
                schema.name()
            ),
            &[&consumer, &event.as_uuid()],
        )
        .await?;
    Ok(inserted == 1)
}
