//! The notification service's broker consumer. Each event is applied once (inbox): the
//! projection is updated and the messages it causes are rendered and queued in the same
//! transaction, so a redelivered event sends nothing twice and a crash loses nothing. The
//! send queue's actor is woken afterwards. A waiting-list offer that no chat can carry goes
//! by mail inside that transaction instead: a failed send rolls the claim back and the broker
//! brings the event again.

use crate::offer_mail;
use crate::sender::SendQueue;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::clock::Clock;
use domain::envelope::Envelope;
use domain::events::registrations::EVENT_CANCELLED;
use domain::i18n::Lang;
use domain::ids::{TenantId, UserId};
use domain::notifications::Kind;
use domain::notifications::delivery::SkipReason;
use domain::notifications::mails;
use domain::notifications::templates;
use domain::notifications::times::{self, Zone};
use domain::notifications::values::{self, EventFacts};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use storage::broker::{Handler, HandlerError};
use storage::mail::{Mail, Mailer};
use storage::notifications::projection::{self, EventInfo, Participant, Recipient, UserInfo};
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
    "registration.confirmed",
    "registration.cancelled",
    "reservation.expired",
    "event.cancelled",
    "event.changed",
    "event.reminder",
    "payment.completed",
    "refund.requested",
    "waitlist.available",
];

/// Turns broker events into queued messages (and a waiting-list offer into a mail when no
/// chat can carry it).
pub struct Notifier {
    db: Database,
    queue: SendQueue,
    bot_on: bool,
    public_url: String,
    mailer: Mailer,
    clock: Arc<dyn Clock>,
}

impl Notifier {
    /// A consumer writing through `db` and waking `queue`; `bot_on` is false without a token.
    /// `mailer` carries the offers no chat can; `clock` says when a reminder is read ("in 2
    /// hours").
    pub fn new(
        db: Database,
        queue: SendQueue,
        bot_on: bool,
        public_url: &str,
        mailer: Mailer,
        clock: Arc<dyn Clock>,
    ) -> Notifier {
        Notifier {
            db,
            queue,
            bot_on,
            public_url: public_url.to_string(),
            mailer,
            clock,
        }
    }
}

type Outcome = Result<Vec<NewMessage>, HandlerError>;

/// What an event causes: messages to queue, and at most one mail to send before the claim
/// commits (with the record of it).
#[derive(Default)]
struct Planned {
    messages: Vec<NewMessage>,
    mail: Option<(Mail, NewMessage)>,
}

impl From<Vec<NewMessage>> for Planned {
    fn from(messages: Vec<NewMessage>) -> Planned {
        Planned {
            messages,
            mail: None,
        }
    }
}

#[async_trait]
impl Handler for Notifier {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        let tx = self.db.begin(Scope::system()).await?;
        if !inbox::claim(&tx, Schema::NotificationService, CONSUMER, event.id).await? {
            return Ok(());
        }
        // Queue times are wall-clock: the messenger's limits and waits are.
        let now = Utc::now();
        let planned: Planned = match event.event_type.as_str() {
            "user.registered" => self.welcome(&tx, event, now).await?.into(),
            "user.updated" => rename(&tx, event, now).await?.into(),
            "registration.created" => self.created(&tx, event, now).await?.into(),
            "registration.confirmed" => self.confirmed(&tx, event, now).await?.into(),
            "registration.cancelled" | "reservation.expired" => self
                .about_registration(&tx, event, same_named(event)?, now)
                .await?
                .into(),
            "event.cancelled" | "event.changed" | "event.reminder" => self
                .to_participants(&tx, event, same_named(event)?, now)
                .await?
                .into(),
            "payment.completed" => self.paid(&tx, event).await?.into(),
            "refund.requested" => self.refund(&tx, event).await?.into(),
            "waitlist.available" => self.waitlist(&tx, event).await?,
            _ => Planned::default(),
        };
        let messages = planned.messages;
        let queued = queue::enqueue(&tx, &messages, now).await?;
        if let Some((mail, record)) = planned.mail {
            // Sent while the claim is held: a failure drops `tx` (the claim with it) and the
            // broker delivers the event again; a concurrent delivery waits on the claim.
            let outcome = offer_mail::send(&self.mailer, &mail, event).await?;
            queue::record_mail(&tx, &record, &outcome, Utc::now()).await?;
        }
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
        let info = user_info(&event.data)?;
        let (user, first) = (info.user_id, info.first_name.clone());
        projection::upsert_user(tx, &info, now).await?;
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

