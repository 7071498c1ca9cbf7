//! Taking seats: the group commit behind `POST /events/{id}/registrations`. A batch of
//! requests for one ticket type is judged against one locked ticket-type row and written in
//! one transaction, together with each request's idempotency record, so a request costs no
//! statement of its own: visibility, sales window, earlier answers to the same key and how
//! many seats are free are read in the batch's first round trip (`reads`; who is already
//! registered too, in a second one, when that can change an answer), judged in memory
//! (`judge`) and written (`writes`: the insert itself skips a person already registered). The
//! node's committer puts the batches of many ticket types in one such transaction, and its
//! statements stay the same few: each takes all of its batches' rows as arrays.

mod judge;
mod reads;
mod writes;

use super::registrations::{Registration, from_row, payload};
use crate::cluster::Fence;
use crate::db::{Database, Scope};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::envelope::Envelope;
use domain::error::Refusal;
use domain::events::registrations::{RegistrationStatus, confirmation_code};
use domain::events::seats::SeatRefusal;
use domain::ids::{TenantId, UserId};
use judge::{Verdict, judge};
use reads::Offer;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;
use writes::{NewRegistration, Records};

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
    /// The caller showed a valid admission of the event's waiting room (checked before the
    /// request reached the actor; `domain::events::waiting_room::admission`).
    pub admitted: bool,
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
    /// The event's waiting room is open and the caller showed no admission. Not remembered
    /// for the key: the same request is judged again once its caller is let in.
    AdmissionRequired,
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

/// The tenants owning `ticket_types`, in one read (those that do not exist are left out): the
/// actors an on-sale's first second starts ask together.
pub async fn owners(db: &Database, ticket_types: &[Uuid]) -> Result<HashMap<Uuid, TenantId>> {
    let tx = db.begin(Scope::system()).await?;
    let rows = tx
        .query(
            "SELECT id, tenant_id FROM event_service.ticket_types WHERE id = ANY($1)",
            &[&ticket_types],
        )
        .await?;
    tx.commit().await?;
    Ok(rows
        .iter()
        .map(|r| (r.get(0), TenantId(r.get(1))))
        .collect())
}

/// Makes the rest of a seat transaction run cached generic plans (see `write`).
const GENERIC_PLANS: &str = "SET LOCAL plan_cache_mode TO force_generic_plan;";

/// How a seat transaction begins: generic plans, and no sequential scans. Every read of the
/// seat path is a probe by key, and a plan made while a table's statistics say it is empty (a
/// new installation's first sale) would otherwise scan the table for each probe for as long as
/// the connection lives, while the sale grows it by thousands of rows a second
/// (docs/decisions.md).
const SEAT_PLANS: &str =
    "SET LOCAL plan_cache_mode TO force_generic_plan; SET LOCAL enable_seqscan TO off;";

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

/// Judges and writes a batch of seat requests for one ticket type in one transaction of three
/// round trips: open, lock and read (the BEGIN pipelined with the lock-and-read, the earlier
/// answers to the batch's keys and the check of the event shard's lease; who is registered
/// already in a round trip of its own, when it matters); insert-and-count; the idempotency
/// records and the outbox with the commit right behind them. A node whose lease moved on
/// writes nothing (`Error::Fenced`).
pub async fn commit_batch(
    db: &Database,
    fence: &Fence,
    tenant: TenantId,
    ticket_type: Uuid,
    requests: &[SeatRequest],
    now: DateTime<Utc>,
) -> Result<Vec<SeatOutcome>> {
    let batch = SeatBatch {
        tenant,
        ticket_type,
        requests,
        now,
    };
    let mut outcomes = commit(db, Scope::tenant(tenant, None), fence, &[batch]).await?;
    Ok(outcomes.pop().unwrap_or_default())
}

