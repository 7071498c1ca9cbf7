//! Events: creation, reading under the visibility rules, changes, the life cycle, and the
//! jobs that complete ended events.

use super::publish;
use crate::cluster::Fence;
use crate::db::{Database, Scope, page};
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::contract::DomainEvent;
use domain::contract::events::{CoverChanged, EventChanged, EventDeleted, EventState, Place};
use domain::error::Refusal;
use domain::events::lifecycle::{self, Action, EventStatus, ParticipantsVisibility};
use domain::events::patch::{self, EventFields, EventPatch};
use domain::events::refusals::EventRefusal;
use domain::events::slug;
use domain::events::validation::LocationType;
use domain::ids::{TenantId, UserId};
use domain::paging::{Page, PageRequest, SortDir, SortField, SortWhitelist};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;
use uuid::Uuid;

/// Sortable fields of the event list.
pub const SORT: SortWhitelist = SortWhitelist {
    fields: &[
        SortField {
            api: "startsAt",
            column: "starts_at",
        },
        SortField {
            api: "createdAt",
            column: "created_at",
        },
        SortField {
            api: "title",
            column: "title",
        },
    ],
    default: ("startsAt", SortDir::Asc),
};

/// An event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Id.
    pub id: Uuid,
    /// Organization.
    pub tenant_id: TenantId,
    /// Who created it.
    pub organizer_id: UserId,
    /// The group it is private to, if any.
    pub group_id: Option<Uuid>,
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Unique slug.
    pub slug: String,
    /// Status.
    pub status: EventStatus,
    /// Who sees the participants.
    pub participants_visibility: ParticipantsVisibility,
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// End.
    pub ends_at: Option<DateTime<Utc>>,
    /// Time zone for display.
    pub timezone: String,
    /// Kind of place.
    pub location_type: Option<LocationType>,
    /// Address.
    pub location_address: Option<String>,
    /// URL.
    pub location_url: Option<String>,
    /// Cover image.
    pub cover_image_id: Option<Uuid>,
    /// Settings object.
    pub settings: serde_json::Value,
    /// First publication.
    pub published_at: Option<DateTime<Utc>>,
    /// Creation.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Its waiting room is open: a seat is had through the queue, with an admission.
    pub waiting_room: bool,
    /// What it offers, read for lists only (None elsewhere, and when nothing is on offer).
    pub offer: Option<Offer>,
}

/// The ticket types an event has on offer (active, sales not ended), summed up for a card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offer {
    /// The lowest price of a type with seats left (of any type once all are gone), in its
    /// currency's smallest unit.
    pub lowest_price_cents: i64,
    /// The lowest price's currency.
    pub currency: String,
    /// Seats neither sold nor held.
    pub seats_left: i64,
    /// Seats of those types.
    pub seats_total: i64,
}

const COLUMNS: &str = "id, tenant_id, organizer_id, group_id, title, description, slug, status,
    participants_visibility, starts_at, ends_at, timezone, location_type, location_address, location_url,
    cover_image_id, settings, published_at, created_at, updated_at, waiting_room";

fn from_row(row: &Row) -> Event {
    let status: String = row.get(7);
    let visibility: String = row.get(8);
    let location: Option<String> = row.get(12);
    Event {
        id: row.get(0),
        tenant_id: TenantId(row.get(1)),
        organizer_id: UserId(row.get(2)),
        group_id: row.get(3),
        title: row.get(4),
        description: row.get(5),
        slug: row.get(6),
        status: status.parse().unwrap_or(EventStatus::Draft),
        participants_visibility: visibility.parse().unwrap_or_default(),
        starts_at: row.get(9),
        ends_at: row.get(10),
        timezone: row.get(11),
        location_type: location.as_deref().and_then(LocationType::parse),
        location_address: row.get(13),
        location_url: row.get(14),
        cover_image_id: row.get(15),
        settings: row.get(16),
        published_at: row.get(17),
        created_at: row.get(18),
        updated_at: row.get(19),
        waiting_room: row.get(20),
        offer: None,
    }
}