    /// registration.created: a confirmed registration gets its ticket (the QR code of its
    /// check-in code); one awaiting payment is told its seat is held (until when, for a
    /// reservation) and how to confirm it, without a code: that comes with the payment.
    async fn created(&self, tx: &Tx, event: &Envelope, now: DateTime<Utc>) -> Outcome {
        let (participant, info) = registration(event, true)?;
        // A confirmation that overtook the creation already sent the ticket: a "pay to
        // confirm" after it would be false.
        let state = projection::ticket_state(tx, participant.registration_id).await?;
        projection::upsert_event(tx, &info, now).await?;
        projection::upsert_participant(tx, &participant, now).await?;
        let facts = info.facts(&self.public_url);
        if state.is_some_and(|s| s.sent) {
            return Ok(Vec::new());
        }
        let awaiting = match event.data["status"].as_str() {
            Some("RESERVED") => Some(Kind::RegistrationReserved),
            Some("PENDING") => Some(Kind::RegistrationPending),
            _ => None,
        };
        let Some(kind) = awaiting else {
            return Ok(self
                .ticket(tx, &participant, &facts, event, now)
                .await?
                .into_iter()
                .collect());
        };
        let to =
            projection::recipient(tx, participant.user_id, &participant.first_name, "").await?;
        let mut values = self.values_for(&to, &facts);
        if let Some(until) = time_at(&event.data, "expiresAt") {
            let at = times::date(until, facts.zone, to.preferences.language);
            values.insert("expiresAt".into(), at);
        }
        Ok(vec![self.message(
            kind,
            &to,
            &values,
            event,
            Some(participant.tenant_id),
            None,
        )])
    }

    /// The ticket of a registration that holds a seat, unless one went out already (one
    /// ticket per registration, whichever event confirmed it first).
    async fn ticket(
        &self,
        tx: &Tx,
        participant: &Participant,
        facts: &EventFacts,
        event: &Envelope,
        now: DateTime<Utc>,
    ) -> Result<Option<NewMessage>, HandlerError> {
        if !projection::claim_ticket(tx, participant.registration_id, now).await? {
            return Ok(None);
        }
        let to = projection::recipient(
            tx,
            participant.user_id,
            &participant.first_name,
            &participant.confirmation_code,
        )
        .await?;
        let values = self.values_for(&to, facts);
        Ok(Some(self.message(
            Kind::RegistrationConfirmed,
            &to,
            &values,
            event,
            Some(participant.tenant_id),
            Some(participant.confirmation_code.clone()),
        )))
    }

    /// registration.confirmed (a payment confirmed it, or took a free seat after its
    /// reservation ran out): the projection follows and the ticket goes out, once. Only the
    /// event service's word confirms a seat: a payment alone may come too late and be refunded.
    async fn confirmed(&self, tx: &Tx, event: &Envelope, now: DateTime<Utc>) -> Outcome {
        let (participant, info) = registration(event, true)?;
        projection::upsert_event(tx, &info, now).await?;
        projection::upsert_participant(tx, &participant, now).await?;
        let facts = info.facts(&self.public_url);
        Ok(self
            .ticket(tx, &participant, &facts, event, now)
            .await?
            .into_iter()
            .collect())
    }

