//! What a seat transaction reads before it judges: the locked ticket types with their events,
//! who already holds a registration or belongs to a private event's group, and the earlier
//! answers to the requests' keys. Each is one statement for every ticket type of the
//! transaction, so PostgreSQL plans it once whether the transaction carries one ticket type
//! or a hundred (planning the per-type statement again for every few seats was most of the
//! database's work when many events sold together).

use super::super::registrations::{COLUMN_COUNT, COLUMNS, SUMMARY_COLUMNS, from_row, summary_from};
use super::{SeatBatch, SeatOutcome};
use crate::Tx;
use crate::error::Result;
use domain::contract::events::EventSummary;
use domain::events::lifecycle::EventStatus;
use domain::events::seats::on_sale;
use std::collections::{HashMap, HashSet};
use tokio_postgres::types::ToSql;
use uuid::Uuid;

/// What the transaction read about one ticket type and its event.
pub(super) struct Offer {
    pub event: Uuid,
    pub free: i32,
    pub price: i64,
    pub currency: String,
    pub minutes: Option<i32>,
    pub active: bool,
    pub on_sale: bool,
    pub status: EventStatus,
    pub deleted: bool,
    pub private: bool,
    pub any_holds: bool,
    pub anyone_waiting: bool,
    /// The event's waiting room is open: a seat needs an admission.
    pub waiting_room: bool,
    pub summary: EventSummary,
}

/// Who, among the people asking, already holds an active registration for the event they
/// ask about, and who belongs to its group: pairs of (event, user).
#[derive(Default)]
pub(super) struct People {
    pub registered: HashSet<(Uuid, Uuid)>,
    pub members: HashSet<(Uuid, Uuid)>,
}

/// The earlier answer to a (tenant, user, key): the request's hash and what it got.
pub(super) type Answered = HashMap<(Uuid, Uuid, Uuid), (Vec<u8>, SeatOutcome)>;

/// Everything a transaction reads before judging its batches.
pub(super) struct Read {
    pub offers: Offers,
    pub people: People,
    pub answered: Answered,
    /// Whether the person probe gave the transaction PostgreSQL's own choice of plans back
    /// (the writes then ask for generic plans again).
    pub default_plans: bool,
}