/// What consumers of event-service events need to know about an event.
pub fn payload(e: &Event) -> EventState {
    EventState {
        event_id: e.id,
        tenant_id: e.tenant_id,
        organizer_id: e.organizer_id,
        group_id: e.group_id,
        title: e.title.clone(),
        slug: e.slug.clone(),
        status: e.status,
        starts_at: e.starts_at,
        ends_at: e.ends_at,
        timezone: e.timezone.clone(),
        location_type: e.location_type,
        location_address: e.location_address.clone(),
        location_url: e.location_url.clone(),
        cover_image_id: e.cover_image_id,
    }
}

/// Fields of a new event (already validated).
#[derive(Clone, Debug)]
pub struct NewEvent {
    /// Title.
    pub title: String,
    /// Description.
    pub description: String,
    /// Slug chosen by the organizer; generated from the title when absent.
    pub slug: Option<String>,
    /// Group for a private event.
    pub group_id: Option<Uuid>,
    /// Participant visibility.
    pub participants_visibility: ParticipantsVisibility,
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// End.
    pub ends_at: Option<DateTime<Utc>>,
    /// Time zone.
    pub timezone: String,
    /// Kind of place.
    pub location_type: Option<LocationType>,
    /// Address.
    pub location_address: Option<String>,
    /// URL.
    pub location_url: Option<String>,
    /// Cover image.
    pub cover_image_id: Option<Uuid>,
    /// Settings.
    pub settings: serde_json::Value,
}

async fn check_group(tx: &crate::Tx, group: Option<Uuid>) -> Result<()> {
    let Some(group) = group else { return Ok(()) };
    // Under RLS only the tenant's own groups are visible.
    let known: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM event_service.groups WHERE id = $1)",
            &[&group],
        )
        .await?
        .get(0);
    if known {
        Ok(())
    } else {
        Err(Refusal::from(EventRefusal::GroupNotInOrganization).into())
    }
}

/// Creates a DRAFT event and publishes event.created.
pub async fn create(
    db: &Database,
    tenant: TenantId,
    organizer: UserId,
    new: &NewEvent,
    now: DateTime<Utc>,
) -> Result<Event> {
    let tx = db.begin(Scope::tenant(tenant, Some(organizer))).await?;
    check_group(&tx, new.group_id).await?;
    let event = insert(&tx, tenant, organizer, new, now).await?;
    announce_created(&tx, tenant, organizer, &event).await?;
    tx.commit().await?;
    Ok(event)
}

/// Publishes event.created for a new event, in the transaction that wrote it.
async fn announce_created(
    tx: &crate::Tx,
    tenant: TenantId,
    organizer: UserId,
    event: &Event,
) -> Result<()> {
    let created = DomainEvent::EventCreated(payload(event));
    publish(tx, Some(tenant), Some(organizer), created).await?;
    Ok(())
}

/// Writes a new DRAFT event under the first free slug made from the asked one or the title.
async fn insert(
    tx: &crate::Tx,
    tenant: TenantId,
    organizer: UserId,
    new: &NewEvent,
    now: DateTime<Utc>,
) -> Result<Event> {
    let base = new
        .slug
        .clone()
        .unwrap_or_else(|| slug::slugify(&new.title));
    for attempt in 0..slug::ATTEMPTS {
        let suffix = Uuid::new_v4().simple().to_string();
        let Some(candidate) = slug::candidate(&base, new.slug.is_some(), attempt, &suffix[..6])
        else {
            break;
        };
        let row = tx
            .query_opt(
                &format!(
                    "INSERT INTO event_service.events (id, tenant_id, organizer_id, group_id, title, description, slug,
                        participants_visibility, starts_at, ends_at, timezone, location_type, location_address,
                        location_url, cover_image_id, settings, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $17)
                     ON CONFLICT (slug) DO NOTHING RETURNING {COLUMNS}"
                ),
                &[
                    &Uuid::now_v7(),
                    &tenant.as_uuid(),
                    &organizer.as_uuid(),
                    &new.group_id,
                    &new.title,
                    &new.description,
                    &candidate,
                    &new.participants_visibility.as_str(),
                    &new.starts_at,
                    &new.ends_at,
                    &new.timezone,
                    &new.location_type.map(|l| l.as_str()),
                    &new.location_address,
                    &new.location_url,
                    &new.cover_image_id,
                    &new.settings,
                    &now,
                ],
            )
            .await?;
        if let Some(row) = row {
            return Ok(from_row(&row));
        }
    }
    Err(Refusal::from(EventRefusal::SlugTaken).into())
}

