//! What the notification service keeps from the identity and event services' events: names,
//! the events people registered for, and the registrations, so one event's cancellation or
//! change reaches every participant and `/tickets` can answer without calling back.

use crate::db::Tx;
use crate::error::Result;
use chrono::{DateTime, Utc};
use domain::i18n::Lang;
use domain::ids::{TenantId, UserId};
use domain::notifications::Preferences;
use domain::notifications::times::Zone;
use domain::notifications::values::EventFacts;
use std::collections::{HashMap, HashSet};
use tokio_postgres::Row;
use uuid::Uuid;

/// An event as the event service last announced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventInfo {
    /// Its id.
    pub event_id: Uuid,
    /// Its organization.
    pub tenant_id: TenantId,
    /// Title.
    pub title: String,
    /// Slug (for its public address).
    pub slug: String,
    /// Start.
    pub starts_at: DateTime<Utc>,
    /// Its IANA time zone; `None` when the announcement did not name one (the stored one
    /// stays).
    pub timezone: Option<String>,
    /// Street address.
    pub location_address: Option<String>,
    /// Link of an online event.
    pub location_url: Option<String>,
}

impl EventInfo {
    /// The facts a message tells, with the event's public address under `public_url`.
    pub fn facts(&self, public_url: &str) -> EventFacts {
        EventFacts {
            title: self.title.clone(),
            starts_at: Some(self.starts_at),
            zone: Zone::or_utc(self.timezone.as_deref().unwrap_or("UTC")),
            location_address: self.location_address.clone(),
            location_url: self.location_url.clone(),
            url: format!(
                "{}/api/v1/events/{}",
                public_url.trim_end_matches('/'),
                self.event_id
            ),
        }
    }
}

/// A registration as the event service last announced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Participant {
    /// The registration.
    pub registration_id: Uuid,
    /// The organization.
    pub tenant_id: TenantId,
    /// The event.
    pub event_id: Uuid,
    /// The participant.
    pub user_id: UserId,
    /// Their first name as given at registration.
    pub first_name: String,
    /// The check-in code.
    pub confirmation_code: String,
    /// Price of the ticket in minor units.
    pub price_cents: i64,
    /// Its currency.
    pub currency: Option<String>,
    /// Whether it still holds a seat.
    pub active: bool,
}

/// Someone a message goes to: where, in which language, and what they allow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recipient {
    /// The person.
    pub user_id: UserId,
    /// Their first name.
    pub first_name: String,
    /// Their linked chat, if any.
    pub chat_id: Option<i64>,
    /// Their settings.
    pub preferences: Preferences,
    /// Their check-in code (for messages about one registration).
    pub confirmation_code: String,
}

/// What the identity service last said about a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInfo {
    /// The user.
    pub user_id: UserId,
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
    /// The account's address (none for an account made through the messenger).
    pub email: Option<String>,
}

/// Records (or renames) a user.
pub async fn upsert_user(tx: &Tx, user: &UserInfo, now: DateTime<Utc>) -> Result<()> {
    tx.execute(
        "INSERT INTO notification_service.users (user_id, first_name, last_name, email, updated_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (user_id) DO UPDATE SET first_name = $2, last_name = $3, email = $4, updated_at = $5",
        &[
            &user.user_id.as_uuid(),
            &user.first_name,
            &user.last_name,
            &user.email,
            &now,
        ],
    )
    .await?;
    Ok(())
}

/// The account's address, if the user and an address are known.
pub async fn email_of(tx: &Tx, user: UserId) -> Result<Option<String>> {
    let row = tx
        .query_opt(
            "SELECT email FROM notification_service.users WHERE user_id = $1",
            &[&user.as_uuid()],
        )
        .await?;
    Ok(row.and_then(|r| r.get(0)))
}

/// Records the event's latest details.
pub async fn upsert_event(tx: &Tx, e: &EventInfo, now: DateTime<Utc>) -> Result<()> {
    upsert_events(tx, std::slice::from_ref(e), now).await
}

