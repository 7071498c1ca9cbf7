//! Registrations and their seats after creation (creation is the group commit in `seats`).
//! Every seat change (cancel, payment, expiry, check-in) locks the same row, so seats
//! are counted exactly; the CHECK on ticket_types and the unique active registration per
//! user and event stay the final judges.

use super::publish;
use crate::cluster::Fence;
use crate::db::{Database, DbError, Scope, Tx, page};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::{self as contract, EventSummary};
use domain::error::Refusal;
use domain::events::registrations::{CheckInMethod, RegistrationStatus};
use domain::events::search::RegistrationSearch;
use domain::ids::{TenantId, UserId};
use domain::paging::{Page, PageRequest, SortDir, SortField, SortWhitelist};
use tokio_postgres::Row;
use uuid::Uuid;

/// Sortable fields of the registration list.
pub const SORT: SortWhitelist = SortWhitelist {
    fields: &[
        SortField {
            api: "createdAt",
            column: "r.created_at",
        },
        SortField {
            api: "status",
            column: "r.status",
        },
        SortField {
            api: "lastName",
            column: "r.last_name",
        },
    ],
    default: ("createdAt", SortDir::Asc),
};

/// A registration.
#[derive(Clone, Debug, PartialEq)]
pub struct Registration {
    /// Id.
    pub id: Uuid,
    /// Organization.
    pub tenant_id: TenantId,
    /// Event.
    pub event_id: Uuid,
    /// Ticket type.
    pub ticket_type_id: Uuid,
    /// Participant.
    pub user_id: UserId,
    /// Email.
    pub email: Option<String>,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// Code for the door.
    pub confirmation_code: String,
    /// Status.
    pub status: RegistrationStatus,
    /// Answers to the organizer's questions.
    pub custom_fields: serde_json::Value,
    /// Price at registration.
    pub price_cents: i64,
    /// Currency.
    pub currency: String,
    /// When a reservation runs out.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was cancelled.
    pub cancelled_at: Option<DateTime<Utc>>,
    /// Why.
    pub cancellation_reason: Option<String>,
    /// Creation.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Where the person came from (a short slug, e.g. `vk`), if the client said.
    pub source: Option<String>,
}

pub(super) const COLUMNS: &str = "r.id, r.tenant_id, r.event_id, r.ticket_type_id, r.user_id, r.email, r.first_name, r.last_name,
    r.confirmation_code, r.status, r.custom_fields, r.price_cents, r.currency, r.expires_at, r.cancelled_at,
    r.cancellation_reason, r.created_at, r.updated_at, r.source";

/// How many columns `COLUMNS` reads: what a query selects after them starts here.
pub(super) const COLUMN_COUNT: usize = 19;

pub(super) fn from_row(row: &Row) -> Registration {
    let status: String = row.get(9);
    Registration {
        id: row.get(0),
        tenant_id: TenantId(row.get(1)),
        event_id: row.get(2),
        ticket_type_id: row.get(3),
        user_id: UserId(row.get(4)),
        email: row.get(5),
        first_name: row.get(6),
        last_name: row.get(7),
        confirmation_code: row.get(8),
        status: status.parse().unwrap_or(RegistrationStatus::Cancelled),
        custom_fields: row.get(10),
        price_cents: row.get(11),
        currency: row.get(12),
        expires_at: row.get(13),
        cancelled_at: row.get(14),
        cancellation_reason: row.get(15),
        created_at: row.get(16),
        updated_at: row.get(17),
        source: row.get(18),
    }
}

/// What consumers need about a registration.
pub fn payload(r: &Registration, event: &EventSummary) -> contract::Registration {
    contract::Registration {
        registration_id: r.id,
        event_id: r.event_id,
        ticket_type_id: r.ticket_type_id,
        user_id: r.user_id,
        email: r.email.clone(),
        first_name: r.first_name.clone(),
        last_name: r.last_name.clone(),
        confirmation_code: r.confirmation_code.clone(),
        status: r.status,
        price_cents: r.price_cents,
        currency: r.currency.clone(),
        expires_at: r.expires_at,
        cancellation_reason: r.cancellation_reason.clone(),
        source: r.source.clone(),
        event: event.clone(),
    }
}