/// Copies an event of the tenant (any status, not deleted) into a new DRAFT with its details
/// and active ticket types (no registrations, no seats taken), moved to `starts_at` when given with
/// every other time of the event; publishes event.created for the copy.
pub async fn copy(
    db: &Database,
    tenant: TenantId,
    organizer: UserId,
    source: Uuid,
    title: Option<&str>,
    starts_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<Event> {
    use domain::events::copy::{self, Shift};
    let tx = db.begin(Scope::tenant(tenant, Some(organizer))).await?;
    require_own(&tx, tenant, source).await?;
    let row = tx
        .query_one(
            &format!("SELECT {COLUMNS} FROM event_service.events WHERE id = $1"),
            &[&source],
        )
        .await?;
    let from = from_row(&row);
    let shift = Shift::between(from.starts_at, starts_at);
    let past = || Refusal::from(EventRefusal::CopyPastCalendar);
    let new = NewEvent {
        title: copy::title(&from.title, title),
        description: from.description,
        slug: None,
        group_id: from.group_id,
        participants_visibility: from.participants_visibility,
        starts_at: shift.apply(from.starts_at).ok_or_else(past)?,
        ends_at: shift.apply_opt(from.ends_at).map_err(|_| past())?,
        timezone: from.timezone,
        location_type: from.location_type,
        location_address: from.location_address,
        location_url: from.location_url,
        cover_image_id: from.cover_image_id,
        settings: from.settings,
    };
    let event = insert(&tx, tenant, organizer, &new, now).await?;
    // Retired types (deactivated once they had sales) were taken off sale: the copy offers
    // what the source offers.
    let offered = super::ticket_types::of_event(&tx, source).await?;
    for kind in offered.into_iter().filter(|t| t.is_active) {
        let fields = super::ticket_types::TicketFields {
            name: kind.name,
            description: kind.description,
            price_cents: kind.price_cents,
            currency: kind.currency,
            quantity: kind.quantity,
            reservation_minutes: kind.reservation_minutes,
            prepayment_percent: kind.prepayment_percent,
            sales_start: shift.apply_opt(kind.sales_start).map_err(|_| past())?,
            sales_end: shift.apply_opt(kind.sales_end).map_err(|_| past())?,
            sort_order: kind.sort_order,
            is_active: kind.is_active,
        };
        super::ticket_types::insert(&tx, tenant, event.id, &fields, now).await?;
    }
    announce_created(&tx, tenant, organizer, &event).await?;
    tx.commit().await?;
    Ok(event)
}

/// Filters of the event list.
#[derive(Clone, Debug, Default)]
pub struct EventFilter {
    /// Only this status.
    pub status: Option<EventStatus>,
    /// Only events of this organizer.
    pub organizer_id: Option<Uuid>,
    /// Only events of this organization (tenant). The visibility rules still apply: its own
    /// members see every status, anyone else what they could see anyway.
    pub organization_id: Option<Uuid>,
    /// Only events starting at or after.
    pub starts_after: Option<DateTime<Utc>>,
    /// Full-text search over title and description (Russian and English).
    pub search: Option<String>,
}

/// Events the scope may see, filtered and paged, each with its offer at `now`.
pub async fn list(
    db: &Database,
    scope: Scope,
    filter: &EventFilter,
    request: &PageRequest,
    now: DateTime<Utc>,
) -> Result<Page<Event>> {
    let tx = db.begin(scope).await?;
    let status = filter.status.map(|s| s.as_str());
    let search = filter
        .search
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    let params: [&(dyn ToSql + Sync); 5] = [
        &status,
        &filter.organizer_id,
        &filter.starts_after,
        &search,
        &filter.organization_id,
    ];
    let found = page::fetch(
        &tx,
        COLUMNS,
        "FROM event_service.events WHERE deleted_at IS NULL
           AND ($1::text IS NULL OR status = $1)
           AND ($2::uuid IS NULL OR organizer_id = $2)
           AND ($3::timestamptz IS NULL OR starts_at >= $3)
           AND ($4::text IS NULL OR search @@ (plainto_tsquery('russian', $4) || plainto_tsquery('english', $4)))
           AND ($5::uuid IS NULL OR tenant_id = $5)",
        &params,
        request,
        "id",
        from_row,
    )
    .await?;
    let mut offers = offers(&tx, &found.data, now).await?;
    tx.commit().await?;
    Ok(found.map(|mut event| {
        event.offer = offers.remove(&event.id);
        event
    }))
}

/// The offers of `events` by event: only types the transaction may see (others' drafts are
/// hidden by the visibility rules before this reads anything). The lowest price is that of a
/// type with seats left, while one has them: a sold-out cheap type would promise a price
/// nobody can pay.
async fn offers(
    tx: &crate::Tx,
    events: &[Event],
    now: DateTime<Utc>,
) -> Result<std::collections::HashMap<Uuid, Offer>> {
    let ids: Vec<Uuid> = events.iter().map(|e| e.id).collect();
    let rows = tx
        .query(
            "SELECT event_id, (array_agg(price_cents ORDER BY quantity <= sold_count + reserved_count, price_cents, sort_order))[1],
                    (array_agg(currency ORDER BY quantity <= sold_count + reserved_count, price_cents, sort_order))[1],
                    sum(greatest(quantity - sold_count - reserved_count, 0))::int8, sum(quantity)::int8
               FROM event_service.ticket_types
              WHERE event_id = ANY($1) AND is_active AND (sales_end IS NULL OR sales_end > $2)
              GROUP BY event_id",
            &[&ids, &now],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|row| {
            let offer = Offer {
                lowest_price_cents: row.get(1),
                currency: row.get(2),
                seats_left: row.get(3),
                seats_total: row.get(4),
            };
            (row.get(0), offer)
        })
        .collect())
}