/// Records the latest details of several events in one statement; of two about one event,
/// the later wins, as it would one after the other.
pub async fn upsert_events(tx: &Tx, events: &[EventInfo], now: DateTime<Utc>) -> Result<()> {
    let mut latest: Vec<&EventInfo> = Vec::with_capacity(events.len());
    for e in events.iter().rev() {
        if !latest.iter().any(|l| l.event_id == e.event_id) {
            latest.push(e);
        }
    }
    // In id order, so two transactions writing the same events wait rather than deadlock.
    latest.sort_by_key(|e| e.event_id);
    let ids: Vec<Uuid> = latest.iter().map(|e| e.event_id).collect();
    let tenants: Vec<Uuid> = latest.iter().map(|e| e.tenant_id.as_uuid()).collect();
    let titles: Vec<&str> = latest.iter().map(|e| e.title.as_str()).collect();
    let slugs: Vec<&str> = latest.iter().map(|e| e.slug.as_str()).collect();
    let starts: Vec<DateTime<Utc>> = latest.iter().map(|e| e.starts_at).collect();
    let optional = |f: fn(&EventInfo) -> &Option<String>| -> Vec<Option<&str>> {
        latest.iter().map(|e| f(e).as_deref()).collect()
    };
    tx.execute(
        // A zone left out keeps the stored one (a new event gets UTC).
        "WITH e (id, tenant, title, slug, starts, address, url, zone) AS (
            SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::timestamptz[],
                                 $6::text[], $7::text[], $9::text[]))
         INSERT INTO notification_service.events
            (event_id, tenant_id, title, slug, starts_at, location_address, location_url, updated_at, timezone)
         SELECT id, tenant, title, slug, starts, address, url, $8, COALESCE(zone, 'UTC') FROM e
         ON CONFLICT (event_id) DO UPDATE SET title = EXCLUDED.title, slug = EXCLUDED.slug,
            starts_at = EXCLUDED.starts_at, location_address = EXCLUDED.location_address,
            location_url = EXCLUDED.location_url, updated_at = EXCLUDED.updated_at,
            timezone = COALESCE((SELECT zone FROM e WHERE e.id = EXCLUDED.event_id),
                                notification_service.events.timezone)",
        &[
            &ids,
            &tenants,
            &titles,
            &slugs,
            &starts,
            &optional(|e| &e.location_address),
            &optional(|e| &e.location_url),
            &now,
            &optional(|e| &e.timezone),
        ],
    )
    .await?;
    Ok(())
}

/// Marks an event cancelled, so `/tickets` stops listing it.
pub async fn cancel_event(tx: &Tx, event: Uuid, now: DateTime<Utc>) -> Result<()> {
    tx.execute(
        "UPDATE notification_service.events SET cancelled = true, updated_at = $2 WHERE event_id = $1",
        &[&event, &now],
    )
    .await?;
    Ok(())
}

/// The event's latest details, if any were announced.
pub async fn event(tx: &Tx, event: Uuid) -> Result<Option<EventInfo>> {
    let row = tx
        .query_opt(
            "SELECT event_id, tenant_id, title, slug, starts_at, location_address, location_url, timezone
             FROM notification_service.events WHERE event_id = $1",
            &[&event],
        )
        .await?;
    Ok(row.map(|r| EventInfo {
        event_id: r.get(0),
        tenant_id: TenantId(r.get(1)),
        title: r.get(2),
        slug: r.get(3),
        starts_at: r.get(4),
        location_address: r.get(5),
        location_url: r.get(6),
        timezone: r.get(7),
    }))
}

/// Records a registration (or its new state).
pub async fn upsert_participant(tx: &Tx, p: &Participant, now: DateTime<Utc>) -> Result<()> {
    upsert_participants(tx, std::slice::from_ref(p), now).await
}

/// Records several registrations (or their new states) in one statement; of two about one
/// registration, the later wins.
pub async fn upsert_participants(tx: &Tx, all: &[Participant], now: DateTime<Utc>) -> Result<()> {
    if all.is_empty() {
        return Ok(());
    }
    let mut latest: Vec<&Participant> = Vec::with_capacity(all.len());
    for p in all.iter().rev() {
        if !latest
            .iter()
            .any(|l| l.registration_id == p.registration_id)
        {
            latest.push(p);
        }
    }
    latest.sort_by_key(|p| p.registration_id);
    let ids: Vec<Uuid> = latest.iter().map(|p| p.registration_id).collect();
    let tenants: Vec<Uuid> = latest.iter().map(|p| p.tenant_id.as_uuid()).collect();
    let events: Vec<Uuid> = latest.iter().map(|p| p.event_id).collect();
    let users: Vec<Uuid> = latest.iter().map(|p| p.user_id.as_uuid()).collect();
    let names: Vec<&str> = latest.iter().map(|p| p.first_name.as_str()).collect();
    let codes: Vec<&str> = latest
        .iter()
        .map(|p| p.confirmation_code.as_str())
        .collect();
    let prices: Vec<i64> = latest.iter().map(|p| p.price_cents).collect();
    let currencies: Vec<Option<&str>> = latest.iter().map(|p| p.currency.as_deref()).collect();
    let active: Vec<bool> = latest.iter().map(|p| p.active).collect();
    tx.execute(
        "INSERT INTO notification_service.participants
            (registration_id, tenant_id, event_id, user_id, first_name, confirmation_code, price_cents, currency, active, updated_at)
         SELECT p.*, $10::timestamptz
         FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[], $7::bigint[],
                     $8::text[], $9::bool[]) AS p
         ON CONFLICT (registration_id) DO UPDATE SET active = EXCLUDED.active, updated_at = EXCLUDED.updated_at",
        &[
            &ids, &tenants, &events, &users, &names, &codes, &prices, &currencies, &active, &now,
        ],
    )
    .await?;
    Ok(())
}