/// What a batch needs to know about its event, for the events it publishes.
pub(super) async fn event_summary(tx: &Tx, event: Uuid) -> Result<EventSummary> {
    let row = tx
        .query_opt(
            &format!("SELECT {SUMMARY_COLUMNS} FROM event_service.events e WHERE e.id = $1"),
            &[&event],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    Ok(summary_from(&row, event, 0))
}

/// The event columns of a summary, read by `summary_from`.
pub(super) const SUMMARY_COLUMNS: &str =
    "e.title, e.starts_at, e.ends_at, e.timezone, e.location_address, e.location_url, e.slug";

/// The summary of an event from `SUMMARY_COLUMNS` starting at column `at` of `row`.
pub(super) fn summary_from(row: &Row, event: Uuid, at: usize) -> EventSummary {
    EventSummary {
        event_id: event,
        title: row.get(at),
        starts_at: row.get(at + 1),
        ends_at: row.get(at + 2),
        timezone: Some(row.get(at + 3)),
        location_address: row.get(at + 4),
        location_url: row.get(at + 5),
        slug: row.get(at + 6),
    }
}

/// A registration the scope may see (the participant's own, or the organizer's tenant's).
pub async fn get(db: &Database, scope: Scope, id: Uuid) -> Result<Registration> {
    let tx = db.begin(scope).await?;
    let row = tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM event_service.registrations r WHERE r.id = $1"),
            &[&id],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// Filters of the registration list.
#[derive(Clone, Debug, Default)]
pub struct RegistrationFilter {
    /// Only this status.
    pub status: Option<RegistrationStatus>,
    /// Only this ticket type.
    pub ticket_type_id: Option<Uuid>,
    /// Only registrations that hold a seat.
    pub active_only: bool,
    /// Only those a name, email or code matches.
    pub search: Option<RegistrationSearch>,
}

/// Registrations of an event the scope may see, filtered and paged.
pub async fn list(
    db: &Database,
    scope: Scope,
    event: Uuid,
    filter: &RegistrationFilter,
    request: &PageRequest,
) -> Result<Page<Registration>> {
    list_where(db, scope, Some(event), filter, request).await
}

/// The user's own registrations (of one event, or across events), filtered and paged (row level security shows
/// a user nothing else).
pub async fn list_mine(
    db: &Database,
    user: UserId,
    event: Option<Uuid>,
    filter: &RegistrationFilter,
    request: &PageRequest,
) -> Result<Page<Registration>> {
    list_where(db, Scope::user(user), event, filter, request).await
}

async fn list_where(
    db: &Database,
    scope: Scope,
    event: Option<Uuid>,
    filter: &RegistrationFilter,
    request: &PageRequest,
) -> Result<Page<Registration>> {
    let tx = db.begin(scope).await?;
    let status = filter.status.map(|s| s.as_str());
    let search = filter.search.as_ref();
    let names_only = search.is_some_and(RegistrationSearch::is_names_only);
    let code = search.and_then(RegistrationSearch::code);
    let words = search.map(RegistrationSearch::words);
    let whole = search.and_then(RegistrationSearch::whole);
    let [first, second, third] = search.map(RegistrationSearch::indexed).unwrap_or_default();
    // Each statement is planned with its values, so a list without a search drops the
    // search's terms, and a search drops the words, whole term or code it has not. Under row
    // level security only leakproof conditions become index conditions: the longest words
    // and the whole term are ranges of each field's lower-cased copy (V14), one index each;
    // every word is then checked on the rows found, as the beginning of a word of a name or
    // of the email (docs/decisions.md, "Searching registrations").
    let found = page::fetch(
        &tx,
        COLUMNS,
        &LIST_WHERE,
        &[
            &event,
            &status,
            &filter.ticket_type_id,
            &filter.active_only,
            &words,
            &names_only,
            &code,
            &whole,
            &first,
            &second,
            &third,
        ],
        request,
        "r.id",
        from_row,
    )
    .await?;
    tx.commit().await?;
    Ok(found)
}

/// The list's `FROM … WHERE`: $1 event, $2 status, $3 ticket type, $4 active only, $5 the
/// words, $6 names only, $7 the code, $8 the whole term, $9–$11 the words asked of the indexes.
/// Made once: only its values change between lists.
static LIST_WHERE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    format!(
            "FROM event_service.registrations r WHERE ($1::uuid IS NULL OR r.event_id = $1)
               AND ($2::text IS NULL OR r.status = $2) AND ($3::uuid IS NULL OR r.ticket_type_id = $3)
               AND (NOT $4 OR r.status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'))
               AND ($5::text[] IS NULL
                    OR (({indexed_9} OR {indexed_10} OR {indexed_11}
                         OR ($8::text IS NOT NULL AND ({first_8} OR {last_8}))
                         OR ($7::text IS NOT NULL AND r.confirmation_code = $7))
                        AND (($7::text IS NOT NULL AND r.confirmation_code = $7)
                             OR NOT EXISTS (SELECT 1 FROM unnest($5::text[]) w
                                            WHERE NOT (strpos(' ' || r.search_first, ' ' || lower(w)) > 0
                                                       OR strpos(' ' || r.search_last, ' ' || lower(w)) > 0
                                                       OR (NOT $6 AND starts_with(r.search_email, lower(w))))))))",
            indexed_9 = indexed(9),
            indexed_10 = indexed(10),
            indexed_11 = indexed(11),
            first_8 = begins("first", 8),
            last_8 = begins("last", 8),
    )
});

/// `search_{field}` begins with the lower-cased `$param`: one range of its index, leakproof.
fn begins(field: &str, param: u8) -> String {
    format!(
        "(r.search_{field} >= lower(${param}) AND r.search_{field} < lower(${param}) || chr(1114111))"
    )
}

/// The word `$param`, when there is one, begins a first name, a last name or (unless names
/// only, `$6`) an email.
fn indexed(param: u8) -> String {
    format!(
        "(${param}::text IS NOT NULL AND ({} OR {} OR (NOT $6 AND {})))",
        begins("first", param),
        begins("last", param),
        begins("email", param)
    )
}

/// The registrations of an OPEN event as one of its participants may see them (everyone who
/// holds a seat), or None when `user` holds no active registration there or the event is not
/// OPEN.
pub async fn list_as_participant(
    db: &Database,
    user: UserId,
    event: Uuid,
    filter: &RegistrationFilter,
    request: &PageRequest,
) -> Result<Option<Page<Registration>>> {
    let tx = db.begin(Scope::user(user)).await?;
    let allowed: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM event_service.registrations WHERE event_id = $1 AND user_id = $2
                        AND status IN ('RESERVED', 'PENDING', 'CONFIRMED', 'CHECKED_IN'))
                AND EXISTS (SELECT 1 FROM event_service.events WHERE id = $1 AND participants_visibility = 'OPEN')",
            &[&event, &user.as_uuid()],
        )
        .await?
        .get(0);
    tx.commit().await?;
    if !allowed {
        return Ok(None);
    }
    // Other participants' rows are not the user's to read under RLS; the check above is the
    // permission, and the list is limited to this event's seat holders.
    // They see the others' names, so a search matches names alone.
    let everyone = RegistrationFilter {
        active_only: true,
        search: filter.search.clone().map(RegistrationSearch::names_only),
        ..filter.clone()
    };
    Ok(Some(
        list(db, Scope::system(), event, &everyone, request).await?,
    ))
}

