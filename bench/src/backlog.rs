//! What is still to be done downstream of the registrations a benchmark made: the outbox,
//! the broker's deliveries, the notification service's participants and ticket messages, and
//! analytics' records; read by the benchmarks that wait for it (`sustained`, `outside`).

use anyhow::Context;
use domain::analytics::TrackType;
use domain::notifications::Kind as MessageKind;

/// What is still to be done downstream of the registrations.
#[derive(Debug, PartialEq)]
pub struct Backlog {
    pub unpublished: i64,
    pub undelivered: i64,
    pub registrations: i64,
    pub participants: i64,
    pub unsettled_messages: i64,
    pub messages: i64,
    pub analytics: i64,
}

impl Backlog {
    /// Every count, by whole-table reads.
    pub async fn read(db: &tokio_postgres::Client) -> anyhow::Result<Backlog> {
        let row = db
            .query_one(
                "SELECT (SELECT count(*) FROM event_service.outbox WHERE published_at IS NULL),
                        (SELECT count(*) FROM broker.deliveries),
                        (SELECT count(*) FROM event_service.registrations),
                        (SELECT count(*) FROM notification_service.participants),
                        (SELECT count(*) FROM notification_service.messages
                         WHERE kind = $1 AND status IN ('QUEUED', 'SENDING')),
                        (SELECT count(*) FROM notification_service.messages WHERE kind = $1),
                        (SELECT count(*) FROM analytics_service.analytics_events WHERE event_type = $2)",
                &[
                    &MessageKind::RegistrationConfirmed.as_str(),
                    &TrackType::RegistrationCompleted.as_str(),
                ],
            )
            .await
            .context("read the backlog")?;
        Ok(Backlog {
            unpublished: row.get(0),
            undelivered: row.get(1),
            registrations: row.get(2),
            participants: row.get(3),
            unsettled_messages: row.get(4),
            messages: row.get(5),
            analytics: row.get(6),
        })
    }

    /// Whether anything is still on its way, by reads of partial indexes and of the small
    /// deliveries table alone: the whole-table counts of `read` cost the drain they time
    /// (six scans of 600,000 rows a second, on the cores the consumers need).
    pub async fn pending(db: &tokio_postgres::Client) -> anyhow::Result<bool> {
        let row = db
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM event_service.outbox WHERE published_at IS NULL)
                     OR EXISTS (SELECT 1 FROM broker.deliveries)
                     OR EXISTS (SELECT 1 FROM notification_service.messages
                                WHERE status IN ('QUEUED', 'SENDING'))",
                &[],
            )
            .await
            .context("look for what is pending")?;
        Ok(row.get(0))
    }

    /// Whether every registration has gone through every consumer and nothing is left.
    pub fn drained(&self) -> bool {
        self.unpublished == 0
            && self.undelivered == 0
            && self.unsettled_messages == 0
            && self.participants == self.registrations
            && self.messages == self.registrations
            && self.analytics == self.registrations
    }
}