/// One event, if the scope may see it.
/// Refuses (not found) an event that is not `tenant`'s own, even one its scope may read
/// (another organization's public event), and a deleted one.
pub(crate) async fn require_own(tx: &crate::Tx, tenant: TenantId, event: Uuid) -> Result<()> {
    tx.query_opt(
        "SELECT 1 FROM event_service.events WHERE id = $1 AND tenant_id = $2 AND deleted_at IS NULL",
        &[&event, &tenant.as_uuid()],
    )
    .await?
    .ok_or_else(Refusal::not_found)?;
    Ok(())
}

pub async fn get(db: &Database, scope: Scope, id: Uuid) -> Result<Event> {
    one_where(db, scope, "id = $1", &id).await
}

/// An event by its slug (the web front's readable address), as the scope sees it.
pub async fn get_by_slug(db: &Database, scope: Scope, slug: &str) -> Result<Event> {
    one_where(db, scope, "slug = $1", &slug).await
}

/// What the analytics service needs to track an event's pages, from the source rather than
/// its projection (which follows the outbox and may lag behind).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tracking {
    /// The organization the records belong to.
    pub tenant: TenantId,
    /// Not public: never published, or unpublished since.
    pub draft: bool,
}

/// How analytics may track the live event `id`, whoever asks (analytics decides who may);
/// `None` when there is no such event or it was deleted.
pub async fn tracking_of(db: &Database, id: Uuid) -> Result<Option<Tracking>> {
    // Read as the system: the caller is another service deciding for someone who may not see
    // a draft, which is the answer it needs. A draft is what analytics' consumers make of the
    // life-cycle events: never published (a cancelled draft too), or back in DRAFT.
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT tenant_id, status = 'DRAFT' OR published_at IS NULL
             FROM event_service.events WHERE id = $1 AND deleted_at IS NULL",
            &[&id],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| Tracking {
        tenant: TenantId(r.get(0)),
        draft: r.get(1),
    }))
}

/// The one live event `condition` (on `$1`) selects, as the scope sees it.
async fn one_where(
    db: &Database,
    scope: Scope,
    condition: &str,
    value: &(dyn tokio_postgres::types::ToSql + Sync),
) -> Result<Event> {
    let tx = db.begin(scope).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM event_service.events WHERE {condition} AND deleted_at IS NULL"
            ),
            &[value],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    tx.commit().await?;
    Ok(from_row(&row))
}