/// Judges and writes the batches of several ticket types in one transaction, with the same
/// round trips, statements, lease check and commit whether it carries one ticket type's batch
/// or a hundred: each statement takes the rows of all of them as arrays. The transaction acts
/// as the system because its batches may belong to several organizations; every row names
/// its tenant. Any failure fails them all (the caller then commits each batch alone to learn
/// whose it was); the batches must be of different ticket types.
pub async fn commit_batches(
    db: &Database,
    fence: &Fence,
    batches: &[SeatBatch<'_>],
) -> Result<Vec<Vec<SeatOutcome>>> {
    commit(db, Scope::system(), fence, batches).await
}

/// Most times a seat transaction is run when each attempt drew a confirmation code that was
/// taken already.
const CODE_DRAWS: usize = 3;

/// Runs the seat transaction, again (with new codes) when the only thing wrong was a
/// confirmation code drawn twice. Six random symbols give each event about a billion codes, so
/// a sale of 30,000 seats draws one twice about four times in ten; the transaction then fails
/// on the unique index, and judging its batch one request at a time instead cost a hundred
/// durable commits in a row, a fifth of a second in which the type sold nothing
/// (bench/README.md).
async fn commit(
    db: &Database,
    scope: Scope,
    fence: &Fence,
    batches: &[SeatBatch<'_>],
) -> Result<Vec<Vec<SeatOutcome>>> {
    let mut draws = 1;
    loop {
        match attempt(db, scope, fence, batches).await {
            Err(e) if draws < CODE_DRAWS && is_code_taken(&e) => {
                tracing::debug!(error = %e, "a confirmation code was drawn twice; drawing again");
                draws += 1;
            }
            done => return done,
        }
    }
}

/// A new confirmation code for a registration to `event`.
fn draw_code(event: Uuid) -> String {
    #[cfg(feature = "faults")]
    if let Some(code) = crate::faults::drawn_code(event) {
        return code;
    }
    confirmation_code(event, rand::random())
}

/// Whether the write failed on a confirmation code some registration holds already.
fn is_code_taken(error: &crate::Error) -> bool {
    matches!(error, crate::Error::Db(e)
        if e.is_unique_violation() && e.constraint() == Some(CODE_INDEX))
}

/// The unique index of the registrations' confirmation codes (V4).
const CODE_INDEX: &str = "registrations_confirmation_code_key";

async fn attempt(
    db: &Database,
    scope: Scope,
    fence: &Fence,
    batches: &[SeatBatch<'_>],
) -> Result<Vec<Vec<SeatOutcome>>> {
    // Pipelined behind the BEGIN: the first error in statement order is the cause (see
    // `reads::read`). Generic plans from the start: the first reads are probes by primary key
    // (which a custom plan, made again at every execution for an array parameter, cannot
    // choose better), and `reads::read` gives the person probe back the default choice between
    // plans (sequential scans stay off for it too).
    let (tx, (mut written, records)) = db
        .begin_with(scope, SEAT_PLANS, async |tx| {
            let (written, fenced) = tokio::join!(write(tx, batches), fence.check(tx));
            let written = written?;
            fenced?;
            Ok::<_, crate::Error>(written)
        })
        .await?;
    // Moved, not cloned: an announcement is a tree of JSON values, and nothing reads it after
    // the outbox has it.
    let events: Vec<Envelope> = written
        .iter_mut()
        .flat_map(|w| std::mem::take(&mut w.events))
        .collect();
    // Pipelined, the idempotency records first, and the commit right behind them (their
    // statements were prepared with the insert, in `write`).
    tx.commit_with(async |tx| {
        let (recorded, queued) = tokio::join!(
            records.insert(tx),
            crate::outbox::enqueue_many(tx, crate::Schema::EventService, &events)
        );
        recorded?;
        queued.map_err(crate::Error::from)
    })
    .await?;
    Ok(written.into_iter().map(Written::finish).collect())
}

/// A batch judged and written inside a transaction that has not committed yet.
struct Written {
    verdicts: Vec<Verdict>,
    /// The request each new registration is for.
    chosen: HashMap<usize, Uuid>,
    created: HashMap<Uuid, Registration>,
    /// The announcements of the registrations, for the transaction's outbox.
    events: Vec<Envelope>,
}

impl Written {
    /// The answers, once the transaction committed: seats become registrations, and a repeat
    /// of a key inside the batch gets its first answer.
    fn finish(mut self) -> Vec<SeatOutcome> {
        let mut finals: Vec<SeatOutcome> = Vec::with_capacity(self.verdicts.len());
        for (i, verdict) in self.verdicts.into_iter().enumerate() {
            finals.push(match verdict {
                Verdict::Done(outcome) => outcome,
                // A seat without its row: the insert skipped it, the person being registered
                // already (see `writes::insert`).
                Verdict::Seat => match self.chosen.remove(&i) {
                    Some(id) => self
                        .created
                        .remove(&id)
                        .map(|r| SeatOutcome::Created(Box::new(r)))
                        .unwrap_or(SeatOutcome::Refused(SeatRefusal::AlreadyRegistered)),
                    None => SeatOutcome::Refused(SeatRefusal::SoldOut),
                },
                Verdict::RepeatOf(j) => match &finals[j] {
                    replayed @ SeatOutcome::Replayed(_) => replayed.clone(),
                    first => SeatOutcome::Replayed(Box::new(first.clone())),
                },
            });
        }
        finals
    }
}

/// Judges the batches against their locked ticket types and writes their registrations and
/// seat counts in `tx`; returns them with the requests' idempotency records, which the caller
/// writes beside the announcements. A ticket type that no longer exists fails the whole
/// transaction with not found.
async fn write<'r>(
    tx: &crate::Tx,
    batches: &[SeatBatch<'r>],
) -> Result<(Vec<Written>, Records<'r>)> {
    let read = reads::read(tx, batches).await?;
    if batches
        .iter()
        .any(|b| !read.offers.types.contains(&b.ticket_type))
    {
        return Err(Refusal::not_found().into());
    }
    // A batch without an offer named only other events than its type's: all not found.
    let offers: Vec<Option<&Offer>> = batches
        .iter()
        .map(|b| read.offers.offers.get(&b.ticket_type))
        .collect();
    let mut verdicts: Vec<Vec<Verdict>> = batches
        .iter()
        .zip(&offers)
        .map(|(b, offer)| match offer {
            Some(offer) => judge(b, offer, &read.people, &read.answered),
            None => b
                .requests
                .iter()
                .map(|_| Verdict::Done(SeatOutcome::NotFound))
                .collect(),
        })
        .collect();

    // People holding a seat from the waiting list get it back for their own registration.
    let holders = futures_util::future::join_all(batches.iter().zip(&offers).zip(&verdicts).map(
        |((batch, offer), verdicts)| async move {
            let seekers: Vec<Uuid> = verdicts
                .iter()
                .zip(batch.requests)
                .filter(|(v, _)| matches!(v, Verdict::Seat))
                .map(|(_, r)| r.user.as_uuid())
                .collect();
            if !offer.is_some_and(|o| o.any_holds) || seekers.is_empty() {
                return Ok(HashSet::new());
            }
            let held =
                super::waitlist::convert_holds(tx, batch.ticket_type, &seekers, batch.now).await?;
            Ok::<_, crate::Error>(held.into_iter().collect::<HashSet<Uuid>>())
        },
    ))
    .await
    .into_iter()
    .collect::<Result<Vec<_>>>()?;

    let mut records = Records::default();
    let mut new = Vec::new();
    let mut chosen: Vec<HashMap<usize, Uuid>> = Vec::with_capacity(batches.len());
    for (((batch, offer), verdicts), holders) in
        batches.iter().zip(&offers).zip(&mut verdicts).zip(&holders)
    {
        let Some(offer) = offer else {
            chosen.push(HashMap::new());
            continue;
        };
        let status = RegistrationStatus::initial(offer.price, offer.minutes);
        let expires_at = status.deadline(offer.minutes, batch.now);
        // A held seat goes to its holder only; everyone else shares what is free.
        let mut free = offer.free;
        let mut seats = HashMap::new();
        for (i, verdict) in verdicts.iter_mut().enumerate() {
            let request = &batch.requests[i];
            if let Verdict::Done(outcome) = verdict {
                if let Some((name, _)) = outcome.record() {
                    records.push(batch.tenant, request, name, None);
                }
                continue;
            }
            if !matches!(verdict, Verdict::Seat) {
                continue;
            }
            if !holders.contains(&request.user.as_uuid()) {
                if free == 0 {
                    *verdict = Verdict::Done(SeatOutcome::Refused(SeatRefusal::SoldOut));
                    records.push(batch.tenant, request, SeatRefusal::SoldOut.as_str(), None);
                    continue;
                }
                free -= 1;
            }
            let id = Uuid::now_v7();
            seats.insert(i, id);
            records.push(batch.tenant, request, "CREATED", Some(id));
            new.push(NewRegistration {
                id,
                code: draw_code(offer.event),
                tenant: batch.tenant,
                event: offer.event,
                ticket_type: batch.ticket_type,
                status,
                price: offer.price,
                currency: &offer.currency,
                expires_at,
                now: batch.now,
                request,
            });
        }
        chosen.push(seats);
    }

    // The writes run their cached generic plans (asked for again only if the person probe
    // took the default back; the transaction began with them): a custom plan for the arrays
    // of a small transaction was planned again every time (2 ms for the insert under row
    // level security, against 1.5 ms to run it), and their generic plans have no index to get
    // wrong (docs/decisions.md).
    // The idempotency records' and the outbox's statements are prepared here too, on a new
    // connection, so that they go out at once with the commit behind them (`attempt`).
    let generic = async {
        if !read.default_plans {
            return Ok(());
        }
        tx.batch_execute(GENERIC_PLANS)
            .await
            .map_err(crate::Error::from)
    };
    let prepared = async {
        let (records, outbox) = tokio::join!(
            Records::prepare(tx),
            crate::outbox::prepare_many(tx, crate::Schema::EventService)
        );
        records?;
        outbox.map_err(crate::Error::from)
    };
    let (generic, rows, prepared) = tokio::join!(generic, writes::insert(tx, &new), prepared);
    // In statement order: a failed insert aborts the transaction, and whatever went out after
    // it fails only for that (a taken code must be seen as such, see `commit`).
    generic?;
    let rows = rows?;
    prepared?;
    // A seat whose row the insert skipped was asked by someone already registered for the
    // event; the idempotency records say so before they are written.
    if rows.len() < new.len() {
        let inserted: HashSet<Uuid> = rows.iter().map(|r| r.get::<_, Uuid>(0)).collect();
        records.already_registered(&inserted);
    }
    let index: HashMap<Uuid, usize> = batches
        .iter()
        .enumerate()
        .map(|(i, b)| (b.ticket_type, i))
        .collect();
    let mut written: Vec<Written> = verdicts
        .into_iter()
        .zip(chosen)
        .map(|(verdicts, chosen)| Written {
            verdicts,
            chosen,
            created: HashMap::new(),
            events: Vec::new(),
        })
        .collect();
    for row in &rows {
        let registration = from_row(row);
        let Some((i, offer)) = index
            .get(&registration.ticket_type_id)
            .and_then(|&i| Some((i, offers[i]?)))
        else {
            continue;
        };
        written[i].events.push(Envelope::of(
            &DomainEvent::RegistrationCreated(payload(&registration, &offer.summary)),
            Some(batches[i].tenant),
            Some(registration.user_id),
        ));
        written[i].created.insert(registration.id, registration);
    }
    // Registering ends one's wait for the event's other ticket types.
    futures_util::future::join_all(
        written
            .iter()
            .zip(&offers)
            .filter_map(|(w, o)| Some((w, (*o)?)))
            .filter(|(w, o)| o.anyone_waiting && !w.created.is_empty())
            .map(|(w, offer)| {
                let registered: Vec<Uuid> =
                    w.created.values().map(|r| r.user_id.as_uuid()).collect();
                async move { super::waitlist::close_for(tx, offer.event, &registered).await }
            }),
    )
    .await
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    Ok((written, records))
}

/// Whether a failed batch should be retried one request at a time (a concurrent writer
/// elsewhere, the same key used for another ticket type at the same moment, or a
/// confirmation code drawn twice in every attempt).
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
