//! Taking seats: the group commit behind `POST /events/{id}/registrations`. A batch of
//! requests for one ticket type is judged against one locked ticket-type row and written in
//! one transaction, together with each request's idempotency record, so a request costs no
//! statement of its own: visibility, sales window, earlier answers to the same key, who is
//! already registered and how many seats are free are all read in the batch's first round trip.

use super::registrations::{
    COLUMN_COUNT, COLUMNS, Registration, SUMMARY_COLUMNS, from_row, payload, summary_from,
};
use crate::cluster::Fence;
use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::EventSummary;
use domain::envelope::Envelope;
use domain::error::Refusal;
use domain::events::lifecycle::EventStatus;
use domain::events::registrations::{RegistrationStatus, Seat, confirmation_code};
use domain::events::seats::{SeatRefusal, Viewer, on_sale, type_offered, visible};
use domain::ids::{TenantId, UserId};
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// One person asking for a seat.
#[derive(Clone, Debug)]
pub struct SeatRequest {
    /// The event named in the request's path; the ticket type must belong to it.
    pub event: Uuid,
    /// Who.
    pub user: UserId,
    /// The organization the caller acts for (staff see their own unpublished events).
    pub caller_tenant: Option<TenantId>,
    /// The caller's `X-Idempotency-Key`.
    pub key: Uuid,
    /// A hash of everything the request asks for; the same key with another hash is refused.
    pub request_hash: Vec<u8>,
    /// Email.
    pub email: Option<String>,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Answers to the organizer's questions.
    pub custom_fields: serde_json::Value,
    /// Where the person came from (a short slug), if the client said.
    pub source: Option<String>,
}

/// The answer to one seat request.
#[derive(Clone, Debug, PartialEq)]
pub enum SeatOutcome {
    /// Registered.
    Created(Box<Registration>),
    /// Judged and refused.
    Refused(SeatRefusal),
    /// The caller cannot see the event, or the ticket type is not one of the event's.
    NotFound,
    /// The key was used before for a different request.
    KeyReused,
    /// The same key and request were judged before; this is what they got.
    Replayed(Box<SeatOutcome>),
}

impl SeatOutcome {
    /// The stored name and registration of an outcome worth remembering for its key.
    fn record(&self) -> Option<(&'static str, Option<Uuid>)> {
        match self {
            SeatOutcome::Created(r) => Some(("CREATED", Some(r.id))),
            SeatOutcome::Refused(refusal) => Some((refusal.as_str(), None)),
            _ => None,
        }
    }
}

/// The tenant owning a ticket type (an actor learns it once when it starts).
pub async fn owner(db: &Database, ticket_type: Uuid) -> Result<Option<TenantId>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT tenant_id FROM event_service.ticket_types WHERE id = $1",
            &[&ticket_type],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| TenantId(r.get(0))))
}

/// What the batch read about the ticket type and its event.
struct Offer {
    event: Uuid,
    free: i32,
    price: i64,
    currency: String,
    minutes: Option<i32>,
    active: bool,
    on_sale: bool,
    status: EventStatus,
    deleted: bool,
    private: bool,
    any_holds: bool,
    anyone_waiting: bool,
    registered: HashSet<Uuid>,
    group_members: HashSet<Uuid>,
    summary: EventSummary,
}

/// One ticket type's batch of seat requests, for `commit_batches`.
pub struct SeatBatch<'a> {
    /// The tenant owning the ticket type.
    pub tenant: TenantId,
    /// The ticket type.
    pub ticket_type: Uuid,
    /// The requests, in arrival order.
    pub requests: &'a [SeatRequest],
    /// The time the batch is judged at.
    pub now: DateTime<Utc>,
}

