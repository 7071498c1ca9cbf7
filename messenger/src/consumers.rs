//! The notification service's broker consumer. Each event is applied once (inbox): the
//! projection is updated and the messages it causes are rendered and queued in the same
//! transaction, so a redelivered event sends nothing twice and a crash loses nothing. The
//! send queue's actor is woken afterwards.

use crate::sender::SendQueue;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::envelope::Envelope;
use domain::i18n::Lang;
use domain::ids::{TenantId, UserId};
use domain::notifications::Kind;
use domain::notifications::delivery::SkipReason;
use domain::notifications::templates;
use domain::notifications::values::{self, EventFacts};
use serde_json::Value;
use std::collections::BTreeMap;
use storage::broker::{Handler, HandlerError};
use storage::notifications::projection::{self, EventInfo, Participant, Recipient};
use storage::notifications::queue::{self, NewMessage};
use storage::{Database, Schema, Scope, Tx, inbox};
use uuid::Uuid;

/// The consumer name (queue `bilet.notifications`).
pub const CONSUMER: &str = "notifications";

/// The routing keys it listens to: the spec's "Consumed — Notification" rows, and
/// user.updated to keep names current.
pub const PATTERNS: &[&str] = &[
    "user.registered",
    "user.updated",
    "registration.created",
    "registration.cancelled",
    "reservation.expired",
    "event.cancelled",
    "event.changed",
    "event.reminder",
    "payment.completed",
    "waitlist.available",
];

/// Turns broker events into queued messages.
pub struct Notifier {
    db: Database,
    queue: SendQueue,
    bot_on: bool,
    public_url: String,
}

impl Notifier {
    /// A consumer writing through `db` and waking `queue`; `bot_on` is false without a token.
    pub fn new(db: Database, queue: SendQueue, bot_on: bool, public_url: &str) -> Notifier {
        Notifier {
            db,
            queue,
            bot_on,
            public_url: public_url.to_string(),
        }
    }
}

type Outcome = Result<Vec<NewMessage>, HandlerError>;

#[async_trait]
impl Handler for Notifier {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        let tx = self.db.begin(Scope::system()).await?;
        if !inbox::claim(&tx, Schema::NotificationService, CONSUMER, event.id).await? {
            return Ok(());
        }
        // Queue times are wall-clock: the messenger's limits and waits are.
        let now = Utc::now();
        let messages = match event.event_type.as_str() {
            "user.registered" => self.welcome(&tx, event, now).await?,
            "user.updated" => rename(&tx, event, now).await?,
            "registration.created" => {
                self.about_registration(&tx, event, Kind::RegistrationConfirmed, now)
                    .await?
            }
            "registration.cancelled" | "reservation.expired" => {
                self.about_registration(&tx, event, same_named(event)?, now)
                    .await?
            }
            "event.cancelled" | "event.changed" | "event.reminder" => {
                self.to_participants(&tx, event, same_named(event)?, now)
                    .await?
            }
            "payment.completed" => self.receipt(&tx, event).await?,
            "waitlist.available" => self.waitlist(&tx, event).await?,
            _ => Vec::new(),
        };
        let queued = queue::enqueue(&tx, &messages, now).await?;
        tx.commit().await?;
        warn_unlinked(event, &messages);
        if !queued.queued.is_empty() {
            self.queue.wake();
        }
        Ok(())
    }
}

impl Notifier {
    /// A message of `kind` to `to`, rendered in their language, or recorded as skipped.
    fn message(
        &self,
        kind: Kind,
        to: &Recipient,
        values: &BTreeMap<String, String>,
        event: &Envelope,
        tenant: Option<TenantId>,
        ticket: Option<String>,
    ) -> NewMessage {
        let skip = if !to.preferences.allows(kind) {
            Some(SkipReason::OptedOut)
        } else if !self.bot_on {
            Some(SkipReason::BotDisabled)
        } else if to.chat_id.is_none() {
            Some(SkipReason::NoChat)
        } else {
            None
        };
        NewMessage {
            tenant_id: tenant,
            user_id: Some(to.user_id),
            chat_id: to.chat_id,
            kind: kind.as_str().to_string(),
            source_event: Some(event.id),
            text: templates::render(kind, to.preferences.language, values),
            ticket_code: ticket,
            skip,
        }
    }