/// What `insert_new_participants` did: the participants it recorded, and of those, the ones
/// whose ticket the caller is to send.
#[derive(Debug, Default)]
pub struct Inserted {
    /// Recorded by this call (the others were recorded already, maybe a moment ago).
    pub recorded: HashSet<Uuid>,
    /// Recorded with their ticket claimed.
    pub claimed: HashSet<Uuid>,
}

/// Records the participants not recorded yet, in one statement, claiming the ticket of those
/// `wants_ticket` names as `claim_tickets` would (holding a seat, event not cancelled): a new
/// participant's ticket was never sent, so the claim is written with the row instead of as a
/// second version of it. Participants already recorded are left untouched and not returned:
/// the caller upserts them and claims their tickets the usual way.
pub async fn insert_new_participants(
    tx: &Tx,
    all: &[(&Participant, bool)],
    now: DateTime<Utc>,
) -> Result<Inserted> {
    if all.is_empty() {
        return Ok(Inserted::default());
    }
    // One lock order with `upsert_participants`.
    let mut sorted: Vec<&(&Participant, bool)> = all.iter().collect();
    sorted.sort_by_key(|(p, _)| p.registration_id);
    let ids: Vec<Uuid> = sorted.iter().map(|(p, _)| p.registration_id).collect();
    let tenants: Vec<Uuid> = sorted.iter().map(|(p, _)| p.tenant_id.as_uuid()).collect();
    let events: Vec<Uuid> = sorted.iter().map(|(p, _)| p.event_id).collect();
    let users: Vec<Uuid> = sorted.iter().map(|(p, _)| p.user_id.as_uuid()).collect();
    let names: Vec<&str> = sorted.iter().map(|(p, _)| p.first_name.as_str()).collect();
    let codes: Vec<&str> = sorted
        .iter()
        .map(|(p, _)| p.confirmation_code.as_str())
        .collect();
    let prices: Vec<i64> = sorted.iter().map(|(p, _)| p.price_cents).collect();
    let currencies: Vec<Option<&str>> = sorted.iter().map(|(p, _)| p.currency.as_deref()).collect();
    let active: Vec<bool> = sorted.iter().map(|(p, _)| p.active).collect();
    let claims: Vec<bool> = sorted.iter().map(|(_, claim)| *claim).collect();
    let rows = tx
        .query(
            "INSERT INTO notification_service.participants
                (registration_id, tenant_id, event_id, user_id, first_name, confirmation_code,
                 price_cents, currency, active, updated_at, ticket_sent_at)
             SELECT p.id, p.tenant, p.event, p.person, p.name, p.code, p.price, p.currency, p.active,
                    $11::timestamptz,
                    CASE WHEN p.claim AND p.active
                              AND NOT EXISTS (SELECT 1 FROM notification_service.events e
                                              WHERE e.event_id = p.event AND e.cancelled)
                         THEN $11::timestamptz END
             FROM UNNEST($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::text[],
                         $7::bigint[], $8::text[], $9::bool[], $10::bool[])
                  AS p(id, tenant, event, person, name, code, price, currency, active, claim)
             ON CONFLICT (registration_id) DO NOTHING
             RETURNING registration_id, ticket_sent_at IS NOT NULL",
            &[
                &ids, &tenants, &events, &users, &names, &codes, &prices, &currencies, &active,
                &claims, &now,
            ],
        )
        .await?;
    let mut inserted = Inserted::default();
    for row in &rows {
        let id: Uuid = row.get(0);
        inserted.recorded.insert(id);
        if row.get::<_, bool>(1) {
            inserted.claimed.insert(id);
        }
    }
    Ok(inserted)
}