    /// registration.cancelled / reservation.expired (the seat released): the projection
    /// follows, and the person is told. A registration cancelled with its event is left to
    /// the one event.cancelled notice: it stays on the event's list so that notice reaches it
    /// whichever of the two arrives first, and the event is marked cancelled now.
    async fn about_registration(
        &self,
        tx: &Tx,
        event: &Envelope,
        kind: Kind,
        now: DateTime<Utc>,
    ) -> Outcome {
        let (participant, info) = registration(event, false)?;
        projection::upsert_event(tx, &info, now).await?;
        if event.data["cancellationReason"].as_str() == Some(EVENT_CANCELLED) {
            projection::cancel_event(tx, info.event_id, now).await?;
            return Ok(Vec::new());
        }
        projection::upsert_participant(tx, &participant, now).await?;
        let to = projection::recipient(
            tx,
            participant.user_id,
            &participant.first_name,
            &participant.confirmation_code,
        )
        .await?;
        let values = self.values_for(&to, &info.facts(&self.public_url));
        Ok(vec![self.message(
            kind,
            &to,
            &values,
            event,
            Some(participant.tenant_id),
            None,
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
        // How far off the start is, read at the moment the reminder is written (the node's
        // clock, which tests move).
        let read_at = self.clock.now();
        Ok(recipients
            .iter()
            .map(|to| {
                let mut values = self.values_for(to, &facts);
                if kind == Kind::EventReminder {
                    let lang = to.preferences.language;
                    let when = times::starts_in(read_at, info.starts_at, facts.zone, lang);
                    values.insert("eventWhen".into(), when);
                }
                self.message(kind, to, &values, event, Some(info.tenant_id), None)
            })
            .collect())
    }

    /// payment.completed: the receipt (the ticket comes with registration.confirmed, when
    /// the payment bought a seat).
    async fn paid(&self, tx: &Tx, event: &Envelope) -> Outcome {
        // A payment the event service reports as having bought nothing gets the refund notice
        // instead (from refund.requested), not a receipt naming a door code.
        if event.data["outcome"]
            .as_str()
            .is_some_and(|o| o != "CONFIRMED" && o != "SEAT_TAKEN")
        {
            return Ok(Vec::new());
        }
        self.about_money(tx, event, Kind::PaymentReceipt).await
    }

    /// refund.requested: the person learns their money goes back. A refund of a cancelled
    /// event's ticket is left to the one event.cancelled notice.
    async fn refund(&self, tx: &Tx, event: &Envelope) -> Outcome {
        if event.data["reason"].as_str() == Some(EVENT_CANCELLED) {
            return Ok(Vec::new());
        }
        self.about_money(tx, event, Kind::PaymentRefund).await
    }

    /// A message of `kind` about the amount a payment event names.
    async fn about_money(&self, tx: &Tx, event: &Envelope, kind: Kind) -> Outcome {
        let Some((p, to, mut values)) = self.about_payment(tx, event).await? else {
            return Err(format!("{} for a registration not known yet", event.event_type).into());
        };
        let cents = event.data["amountCents"].as_i64().unwrap_or(p.price_cents);
        let currency = event.data["currency"]
            .as_str()
            .map(str::to_string)
            .or(p.currency.clone())
            .unwrap_or_default();
        values.insert("amount".into(), values::amount(cents, &currency));
        Ok(vec![self.message(
            kind,
            &to,
            &values,
            event,
            Some(p.tenant_id),
            None,
        )])
    }

    /// The participant, recipient and message values of a payment's registration; None while
    /// registration.created has not been applied (the broker tries again later).
    async fn about_payment(
        &self,
        tx: &Tx,
        event: &Envelope,
    ) -> Result<
        Option<(
            projection::Participant,
            projection::Recipient,
            BTreeMap<String, String>,
        )>,
        HandlerError,
    > {
        let registration = uuid_at(&event.data, "registrationId")?;
        let Some(p) = projection::participant(tx, registration).await? else {
            return Ok(None);
        };
        let Some(info) = projection::event(tx, p.event_id).await? else {
            return Ok(None);
        };
        let to = projection::recipient(tx, p.user_id, &p.first_name, &p.confirmation_code).await?;
        let values = self.values_for(&to, &info.facts(&self.public_url));
        Ok(Some((p, to, values)))
    }

    /// waitlist.available: the offer, by the messenger where it reaches the person, else by
    /// mail (never both, never neither while either is possible). It is not silenced by the
    /// waitingList switch: the seat is held for them either way.
    async fn waitlist(&self, tx: &Tx, event: &Envelope) -> Result<Planned, HandlerError> {
        let user = UserId(uuid_at(&event.data, "userId")?);
        let summary = &event.data["event"];
        let event_id = uuid_at(&event.data, "eventId")?;
        let to = projection::recipient(tx, user, "", "").await?;
        let zone = match summary["timezone"].as_str() {
            Some(name) => Zone::or_utc(name),
            // An announcement from before the zone was in the payload: the known event's.
            None => projection::event(tx, event_id)
                .await?
                .map(|e| e.facts(&self.public_url).zone)
                .unwrap_or_default(),
        };
        let facts = EventFacts {
            title: text_at(summary, "title"),
            starts_at: time_at(summary, "startsAt"),
            zone,
            location_address: None,
            location_url: None,
            url: format!(
                "{}/api/v1/events/{event_id}",
                self.public_url.trim_end_matches('/')
            ),
        };
        let lang = to.preferences.language;
        let mut values = self.values_for(&to, &facts);
        if let Some(until) = time_at(&event.data, "expiresAt") {
            values.insert("expiresAt".into(), times::date(until, zone, lang));
        }
        let message = self.message(
            Kind::WaitlistAvailable,
            &to,
            &values,
            event,
            event.tenant_id,
            None,
        );
        // The address given for this list, else the account's.
        let email = match event.data["email"]
            .as_str()
            .filter(|e| !e.trim().is_empty())
        {
            Some(given) => Some(given.to_string()),
            None => projection::email_of(tx, user).await?,
        };
        match email.as_deref() {
            Some(address)
                if mails::offer_by_mail(to.chat_id.is_some(), self.bot_on, Some(address)) =>
            {
                let (subject, body) = mails::waitlist_offer(&values, lang);
                let record = NewMessage {
                    chat_id: None,
                    text: format!("{subject}\n\n{body}"),
                    skip: None,
                    ..message
                };
                let mail = Mail {
                    to: address.trim().to_string(),
                    subject,
                    body,
                };
                Ok(Planned {
                    messages: Vec::new(),
                    mail: Some((mail, record)),
                })
            }
            _ => Ok(vec![message].into()),
        }
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
    projection::upsert_user(tx, &user_info(&event.data)?, now).await?;
    Ok(Vec::new())
}

/// A user from a user.registered / user.updated payload.
fn user_info(data: &Value) -> Result<UserInfo, HandlerError> {
    Ok(UserInfo {
        user_id: UserId(uuid_at(data, "userId")?),
        first_name: text_at(data, "firstName"),
        last_name: text_at(data, "lastName"),
        email: data["email"]
            .as_str()
            .filter(|e| !e.trim().is_empty())
            .map(str::to_string),
    })
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
        timezone: data["timezone"].as_str().map(str::to_string),
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
