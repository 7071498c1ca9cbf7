//! The send queue's storage under a first sale: what the consumer writes for each ticket
//! message, on plans its connection made while the tables were empty.

use crate::support::{TestDb, eventually};
use chrono::Utc;
use domain::ids::{EventId, TenantId, UserId};
use domain::notifications::delivery::SkipReason;
use storage::db::Scope;
use storage::notifications::queue::{self, NewMessage};

/// Rows read by sequential scans and rows inserted, of a table of the notification service.
async fn table_reads(owner: &tokio_postgres::Client, table: &str) -> (i64, i64) {
    let row = owner
        .query_one(
            "SELECT seq_tup_read, n_tup_ins FROM pg_stat_user_tables
             WHERE schemaname = 'notification_service' AND relname = $1",
            &[&table],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

fn message(tenant: TenantId, skip: Option<SkipReason>) -> NewMessage {
    NewMessage {
        tenant_id: Some(tenant),
        user_id: Some(UserId::new()),
        chat_id: skip.is_none().then_some(42),
        kind: "registration.confirmed".into(),
        source_event: Some(EventId::new()),
        text: "Your ticket".into(),
        ticket_code: Some("ABCD2345".into()),
        button: None,
        skip,
    }
}

#[tokio::test]
async fn skipped_messages_are_logged_without_reading_the_messages_on_plans_made_while_empty() {
    let t = TestDb::new().await;
    let owner = t.owner().await;
    // Statistics that say the tables are empty, as on a new installation before its first sale.
    owner.batch_execute("ANALYZE").await.unwrap();
    let mut settings = t.config.database.clone();
    settings.pool_size = 1;
    // One connection, whose plans are made while the tables are empty and kept as they grow.
    let db = storage::db::Database::connect(&settings).unwrap();
    let tenant = TenantId::new();
    // The first registrations come one at a time (a statement is planned afresh for its first
    // five runs on a connection; from the sixth it may keep one plan for good), then the sale
    // grows the tables by batches.
    let sizes = std::iter::repeat_n(1, 6).chain(std::iter::repeat_n(250, 40));
    let (mut skipped, mut queued, mut no_chat) = (Vec::new(), Vec::new(), 0);
    for (batch, size) in sizes.enumerate() {
        // Every fifth message of a batch has a chat and is queued; the others are skipped, as
        // when no bot token is configured or the person never linked a chat.
        let messages: Vec<NewMessage> = (0..size)
            .map(|i| {
                let skip = match (size > 1).then_some((batch + i) % 5) {
                    Some(0) => None,
                    Some(1) => Some(SkipReason::NoChat),
                    _ => Some(SkipReason::BotDisabled),
                };
                no_chat += i64::from(skip == Some(SkipReason::NoChat));
                message(tenant, skip)
            })
            .collect();
        let tx = db.begin(Scope::system()).await.unwrap();
        let written = queue::enqueue(&tx, &messages, Utc::now()).await.unwrap();
        tx.commit().await.unwrap();
        skipped.extend(written.skipped);
        queued.extend(written.queued);
    }
    let total = 6 + 40 * 250;
    assert_eq!(skipped.len() + queued.len(), total as usize);
    assert_eq!(queued.len(), 40 * 250 / 5);
    // A connection that ends reports its statistics.
    drop(db);
    let reported = eventually(15, || async {
        table_reads(&owner, "messages").await.1 == total
    })
    .await;
    assert!(reported, "every message's insert reported");
    let (scanned, _) = table_reads(&owner, "messages").await;
    assert_eq!(scanned, 0, "the messages were read by a sequential scan");
    // Row level security passes for the checks below, whoever the owner is.
    owner.batch_execute("SET app.system = 'on'").await.unwrap();

    // One log row for each skipped message, saying what the message says; none for the queued.
    let mismatched: i64 = owner
        .query_one(
            "SELECT count(*) FROM notification_service.messages m
             FULL JOIN notification_service.send_log l ON l.message_id = m.id
             WHERE m.status = 'SKIPPED' IS DISTINCT FROM (l.id IS NOT NULL)
                OR (l.id IS NOT NULL AND (l.tenant_id IS DISTINCT FROM m.tenant_id
                    OR l.user_id IS DISTINCT FROM m.user_id OR l.chat_id IS DISTINCT FROM m.chat_id
                    OR l.kind <> m.kind OR l.reason IS DISTINCT FROM m.reason
                    OR l.attempt <> 0 OR l.outcome <> 'SKIPPED'))",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(mismatched, 0, "a log row differs from its message");
    let logged: i64 = owner
        .query_one(
            "SELECT count(*) FROM notification_service.send_log WHERE message_id = ANY($1)",
            &[&skipped],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(logged, skipped.len() as i64);
    let logged_no_chat: i64 = owner
        .query_one(
            "SELECT count(*) FROM notification_service.send_log WHERE reason = $1",
            &[&SkipReason::NoChat.as_str()],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(logged_no_chat, no_chat);
    assert_eq!(no_chat, 40 * 250 / 5);
}