/// Locks an event of the tenant for a change; 404 for anything else.
async fn lock(tx: &crate::Tx, id: Uuid) -> Result<Event> {
    // FOR UPDATE applies the UPDATE policies too: another tenant's published event, readable
    // by anyone, cannot be locked (nor changed) here.
    let row = tx
        .query_opt(&format!("SELECT {COLUMNS} FROM event_service.events WHERE id = $1 AND deleted_at IS NULL FOR UPDATE"), &[&id])
        .await?
        .ok_or_else(Refusal::not_found)?;
    Ok(from_row(&row))
}

/// The fields of an event a change may touch, for the rules in `domain::events::patch`.
fn fields(e: &Event) -> EventFields {
    EventFields {
        title: e.title.clone(),
        description: e.description.clone(),
        group_id: e.group_id,
        participants_visibility: e.participants_visibility,
        starts_at: e.starts_at,
        ends_at: e.ends_at,
        timezone: e.timezone.clone(),
        location_type: e.location_type,
        location_address: e.location_address.clone(),
        location_url: e.location_url.clone(),
        cover_image_id: e.cover_image_id,
        settings: e.settings.clone(),
    }
}

/// Updates an event of the tenant under the rules of `domain::events::patch`: a final event
/// cannot change, and the notices the change calls for are published with it.
pub async fn update(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    id: Uuid,
    change: &EventPatch,
    now: DateTime<Utc>,
) -> Result<Event> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let before = lock(&tx, id).await?;
    patch::may_change(before.status)?;
    if let Some(group) = change.group_id {
        check_group(&tx, group).await?;
    }
    let current = fields(&before);
    let after = patch::merge(&current, change)?;
    let row = tx
        .query_one(
            &format!(
                "UPDATE event_service.events SET title = $2, description = $3, group_id = $4, participants_visibility = $5,
                    starts_at = $6, ends_at = $7, timezone = $8, location_type = $9, location_address = $10,
                    location_url = $11, cover_image_id = $12, settings = $13, updated_at = $14
                 WHERE id = $1 RETURNING {COLUMNS}"
            ),
            &[
                &id,
                &after.title,
                &after.description,
                &after.group_id,
                &after.participants_visibility.as_str(),
                &after.starts_at,
                &after.ends_at,
                &after.timezone,
                &after.location_type.map(|l| l.as_str()),
                &after.location_address,
                &after.location_url,
                &after.cover_image_id,
                &after.settings,
                &now,
            ],
        )
        .await?;
    let event = from_row(&row);
    let notices = patch::notices(event.status, &current, &fields(&event));
    if notices.changed {
        let changed = EventChanged {
            event: payload(&event),
            previous: Place {
                starts_at: before.starts_at,
                ends_at: before.ends_at,
                location_type: before.location_type,
                location_address: before.location_address.clone(),
                location_url: before.location_url.clone(),
            },
        };
        publish(
            &tx,
            Some(tenant),
            Some(user),
            DomainEvent::EventChanged(changed),
        )
        .await?;
    }
    if notices.cover_changed {
        publish(
            &tx,
            Some(tenant),
            Some(user),
            DomainEvent::EventCoverChanged(CoverChanged {
                event_id: id,
                cover_image_id: event.cover_image_id,
                previous_cover_image_id: before.cover_image_id,
            }),
        )
        .await?;
    }
    tx.commit().await?;
    Ok(event)
}

/// Applies a life-cycle action and publishes its event. Cancelling follows through for
/// everyone the event touches (`cancellation`); cancelling a cancelled event changes nothing.
pub async fn transition(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    id: Uuid,
    action: Action,
    now: DateTime<Utc>,
) -> Result<Event> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let event = apply(&tx, tenant, Some(user), id, action, now).await?;
    tx.commit().await?;
    Ok(event)
}