/// Locks a registration and its ticket type (always in that order of tables: ticket type
/// first, as creation does, so concurrent changes cannot deadlock).
pub(super) async fn lock(tx: &Tx, id: Uuid) -> Result<Registration> {
    let type_id: Uuid = tx
        .query_opt(
            "SELECT ticket_type_id FROM event_service.registrations WHERE id = $1",
            &[&id],
        )
        .await?
        .ok_or_else(Refusal::not_found)?
        .get(0);
    tx.execute(
        "SELECT 1 FROM event_service.ticket_types WHERE id = $1 FOR UPDATE",
        &[&type_id],
    )
    .await?;
    // A row the scope may read but not change (one's own registration, read in another
    // organization's scope) cannot be locked: not found, like any other's.
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM event_service.registrations r WHERE r.id = $1 FOR UPDATE"
            ),
            &[&id],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    Ok(from_row(&row))
}

/// Moves a registration to `next`, adjusting its ticket type's seats, inside `tx`.
pub(super) async fn move_to(
    tx: &Tx,
    r: &Registration,
    next: RegistrationStatus,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> std::result::Result<Registration, DbError> {
    let (sold_before, reserved_before) = r.status.seat().counts();
    let (sold_after, reserved_after) = next.seat().counts();
    tx.execute(
        "UPDATE event_service.ticket_types SET sold_count = sold_count + $2, reserved_count = reserved_count + $3
         WHERE id = $1",
        &[&r.ticket_type_id, &(sold_after - sold_before), &(reserved_after - reserved_before)],
    )
    .await?;
    let cancelled = matches!(next, RegistrationStatus::Cancelled);
    let row = tx
        .query_one(
            &format!(
                "WITH r AS (
                    UPDATE event_service.registrations SET status = $2::text, updated_at = $3,
                        expires_at = CASE WHEN $2::text = 'RESERVED' THEN expires_at ELSE NULL END,
                        cancelled_at = CASE WHEN $4 THEN $3 ELSE cancelled_at END,
                        cancellation_reason = CASE WHEN $4 THEN $5 ELSE cancellation_reason END
                    WHERE id = $1 RETURNING *
                 ) SELECT {COLUMNS} FROM r"
            ),
            &[&r.id, &next.as_str(), &now, &cancelled, &reason],
        )
        .await?;
    Ok(from_row(&row))
}