/// Reads, in one round trip of three pipelined statements, what the batches need (`offers`
/// says what is locked and in which order); a ticket type that no longer exists is missing
/// from `offers.types`. Who already holds a registration, and who belongs to a private
/// event's group, is probed in a second round trip only when it can change an answer beyond
/// what the insert learns by itself (`needs_people`).
pub(super) async fn read(tx: &Tx, batches: &[SeatBatch<'_>]) -> Result<Read> {
    let requests = || {
        batches
            .iter()
            .flat_map(|b| b.requests.iter().map(move |r| (b, r)))
    };
    let users: Vec<Uuid> = requests().map(|(_, r)| r.user.as_uuid()).collect();
    let tenants: Vec<Uuid> = requests().map(|(b, _)| b.tenant.as_uuid()).collect();
    let keys: Vec<Uuid> = requests().map(|(_, r)| r.key).collect();
    // Pipelined on one connection: once a statement fails, the ones after it fail with
    // "transaction aborted" (25P02). Waiting for all and taking the first error in statement
    // order keeps the cause (a lost lock race is run again; 25P02 would be a 500).
    let (offers, answered) =
        tokio::join!(offers(tx, batches), answered(tx, &tenants, &users, &keys));
    let (offers, answered) = (offers?, answered?);
    let default_plans = needs_people(batches, &offers);
    let people = if default_plans {
        let events: Vec<Uuid> = requests().map(|(_, r)| r.event).collect();
        // PostgreSQL's own choice of plan: a generic plan made while a sale's table is nearly
        // empty probes people by event alone (docs/decisions.md). Pipelined with the probe.
        let default = async {
            tx.batch_execute("SET LOCAL plan_cache_mode TO auto")
                .await
                .map_err(crate::Error::from)
        };
        let (default, people) = tokio::join!(biased; default, people(tx, &events, &users));
        default?;
        people?
    } else {
        People::default()
    };
    Ok(Read {
        offers,
        people,
        answered,
        default_plans,
    })
}

/// What a transaction read about one event.
struct EventRow {
    status: EventStatus,
    deleted: bool,
    private: bool,
    anyone_waiting: bool,
    waiting_room: bool,
    summary: EventSummary,
}

/// Locks the events the requests name (`FOR KEY SHARE`, so none is deleted meanwhile), then
/// their ticket types (`FOR UPDATE`), each in id order: the one lock order (events, their
/// ticket types, then registrations and waiting-list entries; docs/decisions.md), which every
/// organizer's change and cancellation follows too, so none of them can deadlock a batch.
/// Each is a statement over one table: joined, the planner's estimate under row level security
/// (one event) made a generic plan scan every event and probe the ticket types once per event.
async fn offers(tx: &Tx, batches: &[SeatBatch<'_>]) -> Result<Offers> {
    let types: Vec<Uuid> = batches.iter().map(|b| b.ticket_type).collect();
    let mut events: Vec<Uuid> = batches
        .iter()
        .flat_map(|b| b.requests.iter().map(|r| r.event))
        .collect();
    events.sort_unstable();
    events.dedup();
    let events_sql = format!(
        "SELECT e.id, e.status, e.deleted_at IS NOT NULL, e.group_id IS NOT NULL,
            EXISTS (SELECT 1 FROM event_service.waiting_list w WHERE w.event_id = e.id AND w.status = 'WAITING'),
            e.waiting_room, {SUMMARY_COLUMNS}
         FROM event_service.events e WHERE e.id = ANY($1::uuid[])
         ORDER BY e.id FOR KEY SHARE"
    );
    let types_sql = "SELECT t.id, t.event_id, t.quantity - t.sold_count - t.reserved_count, t.price_cents,
            t.currency, t.reservation_minutes, t.is_active, t.sales_start, t.sales_end,
            EXISTS (SELECT 1 FROM event_service.waiting_list w WHERE w.ticket_type_id = t.id AND w.status = 'NOTIFIED')
         FROM event_service.ticket_types t WHERE t.id = ANY($1::uuid[])
         ORDER BY t.id FOR UPDATE";
    let (events_stmt, types_stmt) =
        tokio::try_join!(tx.prepare_cached(&events_sql), tx.prepare_cached(types_sql))?;
    // Sent in this order on one connection, so the events are locked first.
    let (event_rows, type_rows) =
        tokio::join!(async { tx.query(&events_stmt, &[&events]).await }, async {
            tx.query(&types_stmt, &[&types]).await
        },);
    let (event_rows, type_rows) = (event_rows?, type_rows?);
    let read_events: HashMap<Uuid, EventRow> = event_rows
        .iter()
        .map(|row| {
            let id: Uuid = row.get(0);
            let event = EventRow {
                status: row
                    .get::<_, String>(1)
                    .parse()
                    .unwrap_or(EventStatus::Cancelled),
                deleted: row.get(2),
                private: row.get(3),
                anyone_waiting: row.get(4),
                waiting_room: row.get(5),
                summary: summary_from(row, id, 6),
            };
            (id, event)
        })
        .collect();
    // Each batch is judged at its own time.
    let now_of: HashMap<Uuid, _> = batches.iter().map(|b| (b.ticket_type, b.now)).collect();
    let mut offers = Offers::default();
    for row in &type_rows {
        let ticket_type: Uuid = row.get(0);
        offers.types.insert(ticket_type);
        let event: Uuid = row.get(1);
        let (Some(now), Some(read)) = (now_of.get(&ticket_type), read_events.get(&event)) else {
            // No request named the type's own event: each will be told it is not found.
            continue;
        };
        offers.offers.insert(
            ticket_type,
            Offer {
                event,
                free: row.get::<_, i32>(2).max(0),
                price: row.get(3),
                currency: row.get(4),
                minutes: row.get(5),
                active: row.get(6),
                on_sale: on_sale(row.get(6), row.get(7), row.get(8), *now),
                status: read.status,
                deleted: read.deleted,
                private: read.private,
                any_holds: row.get(9),
                anyone_waiting: read.anyone_waiting,
                waiting_room: read.waiting_room,
                summary: read.summary.clone(),
            },
        );
    }
    Ok(offers)
}

/// Whether judging needs to know who is already registered or a group member before seats
/// are handed out. Without it, a person already registered is still refused: the insert skips
/// their row on the one-active-registration index and they are answered ALREADY_REGISTERED;
/// only the seat they were counted for is then not offered to someone later in the same batch,
/// which matters only when the batch asks for more seats than are free. So the probe runs for
/// a private event (membership decides visibility), a type with waiting-list holds (a held
/// seat goes to its holder, registered or not) and a batch that may sell the type out.
fn needs_people(batches: &[SeatBatch<'_>], offers: &Offers) -> bool {
    batches.iter().any(|batch| {
        offers.offers.get(&batch.ticket_type).is_some_and(|offer| {
            offer.private
                || offer.any_holds
                || batch.requests.len() > usize::try_from(offer.free).unwrap_or(0)
        })
    })
}

/// The ticket types that exist, and the offers of those whose event a request named.
#[derive(Default)]
pub(super) struct Offers {
    pub types: HashSet<Uuid>,
    pub offers: HashMap<Uuid, Offer>,
}

async fn people(tx: &Tx, events: &[Uuid], users: &[Uuid]) -> Result<People> {
    if users.is_empty() {
        return Ok(People::default());
    }
    // Each probe is LATERAL … LIMIT 1 so it stays an index probe of one (event, user) pair:
    // during a burst the planner's statistics still describe empty events and might
    // otherwise read all of an event's registrations for every person. The probes read the
    // statement's snapshot; a registration committed elsewhere meanwhile is still refused by
    // the unique index, whose conflict the insert skips (the request is then answered
    // ALREADY_REGISTERED).
    // Planned for each batch, never cached: a connection's cached plan is fixed on its sixth
    // use, which in a fresh sale is while the registrations are few, and PostgreSQL then
    // probed the (event, created) index and filtered an event's every registration for each
    // person — 450 ms a batch at 30,000 registrations, with a connection pool that reuses the
    // same connections (bench/README.md). The plan made with the table's present size takes the
    // (event, user) index; planning costs one round trip per batch.
    let sql = "SELECT u.event_id, u.user_id, reg.yes IS NOT NULL, mem.yes IS NOT NULL
             FROM UNNEST($1::uuid[], $2::uuid[]) AS u(event_id, user_id)
             LEFT JOIN LATERAL (SELECT true AS yes FROM event_service.registrations r
                 WHERE r.event_id = u.event_id AND r.user_id = u.user_id
                   AND r.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN') LIMIT 1) reg ON true
             LEFT JOIN LATERAL (SELECT true AS yes FROM event_service.events e
                 JOIN event_service.group_members m ON m.group_id = e.group_id AND m.user_id = u.user_id
                 WHERE e.id = u.event_id LIMIT 1) mem ON true
             WHERE reg.yes OR mem.yes";
    let params: [&(dyn ToSql + Sync); 2] = [&events, &users];
    let mut people = People::default();
    for row in tx.query(sql, &params).await? {
        let pair = (row.get(0), row.get(1));
        if row.get(2) {
            people.registered.insert(pair);
        }
        if row.get(3) {
            people.members.insert(pair);
        }
    }
    Ok(people)
}

async fn answered(tx: &Tx, tenants: &[Uuid], users: &[Uuid], keys: &[Uuid]) -> Result<Answered> {
    if users.is_empty() {
        return Ok(Answered::new());
    }
    // Both lookups are LATERAL … LIMIT 1, probes by key for each answer: joined, a plan made
    // while the registrations were few could hash the whole table for every batch.
    let sql = format!(
        "SELECT {COLUMNS}, u.tenant_id, s.user_id, s.key, s.request_hash, s.outcome, s.registration_id IS NOT NULL
         FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[]) AS u(tenant_id, user_id, key)
         CROSS JOIN LATERAL (SELECT * FROM event_service.seat_requests s
             WHERE s.tenant_id = u.tenant_id AND s.user_id = u.user_id AND s.key = u.key LIMIT 1) s
         LEFT JOIN LATERAL (SELECT * FROM event_service.registrations r
             WHERE r.id = s.registration_id LIMIT 1) r ON true"
    );
    let stmt = tx.prepare_cached(&sql).await?;
    let params: [&(dyn ToSql + Sync); 3] = [&tenants, &users, &keys];
    Ok(tx
        .query(&stmt, &params)
        .await?
        .iter()
        .map(|r| {
            let at = COLUMN_COUNT;
            let outcome = if r.get::<_, bool>(at + 5) {
                SeatOutcome::Created(Box::new(from_row(r)))
            } else {
                r.get::<_, String>(at + 4)
                    .parse()
                    .map(SeatOutcome::Refused)
                    .unwrap_or(SeatOutcome::NotFound)
            };
            (
                (r.get(at), r.get(at + 1), r.get(at + 2)),
                (r.get(at + 3), outcome),
            )
        })
        .collect())
}