/// Judges and writes a batch of seat requests for one ticket type in one transaction of five
/// round trips: open; lock-and-read (pipelined with the earlier answers to the batch's keys
/// and the check of the event shard's lease); insert-and-count (pipelined with the
/// idempotency records); outbox; commit. A node whose lease moved on writes nothing
/// (`Error::Fenced`).
pub async fn commit_batch(
    db: &Database,
    fence: &Fence,
    tenant: TenantId,
    ticket_type: Uuid,
    requests: &[SeatRequest],
    now: DateTime<Utc>,
) -> Result<Vec<SeatOutcome>> {
    let tx = db.begin(Scope::tenant(tenant, None)).await?;
    let batch = SeatBatch {
        tenant,
        ticket_type,
        requests,
        now,
    };
    let (written, ()) = tokio::try_join!(write(&tx, &batch), fence.check(&tx))?;
    crate::outbox::enqueue_many(&tx, crate::Schema::EventService, &written.events).await?;
    tx.commit().await?;
    Ok(written.finish())
}

/// Judges and writes the batches of several ticket types in one transaction: their statements
/// are pipelined side by side, so a transaction costs the same round trips, one lease check
/// and one commit whether it carries one ticket type's batch or a hundred (each batch still
/// runs its own statements). The transaction acts as the system because its batches may
/// belong to several organizations; every statement names its ticket type and tenant. Any
/// failure fails them all (the caller then commits each batch alone to learn whose it was);
/// the batches must be of different ticket types.
pub async fn commit_batches(
    db: &Database,
    fence: &Fence,
    batches: &[SeatBatch<'_>],
) -> Result<Vec<Vec<SeatOutcome>>> {
    let tx = db.begin(Scope::system()).await?;
    // Row locks are taken in ticket-type order whatever order the batches came in, so two
    // such transactions cannot wait on each other in a cycle.
    let mut order: Vec<usize> = (0..batches.len()).collect();
    order.sort_by_key(|&i| batches[i].ticket_type);
    let writes = futures_util::future::try_join_all(order.iter().map(|&i| write(&tx, &batches[i])));
    let (written, ()) = tokio::try_join!(writes, fence.check(&tx))?;
    let events: Vec<Envelope> = written
        .iter()
        .flat_map(|w| w.events.iter().cloned())
        .collect();
    crate::outbox::enqueue_many(&tx, crate::Schema::EventService, &events).await?;
    tx.commit().await?;
    let mut outcomes: Vec<Option<Vec<SeatOutcome>>> = (0..batches.len()).map(|_| None).collect();
    for (i, w) in order.into_iter().zip(written) {
        outcomes[i] = Some(w.finish());
    }
    Ok(outcomes
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect())
}

/// A batch judged and written inside a transaction that has not committed yet.
struct Written {
    verdicts: Vec<Verdict>,
    chosen: Vec<(usize, Uuid, String)>,
    created: HashMap<Uuid, Registration>,
    /// The announcements of the registrations, for the transaction's outbox.
    events: Vec<Envelope>,
}

impl Written {
    /// The answers, once the transaction committed: seats become registrations, and a repeat
    /// of a key inside the batch gets its first answer.
    fn finish(mut self) -> Vec<SeatOutcome> {
        let mut seat_of: HashMap<usize, Uuid> =
            self.chosen.iter().map(|(i, id, _)| (*i, *id)).collect();
        let mut finals: Vec<SeatOutcome> = Vec::with_capacity(self.verdicts.len());
        for (i, verdict) in self.verdicts.into_iter().enumerate() {
            finals.push(match verdict {
                Verdict::Done(outcome) => outcome,
                Verdict::Seat => seat_of
                    .remove(&i)
                    .and_then(|id| self.created.remove(&id))
                    .map(|r| SeatOutcome::Created(Box::new(r)))
                    .unwrap_or(SeatOutcome::Refused(SeatRefusal::SoldOut)),
                Verdict::RepeatOf(j) => match &finals[j] {
                    replayed @ SeatOutcome::Replayed(_) => replayed.clone(),
                    first => SeatOutcome::Replayed(Box::new(first.clone())),
                },
            });
        }
        finals
    }
}

/// Judges one ticket type's batch against its locked row and writes its registrations, seat
/// counts and idempotency records in `tx` (announcements are left to the caller's outbox
/// write).
async fn write(tx: &crate::Tx, batch: &SeatBatch<'_>) -> Result<Written> {
    let SeatBatch {
        tenant,
        ticket_type,
        requests,
        now,
    } = *batch;
    let users: Vec<Uuid> = requests.iter().map(|r| r.user.as_uuid()).collect();
    let keys: Vec<Uuid> = requests.iter().map(|r| r.key).collect();
    // Lookups per user go through LATERAL ... LIMIT 1 so each one is an index probe: during a
    // burst the planner's statistics still describe an empty event and would scan all of
    // its registrations for every batch. The subqueries read the statement's snapshot; a registration committed elsewhere in
    // the meantime is still refused by the unique index, and the batch is then retried one
    // request at a time.
    let offer_sql = format!(
        "SELECT t.event_id, t.quantity - t.sold_count - t.reserved_count, t.price_cents, t.currency,
            t.reservation_minutes, t.is_active, t.sales_start, t.sales_end,
            e.status, e.deleted_at IS NOT NULL, e.group_id IS NOT NULL,
            EXISTS (SELECT 1 FROM event_service.waiting_list w WHERE w.ticket_type_id = t.id AND w.status = 'NOTIFIED'),
            EXISTS (SELECT 1 FROM event_service.waiting_list w WHERE w.event_id = t.event_id AND w.status = 'WAITING'),
            ARRAY(SELECT u.id FROM UNNEST($2::uuid[]) AS u(id) CROSS JOIN LATERAL (
                    SELECT 1 FROM event_service.registrations r WHERE r.event_id = t.event_id AND r.user_id = u.id
                    AND r.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN') LIMIT 1) active),
            ARRAY(SELECT m.user_id FROM event_service.group_members m WHERE m.group_id = e.group_id AND m.user_id = ANY($2)),
            {SUMMARY_COLUMNS}
         FROM event_service.ticket_types t JOIN event_service.events e ON e.id = t.event_id
         WHERE t.id = $1 FOR UPDATE OF t FOR KEY SHARE OF e"
    );
    let answered_sql = format!(
        "SELECT {COLUMNS}, s.user_id, s.key, s.request_hash, s.outcome, s.registration_id IS NOT NULL
         FROM UNNEST($2::uuid[], $3::uuid[]) AS u(user_id, key)
         CROSS JOIN LATERAL (SELECT * FROM event_service.seat_requests s
             WHERE s.tenant_id = $1 AND s.user_id = u.user_id AND s.key = u.key LIMIT 1) s
         LEFT JOIN event_service.registrations r ON r.id = s.registration_id"
    );
    let (offer_stmt, answered_stmt) = tokio::try_join!(
        tx.prepare_cached(&offer_sql),
        tx.prepare_cached(&answered_sql)
    )?;
    let tenant_id = tenant.as_uuid();
    let offer_params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] = [&ticket_type, &users];
    let answered_params: [&(dyn tokio_postgres::types::ToSql + Sync); 3] =
        [&tenant_id, &users, &keys];
    let (offer_row, answered_rows) = tokio::try_join!(
        async {
            tx.query_opt(&offer_stmt, &offer_params)
                .await
                .map_err(crate::Error::from)
        },
        async {
            tx.query(&answered_stmt, &answered_params)
                .await
                .map_err(crate::Error::from)
        },
    )?;
    let row = offer_row.ok_or_else(Refusal::not_found)?;
    let event: Uuid = row.get(0);
    let offer = Offer {
        event,
        free: row.get::<_, i32>(1).max(0),
        price: row.get(2),
        currency: row.get(3),
        minutes: row.get(4),
        active: row.get(5),
        on_sale: on_sale(row.get(5), row.get(6), row.get(7), now),
        status: row
            .get::<_, String>(8)
            .parse()
            .unwrap_or(EventStatus::Cancelled),
        deleted: row.get(9),
        private: row.get(10),
        any_holds: row.get(11),
        anyone_waiting: row.get(12),
        registered: row.get::<_, Vec<Uuid>>(13).into_iter().collect(),
        group_members: row.get::<_, Vec<Uuid>>(14).into_iter().collect(),
        summary: summary_from(&row, event, 15),
    };
    let answered: HashMap<(Uuid, Uuid), (Vec<u8>, SeatOutcome)> = answered_rows
        .iter()
        .map(|r| {
            let at = COLUMN_COUNT;
            let outcome = if r.get::<_, bool>(at + 4) {
                SeatOutcome::Created(Box::new(from_row(r)))
            } else {
                r.get::<_, String>(at + 3)
                    .parse()
                    .map(SeatOutcome::Refused)
                    .unwrap_or(SeatOutcome::NotFound)
            };
            ((r.get(at), r.get(at + 1)), (r.get(at + 2), outcome))
        })
        .collect();

    let mut verdicts = judge(tenant, requests, &offer, &answered);

    // People holding a seat from the waiting list get it back for their own registration.
    let seekers: Vec<Uuid> = verdicts
        .iter()
        .zip(requests)
        .filter(|(o, _)| matches!(o, Verdict::Seat))
        .map(|(_, r)| r.user.as_uuid())
        .collect();
    let holders: HashSet<Uuid> = if offer.any_holds && !seekers.is_empty() {
        super::waitlist::convert_holds(tx, ticket_type, &seekers, now)
            .await?
            .into_iter()
            .collect()
    } else {
        HashSet::new()
    };
    // A held seat goes to its holder only; everyone else shares what is free.
    let mut free = offer.free;
    let mut chosen: Vec<(usize, Uuid, String)> = Vec::new();
    for (i, verdict) in verdicts.iter_mut().enumerate() {
        if !matches!(verdict, Verdict::Seat) {
            continue;
        }
        if !holders.contains(&requests[i].user.as_uuid()) {
            if free == 0 {
                *verdict = Verdict::Done(SeatOutcome::Refused(SeatRefusal::SoldOut));
                continue;
            }
            free -= 1;
        }
        chosen.push((i, Uuid::now_v7(), confirmation_code(rand::random())));
    }

    let status = RegistrationStatus::initial(offer.price, offer.minutes);
    let expires_at = status.deadline(offer.minutes, now);
    let mut created: HashMap<Uuid, Registration> = HashMap::new();
    let mut events = Vec::new();
    let mut records = Records::default();
    for (i, verdict) in verdicts.iter().enumerate() {
        if let Verdict::Done(outcome) = verdict
            && let Some((name, _)) = outcome.record()
        {
            records.push(&requests[i], name, None);
        }
    }
    for (i, id, _) in &chosen {
        records.push(&requests[*i], "CREATED", Some(*id));
    }
    if chosen.is_empty() {
        records.insert(tx, tenant).await?;
    } else {
        let rows = insert(
            tx,
            tenant,
            ticket_type,
            &offer,
            status,
            expires_at,
            now,
            requests,
            &chosen,
        );
        let (rows, ()) = tokio::try_join!(rows, records.insert(tx, tenant))?;
        for row in &rows {
            let registration = from_row(row);
            events.push(Envelope::of(
                &DomainEvent::RegistrationCreated(payload(&registration, &offer.summary)),
                Some(tenant),
                Some(registration.user_id),
            ));
            created.insert(registration.id, registration);
        }
        if offer.anyone_waiting {
            // Registering ends one's wait for the event's other ticket types.
            let registered: Vec<Uuid> = created.values().map(|r| r.user_id.as_uuid()).collect();
            super::waitlist::close_for(tx, offer.event, &registered).await?;
        }
    }
    Ok(Written {
        verdicts,
        chosen,
        created,
        events,
    })
}

/// The judgement of one request before seats are handed out.
enum Verdict {
    /// Decided.
    Done(SeatOutcome),
    /// Eligible for a seat.
    Seat,
    /// The same key and request as an earlier request of the batch.
    RepeatOf(usize),
}

/// Applies the seat rules to each request in arrival order, except the counting of seats.
fn judge(
    tenant: TenantId,
    requests: &[SeatRequest],
    offer: &Offer,
    answered: &HashMap<(Uuid, Uuid), (Vec<u8>, SeatOutcome)>,
) -> Vec<Verdict> {
    let mut registered = offer.registered.clone();
    let mut first_use: HashMap<(Uuid, Uuid), (usize, &[u8])> = HashMap::new();
    let mut verdicts = Vec::with_capacity(requests.len());
    for (i, request) in requests.iter().enumerate() {
        let user = request.user.as_uuid();
        let key = (user, request.key);
        if let Some((j, hash)) = first_use.get(&key) {
            verdicts.push(if *hash == request.request_hash.as_slice() {
                Verdict::RepeatOf(*j)
            } else {
                Verdict::Done(SeatOutcome::KeyReused)
            });
            continue;
        }
        if let Some((hash, outcome)) = answered.get(&key) {
            verdicts.push(Verdict::Done(if *hash == request.request_hash {
                SeatOutcome::Replayed(Box::new(outcome.clone()))
            } else {
                SeatOutcome::KeyReused
            }));
            continue;
        }
        first_use.insert(key, (i, request.request_hash.as_slice()));
        let viewer = Viewer {
            same_tenant: request.caller_tenant == Some(tenant),
            in_group: offer.group_members.contains(&user),
        };
        let verdict = if request.event != offer.event
            || !visible(offer.status, offer.deleted, offer.private, viewer)
            || !type_offered(offer.active, viewer)
        {
            Verdict::Done(SeatOutcome::NotFound)
        } else if offer.status != EventStatus::Published {
            Verdict::Done(SeatOutcome::Refused(SeatRefusal::NotPublished))
        } else if !offer.on_sale {
            Verdict::Done(SeatOutcome::Refused(SeatRefusal::NotOnSale))
        } else if !registered.insert(user) {
            Verdict::Done(SeatOutcome::Refused(SeatRefusal::AlreadyRegistered))
        } else {
            Verdict::Seat
        };
        verdicts.push(verdict);
    }
    verdicts
}

/// The idempotency records of a batch, written as arrays in one statement.
#[derive(Default)]
struct Records<'a> {
    users: Vec<Uuid>,
    keys: Vec<Uuid>,
    hashes: Vec<&'a [u8]>,
    outcomes: Vec<&'static str>,
    registrations: Vec<Option<Uuid>>,
}

impl<'a> Records<'a> {
    fn push(
        &mut self,
        request: &'a SeatRequest,
        outcome: &'static str,
        registration: Option<Uuid>,
    ) {
        self.users.push(request.user.as_uuid());
        self.keys.push(request.key);
        self.hashes.push(&request.request_hash);
        self.outcomes.push(outcome);
        self.registrations.push(registration);
    }

    async fn insert(&self, tx: &crate::Tx, tenant: TenantId) -> Result<()> {
        if self.users.is_empty() {
            return Ok(());
        }
        let stmt = tx
            .prepare_cached(
                "INSERT INTO event_service.seat_requests (tenant_id, user_id, key, request_hash, outcome, registration_id)
                 SELECT $1, u.user_id, u.key, u.hash, u.outcome, u.registration_id
                 FROM UNNEST($2::uuid[], $3::uuid[], $4::bytea[], $5::text[], $6::uuid[])
                      AS u(user_id, key, hash, outcome, registration_id)",
            )
            .await?;
        tx.execute(
            &stmt,
            &[
                &tenant.as_uuid(),
                &self.users,
                &self.keys,
                &self.hashes,
                &self.outcomes,
                &self.registrations,
            ],
        )
        .await?;
        Ok(())
    }
}

/// Inserts the chosen registrations and counts their seats in one statement.
#[allow(clippy::too_many_arguments)]
async fn insert(
    tx: &crate::Tx,
    tenant: TenantId,
    ticket_type: Uuid,
    offer: &Offer,
    status: RegistrationStatus,
    expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    requests: &[SeatRequest],
    chosen: &[(usize, Uuid, String)],
) -> Result<Vec<tokio_postgres::Row>> {
    let ids: Vec<Uuid> = chosen.iter().map(|c| c.1).collect();
    let codes: Vec<&str> = chosen.iter().map(|c| c.2.as_str()).collect();
    let of = |c: &(usize, Uuid, String)| &requests[c.0];
    let users: Vec<Uuid> = chosen.iter().map(|c| of(c).user.as_uuid()).collect();
    let emails: Vec<Option<&str>> = chosen.iter().map(|c| of(c).email.as_deref()).collect();
    let firsts: Vec<&str> = chosen.iter().map(|c| of(c).first_name.as_str()).collect();
    let lasts: Vec<&str> = chosen.iter().map(|c| of(c).last_name.as_str()).collect();
    let fields: Vec<&serde_json::Value> = chosen.iter().map(|c| &of(c).custom_fields).collect();
    let sources: Vec<Option<&str>> = chosen.iter().map(|c| of(c).source.as_deref()).collect();
    let (sold_add, reserved_add) = match status.seat() {
        Seat::Sold => (chosen.len() as i32, 0),
        _ => (0, chosen.len() as i32),
    };
    let stmt = tx
        .prepare_cached(&format!(
            "WITH r AS (
                INSERT INTO event_service.registrations (id, tenant_id, event_id, ticket_type_id, user_id, email,
                    first_name, last_name, confirmation_code, status, custom_fields, price_cents, currency,
                    expires_at, created_at, updated_at, source)
                SELECT u.id, $1, $2, $3, u.user_id, COALESCE(u.email, p.email),
                       COALESCE(NULLIF(u.first_name, ''), p.first_name, ''),
                       COALESCE(NULLIF(u.last_name, ''), p.last_name, ''),
                       u.code, $4, u.fields, $5, $6, $7, $8, $8, u.source
                FROM UNNEST($9::uuid[], $10::uuid[], $11::text[], $12::text[], $13::text[], $14::text[], $15::jsonb[], $18::text[])
                     AS u(id, user_id, email, first_name, last_name, code, fields, source)
                LEFT JOIN event_service.people p ON p.user_id = u.user_id
                RETURNING *
             ), counted AS (
                UPDATE event_service.ticket_types SET sold_count = sold_count + $16, reserved_count = reserved_count + $17
                WHERE id = $3 RETURNING 1
             ) SELECT {COLUMNS} FROM r"
        ))
        .await?;
    Ok(tx
        .query(
            &stmt,
            &[
                &tenant.as_uuid(),
                &offer.event,
                &ticket_type,
                &status.as_str(),
                &offer.price,
                &offer.currency,
                &expires_at,
                &now,
                &ids,
                &users,
                &emails,
                &firsts,
                &lasts,
                &codes,
                &fields,
                &sold_add,
                &reserved_add,
                &sources,
            ],
        )
        .await?)
}

/// Whether a failed batch should be retried one request at a time (a concurrent writer
/// elsewhere, the same key used for another ticket type at the same moment, or a
/// confirmation-code collision).
pub fn is_conflict(error: &crate::Error) -> bool {
    matches!(error, crate::Error::Db(e) if e.is_unique_violation())
}

/// Forgets seat-request records older than `hours` (their keys may then be used again).
pub async fn purge(db: &Database, hours: u32) -> Result<u64> {
    let tx = db.begin(Scope::system()).await?;
    let n = tx
        .execute(
            "DELETE FROM event_service.seat_requests WHERE created_at < now() - make_interval(hours => $1)",
            &[&(hours as i32)],
        )
        .await?;
    tx.commit().await?;
    Ok(n)
}