/// Who asks for a cancellation.
#[derive(Clone, Copy, Debug)]
pub enum Canceller {
    /// The participant, for their own registration.
    Participant(UserId),
    /// An organizer of the tenant.
    Organizer(TenantId, UserId),
}

/// Cancels a registration and frees its seat; publishes registration.cancelled. One that
/// holds no seat any more (cancelled, expired) is answered as it is.
pub async fn cancel(
    db: &Database,
    by: Canceller,
    id: Uuid,
    reason: Option<&str>,
    now: DateTime<Utc>,
) -> Result<Registration> {
    // The participant's own row is visible to them; the change itself runs as the tenant.
    let owner = get(
        db,
        match by {
            Canceller::Participant(user) => Scope::user(user),
            Canceller::Organizer(tenant, user) => Scope::tenant(tenant, Some(user)),
        },
        id,
    )
    .await?;
    // Each role acts only on what it is: a participant on their own registration, an
    // organizer on their organization's (not on their own ticket elsewhere).
    if matches!(by, Canceller::Participant(user) if owner.user_id != user)
        || matches!(by, Canceller::Organizer(tenant, _) if owner.tenant_id != tenant)
    {
        return Err(Refusal::not_found().into());
    }
    let actor = match by {
        Canceller::Participant(u) | Canceller::Organizer(_, u) => u,
    };
    let tx = db
        .begin(Scope::tenant(owner.tenant_id, Some(actor)))
        .await?;
    let current = lock(&tx, id).await?;
    let who = match by {
        Canceller::Participant(_) => domain::events::registrations::Canceller::Participant,
        Canceller::Organizer(..) => domain::events::registrations::Canceller::Organizer,
    };
    // Already holding no seat: the request's wish is granted as it stands.
    let Some(next) = current.status.cancel(who)? else {
        return Ok(current);
    };
    let cancelled = move_to(
        &tx,
        &current,
        next,
        reason.or(Some("CANCELLED_BY_USER")),
        now,
    )
    .await?;
    super::waitlist::notify_next(&tx, cancelled.ticket_type_id, now).await?;
    let summary = event_summary(&tx, cancelled.event_id).await?;
    publish(
        &tx,
        Some(cancelled.tenant_id),
        Some(actor),
        DomainEvent::RegistrationCancelled(payload(&cancelled, &summary)),
    )
    .await?;
    tx.commit().await?;
    Ok(cancelled)
}