/// `transition` inside `tx`.
async fn apply(
    tx: &crate::Tx,
    tenant: TenantId,
    user: Option<UserId>,
    id: Uuid,
    action: Action,
    now: DateTime<Utc>,
) -> Result<Event> {
    // The event, then its ticket types: the one lock order (docs/decisions.md). A seat batch
    // waits at the event (its key share conflicts with this lock) and then reads the event
    // as we leave it.
    let event = lock(tx, id).await?;
    tx.execute(
        "SELECT 1 FROM event_service.ticket_types WHERE event_id = $1 ORDER BY id FOR UPDATE",
        &[&id],
    )
    .await?;
    let next = event.status.apply(action, event.starts_at, now)?;
    if next == event.status {
        return Ok(event);
    }
    let row = tx
        .query_one(
            &format!(
                "UPDATE event_service.events SET status = $2, updated_at = $3,
                    published_at = CASE WHEN $2 = 'PUBLISHED' THEN COALESCE(published_at, $3) ELSE published_at END
                 WHERE id = $1 RETURNING {COLUMNS}"
            ),
            &[&id, &next.as_str(), &now],
        )
        .await?;
    let event = from_row(&row);
    let announce = match action {
        Action::Publish => DomainEvent::EventPublished,
        Action::Cancel => DomainEvent::EventCancelled,
        Action::Complete => DomainEvent::EventCompleted,
        Action::Unpublish => DomainEvent::EventUnpublished,
    };
    // The notice goes out before the registrations it ends, so a consumer reading in order
    // still knows who held a seat.
    publish(tx, Some(tenant), user, announce(payload(&event))).await?;
    if action == Action::Cancel {
        let summary = super::registrations::event_summary(tx, id).await?;
        let done = super::cancellation::follow_through(tx, tenant, user, id, &summary, now).await?;
        tracing::info!(
            event = %id,
            registrations = done.registrations,
            refunds = done.refunds,
            waiting_closed = done.waiting_closed,
            "event cancelled"
        );
    }
    Ok(event)
}

/// Cancels every event of an organization that is not over yet (the organization was
/// deleted), following through for their participants, then archives them all. Runs in a
/// transaction of the organization's tenant.
pub async fn cancel_all_of(tx: &crate::Tx, tenant: TenantId, now: DateTime<Utc>) -> Result<usize> {
    let open: Vec<Uuid> = tx
        .query(
            "SELECT id FROM event_service.events
             WHERE tenant_id = $1 AND deleted_at IS NULL AND status IN ('DRAFT', 'PUBLISHED') ORDER BY id",
            &[&tenant.as_uuid()],
        )
        .await?
        .iter()
        .map(|r| r.get(0))
        .collect();
    for id in &open {
        apply(tx, tenant, None, *id, Action::Cancel, now).await?;
    }
    tx.execute(
        "UPDATE event_service.events SET deleted_at = $1, updated_at = $1 WHERE tenant_id = $2 AND deleted_at IS NULL",
        &[&now, &tenant.as_uuid()],
    )
    .await?;
    Ok(open.len())
}