/// Marks the registration's ticket as sent, if it holds a seat, its event is not cancelled
/// and none was sent before. Returns whether the caller is the one to send it (one ticket per
/// registration, whichever event confirms it first).
pub async fn claim_ticket(tx: &Tx, registration: Uuid, now: DateTime<Utc>) -> Result<bool> {
    Ok(!claim_tickets(tx, &[registration], now).await?.is_empty())
}

/// `claim_ticket` for several registrations in one statement: those whose ticket the caller
/// is to send.
pub async fn claim_tickets(
    tx: &Tx,
    registrations: &[Uuid],
    now: DateTime<Utc>,
) -> Result<HashSet<Uuid>> {
    if registrations.is_empty() {
        return Ok(HashSet::new());
    }
    let rows = tx
        .query(
            "UPDATE notification_service.participants p SET ticket_sent_at = $2
             WHERE p.registration_id = ANY($1) AND p.active AND p.ticket_sent_at IS NULL
               AND NOT EXISTS (SELECT 1 FROM notification_service.events e
                               WHERE e.event_id = p.event_id AND e.cancelled)
             RETURNING p.registration_id",
            &[&registrations, &now],
        )
        .await?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Where a recorded registration stands as to its ticket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TicketState {
    /// It holds a seat.
    pub active: bool,
    /// Its ticket went out.
    pub sent: bool,
}

/// The ticket state of a registration, if it is recorded.
pub async fn ticket_state(tx: &Tx, registration: Uuid) -> Result<Option<TicketState>> {
    Ok(ticket_states(tx, &[registration])
        .await?
        .remove(&registration))
}

/// The ticket states of those of `registrations` that are recorded.
pub async fn ticket_states(tx: &Tx, registrations: &[Uuid]) -> Result<HashMap<Uuid, TicketState>> {
    let rows = tx
        .query(
            "SELECT registration_id, active, ticket_sent_at IS NOT NULL
             FROM notification_service.participants WHERE registration_id = ANY($1)",
            &[&registrations],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| {
            let state = TicketState {
                active: r.get(1),
                sent: r.get(2),
            };
            (r.get(0), state)
        })
        .collect())
}

/// A registration as recorded.
pub async fn participant(tx: &Tx, registration: Uuid) -> Result<Option<Participant>> {
    let row = tx
        .query_opt(
            "SELECT registration_id, tenant_id, event_id, user_id, first_name, confirmation_code, price_cents,
                    currency, active
             FROM notification_service.participants WHERE registration_id = $1",
            &[&registration],
        )
        .await?;
    Ok(row.map(|r| Participant {
        registration_id: r.get(0),
        tenant_id: TenantId(r.get(1)),
        event_id: r.get(2),
        user_id: UserId(r.get(3)),
        first_name: r.get(4),
        confirmation_code: r.get(5),
        price_cents: r.get(6),
        currency: r.get(7),
        active: r.get(8),
    }))
}

/// What a recipient query selects after the user id, first name and code.
const RECIPIENT_COLUMNS: &str =
    "c.chat_id, pr.reminders, pr.changes, pr.waiting_list, pr.receipts, pr.language";

fn recipient_from(row: &Row) -> Recipient {
    let defaults = Preferences::default();
    let flag = |i: usize, default: bool| row.get::<_, Option<bool>>(i).unwrap_or(default);
    Recipient {
        user_id: UserId(row.get(0)),
        first_name: row.get(1),
        confirmation_code: row.get(2),
        chat_id: row.get(3),
        preferences: Preferences {
            reminders: flag(4, defaults.reminders),
            changes: flag(5, defaults.changes),
            waiting_list: flag(6, defaults.waiting_list),
            receipts: flag(7, defaults.receipts),
            language: match row.get::<_, Option<String>>(8).as_deref() {
                Some("en") => Lang::En,
                _ => Lang::Ru,
            },
        },
    }
}

/// Everyone holding a seat at `event`, with their chat and settings. The door code comes only
/// with a ticket that went out: a seat still awaiting payment is not a way in.
pub async fn participants_of(tx: &Tx, event: Uuid) -> Result<Vec<Recipient>> {
    let rows = tx
        .query(
            &format!(
                "SELECT p.user_id, p.first_name,
                    CASE WHEN p.ticket_sent_at IS NULL THEN '' ELSE p.confirmation_code END,
                    {RECIPIENT_COLUMNS}
                 FROM notification_service.participants p
                 LEFT JOIN notification_service.chats c ON c.user_id = p.user_id
                 LEFT JOIN notification_service.preferences pr ON pr.user_id = p.user_id
                 WHERE p.event_id = $1 AND p.active
                 ORDER BY p.registration_id"
            ),
            &[&event],
        )
        .await?;
    Ok(rows.iter().map(recipient_from).collect())
}