/// Expires every reservation of the fence's shards whose time has run out (of one ticket
/// type, or of all); publishes reservation.expired for each. Returns how many expired.
pub async fn expire_due(
    db: &Database,
    fence: &Fence,
    ticket_type: Option<Uuid>,
    now: DateTime<Utc>,
) -> Result<usize> {
    if fence.is_empty() {
        return Ok(0);
    }
    let tx = super::sweep(db).await?;
    let started = std::time::Instant::now();
    let rows = tx
        .query(
            // The due reservations first, from their partial index, then their events: joined
            // the other way PostgreSQL may walk every active registration of every event (its
            // estimates lag an on-sale's growth), a cost that grows with what is stored.
            "WITH due AS MATERIALIZED (
                SELECT r.id, r.event_id, r.ticket_type_id, r.expires_at FROM event_service.registrations r
                 WHERE r.status = 'RESERVED' AND r.expires_at <= $1
                   AND ($2::uuid IS NULL OR r.ticket_type_id = $2))
             SELECT due.id, e.shard FROM due JOIN event_service.events e ON e.id = due.event_id
              WHERE e.shard = ANY($3)
              ORDER BY due.ticket_type_id, due.expires_at LIMIT 500",
            &[&now, &ticket_type, &fence.shards()],
        )
        .await?;
    if rows.is_empty() {
        return Ok(0);
    }
    let shards: Vec<i16> = rows.iter().map(|r| r.get(1)).collect();
    fence.only(&shards).check(&tx).await?;
    let mut expired = 0;
    for id in rows.iter().map(|r| r.get::<_, Uuid>(0)) {
        // What is left waits for the next look rather than hold the leases' rows longer.
        if started.elapsed() >= super::SWEEP_BUDGET {
            break;
        }
        let current = lock(&tx, id).await?;
        // Re-judged under the lock: it may have been paid or cancelled since the scan.
        if !current.status.lapsed(current.expires_at, now) {
            continue;
        }
        let changed = move_to(&tx, &current, RegistrationStatus::Expired, None, now).await?;
        super::waitlist::notify_next(&tx, changed.ticket_type_id, now).await?;
        let summary = event_summary(&tx, changed.event_id).await?;
        publish(
            &tx,
            Some(changed.tenant_id),
            None,
            DomainEvent::ReservationExpired(payload(&changed, &summary)),
        )
        .await?;
        expired += 1;
    }
    tx.commit().await?;
    Ok(expired)
}

/// The earliest deadline in `shards`, of a reservation or of a waiting-list hold, for the
/// node's reservation timer.
pub async fn next_expiry(db: &Database, shards: &[i16]) -> Result<Option<DateTime<Utc>>> {
    let tx = db.begin(Scope::system()).await?;
    let next: Option<DateTime<Utc>> = tx
        .query_one(
            // The reservations in deadline order from their partial index, the first of
            // these shards: what is read grows with the reservations, not with what was sold.
            // The subquery is fenced (OFFSET 0) so the planner cannot turn it into a join
            // driven by the events, which read every active registration of each (10 ms a
            // look at 30,000 registrations of one event, seen in a burst).
            "SELECT LEAST(
                (SELECT r.expires_at
                   FROM (SELECT x.expires_at, x.event_id FROM event_service.registrations x
                          WHERE x.status = 'RESERVED' ORDER BY x.expires_at OFFSET 0) r
                  WHERE EXISTS (SELECT 1 FROM event_service.events e
                                 WHERE e.id = r.event_id AND e.shard = ANY($1))
                  ORDER BY r.expires_at LIMIT 1),
                (SELECT min(w.expires_at) FROM event_service.waiting_list w
                   JOIN event_service.events e ON e.id = w.event_id
                  WHERE w.status = 'NOTIFIED' AND e.shard = ANY($1)))",
            &[&shards],
        )
        .await?
        .get(0);
    tx.commit().await?;
    Ok(next)
}