/// Soft-deletes an event of the tenant. A published event must be cancelled first, so its
/// participants are told.
pub async fn delete(
    db: &Database,
    tenant: TenantId,
    user: UserId,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<()> {
    let tx = db.begin(Scope::tenant(tenant, Some(user))).await?;
    let event = lock(&tx, id).await?;
    lifecycle::may_delete(event.status)?;
    tx.execute(
        "UPDATE event_service.events SET deleted_at = $2, updated_at = $2 WHERE id = $1",
        &[&id, &now],
    )
    .await?;
    publish(
        &tx,
        Some(tenant),
        Some(user),
        DomainEvent::EventDeleted(EventDeleted {
            event_id: id,
            cover_image_id: event.cover_image_id,
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Completes every published event whose end has passed (`domain::events::lifecycle::
/// completes_at`: its end, or a day after its start when it has none).
/// Returns how many were completed.
pub async fn complete_ended(db: &Database, now: DateTime<Utc>) -> Result<usize> {
    update_and_announce(
        db,
        None,
        "SET status = 'COMPLETED', updated_at = $1
         WHERE status = 'PUBLISHED' AND deleted_at IS NULL
           AND COALESCE(ends_at, starts_at + interval '24 hours') < $1",
        DomainEvent::EventCompleted,
        &[&now],
    )
    .await
}

/// Publishes event.reminder once for every published event of the fence's shards starting
/// within 24 hours. Returns how many reminders went out.
pub async fn remind_due(db: &Database, fence: &Fence, now: DateTime<Utc>) -> Result<usize> {
    if fence.is_empty() {
        return Ok(0);
    }
    update_and_announce(
        db,
        Some(fence),
        "SET reminder_sent_at = $1
         WHERE status = 'PUBLISHED' AND deleted_at IS NULL AND reminder_sent_at IS NULL
           AND starts_at > $1 AND starts_at <= $1 + interval '24 hours' AND shard = ANY($2)",
        DomainEvent::EventReminder,
        &[&now, &fence.shards()],
    )
    .await
}

/// Publishes event.reminder for one event if it is due (the event's actor timer, under its
/// shard's fence); the `reminder_sent_at` claim keeps it to once whoever gets there first.
pub async fn remind(db: &Database, fence: &Fence, event: Uuid, now: DateTime<Utc>) -> Result<bool> {
    let sent = update_and_announce(
        db,
        Some(fence),
        "SET reminder_sent_at = $1
         WHERE id = $2 AND status = 'PUBLISHED' AND deleted_at IS NULL AND reminder_sent_at IS NULL
           AND starts_at > $1 AND starts_at <= $1 + interval '24 hours'",
        DomainEvent::EventReminder,
        &[&now, &event],
    )
    .await?;
    Ok(sent == 1)
}

/// When the reminder of `event` falls due (24 hours before it starts), while it is published
/// and has had none.
pub async fn reminder_due_at(db: &Database, event: Uuid) -> Result<Option<DateTime<Utc>>> {
    let tx = db.begin(Scope::system()).await?;
    let row = tx
        .query_opt(
            "SELECT starts_at - interval '24 hours' FROM event_service.events
             WHERE id = $1 AND status = 'PUBLISHED' AND deleted_at IS NULL AND reminder_sent_at IS NULL",
            &[&event],
        )
        .await?;
    tx.commit().await?;
    Ok(row.map(|r| r.get(0)))
}

/// `reminder_due_at` of several events in one read (those without a reminder to send are left
/// out): the actors an on-sale's first second starts ask together.
pub async fn reminders_due_at(
    db: &Database,
    events: &[Uuid],
) -> Result<std::collections::HashMap<Uuid, DateTime<Utc>>> {
    let tx = db.begin(Scope::system()).await?;
    let rows = tx
        .query(
            "SELECT id, starts_at - interval '24 hours' FROM event_service.events
             WHERE id = ANY($1) AND status = 'PUBLISHED' AND deleted_at IS NULL
               AND reminder_sent_at IS NULL",
            &[&events],
        )
        .await?;
    tx.commit().await?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// A job across tenants: updates the events `set_where` selects (with `params`) and
/// announces each of them with `announce`; under `fence` when only a shard's owner may.
async fn update_and_announce(
    db: &Database,
    fence: Option<&Fence>,
    set_where: &str,
    announce: fn(EventState) -> DomainEvent,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<usize> {
    let tx = db.begin(Scope::system()).await?;
    if let Some(fence) = fence {
        fence.check(&tx).await?;
    }
    let rows = tx
        .query(
            &format!("UPDATE event_service.events {set_where} RETURNING {COLUMNS}"),
            params,
        )
        .await?;
    for row in &rows {
        let event = from_row(row);
        publish(&tx, Some(event.tenant_id), None, announce(payload(&event))).await?;
    }
    tx.commit().await?;
    Ok(rows.len())
}

/// An event and one of its ticket types, as the scope sees them, read in one transaction
/// (the registration path reads both for every request).
pub async fn get_with_type(
    db: &Database,
    scope: Scope,
    id: Uuid,
    ticket_type: Uuid,
) -> Result<(Event, Option<super::ticket_types::TicketType>)> {
    let tx = db.begin(scope).await?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM event_service.events WHERE id = $1 AND deleted_at IS NULL"
            ),
            &[&id],
        )
        .await?
        .ok_or_else(Refusal::not_found)?;
    let kind = tx
        .query_opt(
            &format!(
                "SELECT {} FROM event_service.ticket_types WHERE id = $1 AND event_id = $2",
                super::ticket_types::COLUMNS
            ),
            &[&ticket_type, &id],
        )
        .await?;
    tx.commit().await?;
    Ok((
        from_row(&row),
        kind.as_ref().map(super::ticket_types::from_row),
    ))
}