/// One person as a recipient; `first_name` and `code` fill in what the message is about
/// (the user's name from the users table wins when known).
pub async fn recipient(tx: &Tx, user: UserId, first_name: &str, code: &str) -> Result<Recipient> {
    let found = recipients(tx, &[(user, first_name, code)]).await?.pop();
    // `recipients` answers a row for everyone asked about; this is what it says of a stranger.
    Ok(found.unwrap_or_else(|| Recipient {
        user_id: user,
        first_name: first_name.to_string(),
        chat_id: None,
        preferences: Preferences::default(),
        confirmation_code: code.to_string(),
    }))
}

/// `recipient` for several people at once, in the order asked.
pub async fn recipients(tx: &Tx, people: &[(UserId, &str, &str)]) -> Result<Vec<Recipient>> {
    let users: Vec<Uuid> = people.iter().map(|(u, _, _)| u.as_uuid()).collect();
    let names: Vec<&str> = people.iter().map(|(_, name, _)| *name).collect();
    let codes: Vec<&str> = people.iter().map(|(_, _, code)| *code).collect();
    let rows = tx
        .query(
            &format!(
                "SELECT r.user_id, COALESCE(NULLIF(u.first_name, ''), r.first_name), r.code, {RECIPIENT_COLUMNS}
                 FROM UNNEST($1::uuid[], $2::text[], $3::text[]) WITH ORDINALITY AS r (user_id, first_name, code, n)
                 LEFT JOIN notification_service.users u ON u.user_id = r.user_id
                 LEFT JOIN notification_service.chats c ON c.user_id = r.user_id
                 LEFT JOIN notification_service.preferences pr ON pr.user_id = r.user_id
                 ORDER BY r.n"
            ),
            &[&users, &names, &codes],
        )
        .await?;
    Ok(rows.iter().map(recipient_from).collect())
}

/// The user bound to a chat, if any.
pub async fn user_of_chat(tx: &Tx, chat: i64) -> Result<Option<UserId>> {
    let row = tx
        .query_opt(
            "SELECT user_id FROM notification_service.chats WHERE chat_id = $1",
            &[&chat],
        )
        .await?;
    Ok(row.map(|r| UserId(r.get(0))))
}

/// Binds a chat to a user who has none yet, unless the chat belongs to someone else (a user
/// who signed in with the messenger has a private chat whose id is their messenger id).
pub async fn link_if_free(tx: &Tx, user: UserId, chat: i64, now: DateTime<Utc>) -> Result<bool> {
    let inserted = tx
        .execute(
            "INSERT INTO notification_service.chats (user_id, chat_id, linked_at)
             SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM notification_service.chats WHERE chat_id = $2)
             ON CONFLICT (user_id) DO NOTHING",
            &[&user.as_uuid(), &chat, &now],
        )
        .await?;
    Ok(inserted == 1)
}

/// A ticket ahead: the event's title, start and time zone, and the check-in code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// Event title.
    pub title: String,
    /// Event start.
    pub starts_at: DateTime<Utc>,
    /// The event's time zone.
    pub zone: Zone,
    /// Check-in code.
    pub code: String,
}

/// The user's tickets (confirmed registrations: one awaiting payment has no usable code yet)
/// for events not started and not cancelled, soonest first.
pub async fn upcoming_tickets(
    tx: &Tx,
    user: UserId,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<Ticket>> {
    let rows = tx
        .query(
            "SELECT e.title, e.starts_at, p.confirmation_code, e.timezone
             FROM notification_service.participants p
             JOIN notification_service.events e ON e.event_id = p.event_id
             WHERE p.user_id = $1 AND p.active AND p.ticket_sent_at IS NOT NULL
               AND NOT e.cancelled AND e.starts_at > $2
             ORDER BY e.starts_at, p.registration_id LIMIT $3",
            &[&user.as_uuid(), &now, &limit],
        )
        .await?;
    Ok(rows
        .iter()
        .map(|r| Ticket {
            title: r.get(0),
            starts_at: r.get(1),
            code: r.get(2),
            zone: Zone::or_utc(r.get(3)),
        })
        .collect())
}