/// What to check in.
#[derive(Clone, Debug)]
pub enum CheckInTarget {
    /// By registration id.
    Id(Uuid),
    /// By confirmation code within an event (door staff typing it).
    Code {
        /// The event.
        event: Uuid,
        /// The code.
        code: String,
    },
}

/// Checks a participant in (organizers of the tenant): only CONFIRMED, only once.
pub async fn check_in(
    db: &Database,
    tenant: TenantId,
    staff: UserId,
    target: CheckInTarget,
    method: CheckInMethod,
    now: DateTime<Utc>,
) -> Result<Registration> {
    let tx = db.begin(Scope::tenant(tenant, Some(staff))).await?;
    let id: Uuid = match target {
        CheckInTarget::Id(id) => id,
        CheckInTarget::Code { event, code } => tx
            .query_opt(
                "SELECT id FROM event_service.registrations WHERE event_id = $1 AND confirmation_code = $2",
                &[&event, &code.trim().to_uppercase()],
            )
            .await?
            .ok_or_else(Refusal::not_found)?
            .get(0),
    };
    let current = lock(&tx, id).await?;
    let next = current.status.check_in()?;
    let changed = move_to(&tx, &current, next, None, now).await?;
    tx.execute(
        "INSERT INTO event_service.check_ins (id, tenant_id, registration_id, checked_in_by, method, checked_in_at)
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[&Uuid::now_v7(), &tenant.as_uuid(), &id, &staff.as_uuid(), &method.as_str(), &now],
    )
    .await?;
    let summary = event_summary(&tx, changed.event_id).await?;
    let checked_in = contract::CheckinCompleted {
        registration: payload(&changed, &summary),
        method,
        checked_in_by: staff,
        checked_in_at: now,
    };
    publish(
        &tx,
        Some(tenant),
        Some(staff),
        DomainEvent::CheckinCompleted(checked_in),
    )
    .await?;
    tx.commit().await?;
    Ok(changed)
}

/// The event (id and title) of another event's registration with `code`, in the staff's
/// organization: what the door tells when a code is not one of its event's.
pub async fn other_event_of_code(
    db: &Database,
    tenant: TenantId,
    staff: UserId,
    event: Uuid,
    code: &str,
) -> Result<Option<(Uuid, String)>> {
    let tx = db.begin(Scope::tenant(tenant, Some(staff))).await?;
    let row = tx
        .query_opt(
            "SELECT e.id, e.title FROM event_service.registrations r
             JOIN event_service.events e ON e.id = r.event_id
             WHERE r.confirmation_code = $1 AND r.event_id <> $2 AND e.tenant_id = $3
             ORDER BY e.starts_at DESC LIMIT 1",
            &[&code.trim().to_uppercase(), &event, &tenant.as_uuid()],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| (r.get(0), r.get(1))))
}

/// Seats counted on a ticket type against the registrations that hold them: (sold, reserved,
/// sold rows, reserved rows). They must always agree.
pub async fn seat_audit(db: &Database, ticket_type: Uuid) -> Result<(i32, i32, i64, i64)> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_one(
            "SELECT t.sold_count, t.reserved_count,
                (SELECT count(*) FROM event_service.registrations r WHERE r.ticket_type_id = t.id AND r.status IN ('CONFIRMED', 'CHECKED_IN')),
                (SELECT count(*) FROM event_service.registrations r WHERE r.ticket_type_id = t.id AND r.status IN ('RESERVED', 'PENDING'))
             FROM event_service.ticket_types t WHERE t.id = $1",
            &[&ticket_type],
        )
        .await?;
    tx.commit().await?;
    Ok((row.get(0), row.get(1), row.get(2), row.get(3)))
}