    async fn welcome(&self, tx: &Tx, event: &Envelope, now: DateTime<Utc>) -> Outcome {
        let user = UserId(uuid_at(&event.data, "userId")?);
        let first = text_at(&event.data, "firstName");
        projection::upsert_user(tx, user, &first, &text_at(&event.data, "lastName"), now).await?;
        // Who signed in with the messenger has a private chat whose id is their messenger id.
        if let Some(chat) = event.data["messengerId"]
            .as_str()
            .and_then(|m| m.parse::<i64>().ok())
        {
            projection::link_if_free(tx, user, chat, now).await?;
        }
        let to = projection::recipient(tx, user, &first, "").await?;
        let values = BTreeMap::from([("firstName".to_string(), to.first_name.clone())]);
        Ok(vec![self.message(
            Kind::UserWelcome,
            &to,
            &values,
            event,
            None,
            None,
        )])
    }

    /// registration.created (the ticket: a seat held, its QR code attached) and
    /// registration.cancelled / reservation.expired (the seat released): the projection
    /// follows, and the person is told.
    async fn about_registration(
        &self,
        tx: &Tx,
        event: &Envelope,
        kind: Kind,
        now: DateTime<Utc>,
    ) -> Outcome {
        let holds_seat = kind == Kind::RegistrationConfirmed;
        let (participant, info) = registration(event, holds_seat)?;
        projection::upsert_event(tx, &info, now).await?;
        projection::upsert_participant(tx, &participant, now).await?;
        let to = projection::recipient(
            tx,
            participant.user_id,
            &participant.first_name,
            &participant.confirmation_code,
        )
        .await?;
        let values = self.values_for(&to, &info.facts(&self.public_url));
        let ticket = holds_seat.then(|| participant.confirmation_code.clone());
        Ok(vec![self.message(
            kind,
            &to,
            &values,
            event,
            Some(participant.tenant_id),
            ticket,
        )])
    }

    /// event.cancelled, event.changed, event.reminder: one message per active participant.
    async fn to_participants(
        &self,
        tx: &Tx,
        event: &Envelope,
        kind: Kind,
        now: DateTime<Utc>,
    ) -> Outcome {
        let info = event_info(&event.data, event.tenant_id)?;
        projection::upsert_event(tx, &info, now).await?;
        if kind == Kind::EventCancelled {
            projection::cancel_event(tx, info.event_id, now).await?;
        }
        let facts = info.facts(&self.public_url);
        let recipients = projection::participants_of(tx, info.event_id).await?;
        Ok(recipients
            .iter()
            .map(|to| {
                let values = self.values_for(to, &facts);
                self.message(kind, to, &values, event, Some(info.tenant_id), None)
            })
            .collect())
    }

    async fn receipt(&self, tx: &Tx, event: &Envelope) -> Outcome {
        let registration = uuid_at(&event.data, "registrationId")?;
        // The registration is known once registration.created was applied; until then the
        // broker tries again later.
        let Some(p) = projection::participant(tx, registration).await? else {
            return Err(
                format!("payment.completed for unknown registration {registration}").into(),
            );
        };
        let Some(info) = projection::event(tx, p.event_id).await? else {
            return Err(format!("payment.completed for unknown event {}", p.event_id).into());
        };
        let to = projection::recipient(tx, p.user_id, &p.first_name, &p.confirmation_code).await?;
        let mut values = self.values_for(&to, &info.facts(&self.public_url));
        let cents = event.data["amountCents"].as_i64().unwrap_or(p.price_cents);
        let currency = event.data["currency"]
            .as_str()
            .map(str::to_string)
            .or(p.currency.clone())
            .unwrap_or_default();
        values.insert("amount".into(), values::amount(cents, &currency));
        Ok(vec![self.message(
            Kind::PaymentReceipt,
            &to,
            &values,
            event,
            Some(p.tenant_id),
            None,
        )])
    }

    async fn waitlist(&self, tx: &Tx, event: &Envelope) -> Outcome {
        let user = UserId(uuid_at(&event.data, "userId")?);
        let summary = &event.data["event"];
        let event_id = uuid_at(&event.data, "eventId")?;
        let to = projection::recipient(tx, user, "", "").await?;
        let facts = EventFacts {
            title: text_at(summary, "title"),
            starts_at: time_at(summary, "startsAt"),
            location_address: None,
            location_url: None,
            url: format!(
                "{}/api/v1/events/{event_id}",
                self.public_url.trim_end_matches('/')
            ),
        };
        let values = self.values_for(&to, &facts);
        Ok(vec![self.message(
            Kind::WaitlistAvailable,
            &to,
            &values,
            event,
            event.tenant_id,
            None,
        )])
    }

    /// The variables of a message to `to` about an event.
    fn values_for(&self, to: &Recipient, facts: &EventFacts) -> BTreeMap<String, String> {
        let lang: Lang = to.preferences.language;
        let mut values = values::for_event(&to.first_name, facts, lang);
        if !to.confirmation_code.is_empty() {
            values.insert("confirmationCode".into(), to.confirmation_code.clone());
        }
        values
    }
}

async fn rename(tx: &Tx, event: &Envelope, now: DateTime<Utc>) -> Outcome {
    let user = UserId(uuid_at(&event.data, "userId")?);
    projection::upsert_user(
        tx,
        user,
        &text_at(&event.data, "firstName"),
        &text_at(&event.data, "lastName"),
        now,
    )
    .await?;
    Ok(Vec::new())
}

/// One warning per event for the people it could not reach (a fan-out to thousands without
/// linked chats should not write thousands of lines).
fn warn_unlinked(event: &Envelope, messages: &[NewMessage]) {
    let unlinked: Vec<String> = messages
        .iter()
        .filter(|m| m.skip == Some(SkipReason::NoChat))
        .filter_map(|m| m.user_id.map(|u| u.to_string()))
        .collect();
    if unlinked.is_empty() {
        return;
    }
    tracing::warn!(
        event = %event.id,
        kind = %event.event_type,
        skipped = unlinked.len(),
        users = %unlinked.iter().take(10).cloned().collect::<Vec<_>>().join(","),
        "no linked messenger chat: notification skipped"
    );
}

/// The registration and its event from a registration event's payload; `active` says whether
/// it holds a seat after the event.
fn registration(event: &Envelope, active: bool) -> Result<(Participant, EventInfo), HandlerError> {
    let data = &event.data;
    let tenant = event
        .tenant_id
        .ok_or("registration event without tenantId")?;
    let mut summary = data["event"].clone();
    summary["eventId"] = data["eventId"].clone();
    let info = event_info(&summary, Some(tenant))?;
    let participant = Participant {
        registration_id: uuid_at(data, "registrationId")?,
        tenant_id: tenant,
        event_id: info.event_id,
        user_id: UserId(uuid_at(data, "userId")?),
        first_name: text_at(data, "firstName"),
        confirmation_code: text_at(data, "confirmationCode"),
        price_cents: data["priceCents"].as_i64().unwrap_or(0),
        currency: data["currency"].as_str().map(str::to_string),
        active,
    };
    Ok((participant, info))
}

/// An event's details from an event payload (or a registration's event summary).
fn event_info(data: &Value, tenant: Option<TenantId>) -> Result<EventInfo, HandlerError> {
    let tenant = match tenant {
        Some(t) => t,
        None => TenantId(uuid_at(data, "tenantId")?),
    };
    Ok(EventInfo {
        event_id: uuid_at(data, "eventId")?,
        tenant_id: tenant,
        title: text_at(data, "title"),
        slug: text_at(data, "slug"),
        starts_at: time_at(data, "startsAt").ok_or("event payload without startsAt")?,
        location_address: data["locationAddress"].as_str().map(str::to_string),
        location_url: data["locationUrl"].as_str().map(str::to_string),
    })
}

/// The template named like the event (all but registration.created, whose message is
/// registration.confirmed).
fn same_named(event: &Envelope) -> Result<Kind, HandlerError> {
    Kind::parse(&event.event_type)
        .ok_or_else(|| format!("no template for {}", event.event_type).into())
}

fn uuid_at(data: &Value, field: &str) -> Result<Uuid, HandlerError> {
    data[field]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("payload without {field}").into())
}

fn text_at(data: &Value, field: &str) -> String {
    data[field].as_str().unwrap_or_default().to_string()
}

fn time_at(data: &Value, field: &str) -> Option<DateTime<Utc>> {
    data[field].as_str().and_then(|s| s.parse().ok())
}
