//! The notification service's broker consumer. Each event is applied once (inbox): the
//! projection is updated and the messages it causes are rendered and queued in the same
//! transaction, so a redelivered event sends nothing twice and a crash loses nothing. The
//! send queue's actor is woken afterwards. A waiting-list offer that no chat can carry goes
//! by mail inside that transaction instead: a failed send rolls the claim back and the broker
//! brings the event again.

mod arrivals;

use crate::offer_mail;
use crate::sender::SendQueue;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::clock::Clock;
use domain::contract::events::{EventState, EventSummary, QueuePlace, Registration, WaitlistOffer};
use domain::contract::identity::UserChanged;
use domain::contract::{self, DomainEvent};
use domain::envelope::Envelope;
use domain::events::payments::PaymentOutcome;
use domain::events::refunds::came_too_late;
use domain::events::registrations::{EVENT_CANCELLED, RegistrationStatus};
use domain::i18n::Lang;
use domain::ids::TenantId;
use domain::notifications::Kind;
use domain::notifications::delivery::SkipReason;
use domain::notifications::mails;
use domain::notifications::templates;
use domain::notifications::times::{self, Zone};
use domain::notifications::values::{self, EventFacts};
use std::collections::BTreeMap;
use std::sync::Arc;
use storage::broker::HandlerError;
use storage::inbox::{Projection, Received};
use storage::mail::{Mail, Mailer};
use storage::notifications::projection::{self, EventInfo, Participant, Recipient, UserInfo};
use storage::notifications::queue::{self, Button, NewMessage};
use storage::{Schema, Tx};
use uuid::Uuid;

/// Turns broker events into queued messages (and a waiting-list offer into a mail when no
/// chat can carry it).
pub struct Notifier {
    queue: SendQueue,
    bot_on: bool,
    public_url: String,
    mailer: Mailer,
    clock: Arc<dyn Clock>,
}

impl Notifier {
    /// A consumer waking `queue`; `bot_on` is false without a token.
    /// `mailer` carries the offers no chat can; `clock` says when a reminder is read ("in 2
    /// hours").
    pub fn new(
        queue: SendQueue,
        bot_on: bool,
        public_url: &str,
        mailer: Mailer,
        clock: Arc<dyn Clock>,
    ) -> Notifier {
        Notifier {
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
impl Projection for Notifier {
    const NAME: &'static str = "notifications";
    const SCHEMA: Schema = Schema::NotificationService;
    /// The spec's "Consumed — Notification" rows, user.updated to keep names current, and
    /// the event service's confirmations and refunds.
    const TAKES: &'static [contract::Kind] = &[
        contract::Kind::UserRegistered,
        contract::Kind::UserUpdated,
        contract::Kind::RegistrationCreated,
        contract::Kind::RegistrationConfirmed,
        contract::Kind::RegistrationCancelled,
        contract::Kind::ReservationExpired,
        contract::Kind::EventCancelled,
        contract::Kind::EventChanged,
        contract::Kind::EventReminder,
        contract::Kind::PaymentCompleted,
        contract::Kind::RefundRequested,
        contract::Kind::RefundSucceeded,
        contract::Kind::WaitlistAvailable,
        contract::Kind::QueueAdmitted,
    ];
    /// The messages queued, and whether any is waiting to be sent.
    type Done = (Vec<NewMessage>, bool);

    async fn apply(&self, tx: &Tx, received: &Received<'_>) -> Result<Self::Done, HandlerError> {
        let envelope = received.envelope;
        // Queue times are wall-clock: the messenger's limits and waits are.
        let now = Utc::now();
        let planned: Planned = match &received.event {
            DomainEvent::UserRegistered(user) => {
                self.welcome(tx, envelope, user, now).await?.into()
            }
            DomainEvent::UserUpdated(user) => rename(tx, user, now).await?.into(),
            DomainEvent::RegistrationCreated(r) => self.created(tx, envelope, r, now).await?.into(),
            DomainEvent::RegistrationConfirmed(c) => self
                .confirmed(tx, envelope, &c.registration, now)
                .await?
                .into(),
            DomainEvent::RegistrationCancelled(r) => self
                .about_registration(tx, envelope, r, Kind::RegistrationCancelled, now)
                .await?
                .into(),
            DomainEvent::ReservationExpired(r) => self
                .about_registration(tx, envelope, r, Kind::ReservationExpired, now)
                .await?
                .into(),
            DomainEvent::EventCancelled(e) => self
                .to_participants(tx, envelope, e, Kind::EventCancelled, now)
                .await?
                .into(),
            DomainEvent::EventChanged(c) => self
                .to_participants(tx, envelope, &c.event, Kind::EventChanged, now)
                .await?
                .into(),
            DomainEvent::EventReminder(e) => self
                .to_participants(tx, envelope, e, Kind::EventReminder, now)
                .await?
                .into(),
            DomainEvent::PaymentCompleted(p) => {
                // A payment the event service reports as having bought nothing gets the
                // refund notice instead (from refund.requested), not a receipt naming a code.
                let bought = p.outcome.is_none_or(|o| {
                    matches!(o, PaymentOutcome::Confirmed | PaymentOutcome::SeatTaken)
                });
                if bought {
                    self.about_money(
                        tx,
                        envelope,
                        p.registration_id,
                        p.amount_cents,
                        p.currency.clone(),
                        Kind::PaymentReceipt,
                    )
                    .await?
                    .into()
                } else {
                    Planned::default()
                }
            }
            // A payment that came too late (no seat left, or the event cancelled) is told it goes
            // back; other refunds (a cancelled event's tickets, an organizer's) are told when
            // the money is back.
            DomainEvent::RefundRequested(r) if came_too_late(&r.reason) => self
                .about_money(
                    tx,
                    envelope,
                    r.registration_id,
                    Some(r.amount_cents),
                    Some(r.currency.clone()),
                    Kind::PaymentRefund,
                )
                .await?
                .into(),
            DomainEvent::RefundSucceeded(r) => self
                .about_money(
                    tx,
                    envelope,
                    r.registration_id,
                    Some(r.amount_cents),
                    Some(r.currency.clone()),
                    Kind::RefundSucceeded,
                )
                .await?
                .into(),
            DomainEvent::WaitlistAvailable(offer) => self.waitlist(tx, envelope, offer).await?,
            DomainEvent::QueueAdmitted(place) => self.turn(tx, envelope, place).await?.into(),
            _ => Planned::default(),
        };
        let messages = planned.messages;
        let queued = queue::enqueue(tx, &messages, now).await?;
        if let Some((mail, record)) = planned.mail {
            // Sent while the claim is held: a failure rolls it back and the broker delivers
            // the event again; a concurrent delivery waits on the claim.
            let outcome = offer_mail::send(&self.mailer, &mail, envelope).await?;
            queue::record_mail(tx, &record, &outcome, Utc::now()).await?;
        }
        Ok((messages, !queued.queued.is_empty()))
    }

    /// The registrations arriving that `apply_arrivals` takes (each named once in a run).
    fn in_set(&self, received: &Received<'_>) -> bool {
        matches!(
            received.event,
            DomainEvent::RegistrationCreated(_) | DomainEvent::RegistrationConfirmed(_)
        )
    }

    async fn apply_all(
        &self,
        tx: &Tx,
        events: &[&Received<'_>],
    ) -> Option<Result<Vec<Self::Done>, HandlerError>> {
        self.apply_arrivals(tx, events).await
    }

    fn committed(&self, received: &Received<'_>, (messages, waiting): Self::Done) {
        warn_unlinked(received.envelope, &messages);
        if waiting {
            self.queue.wake();
        }
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
            button: None,
            skip,
        }
    }

    async fn welcome(
        &self,
        tx: &Tx,
        event: &Envelope,
        user: &UserChanged,
        now: DateTime<Utc>,
    ) -> Outcome {
        let info = user_info(user);
        let (user_id, first) = (info.user_id, info.first_name.clone());
        projection::upsert_user(tx, &info, now).await?;
        // Who signed in with the messenger has a private chat whose id is their messenger id.
        if let Some(chat) = user
            .messenger_id
            .as_deref()
            .and_then(|m| m.parse::<i64>().ok())
        {
            projection::link_if_free(tx, user_id, chat, now).await?;
        }
        let to = projection::recipient(tx, user_id, &first, "").await?;
        // A chat linked through the bot's /start before this event was applied has had its
        // welcome: the bot's answer. A second would only repeat it.
        if user.messenger_id.is_none() && to.chat_id.is_some() {
            return Ok(Vec::new());
        }
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
    async fn created(
        &self,
        tx: &Tx,
        event: &Envelope,
        registration: &Registration,
        now: DateTime<Utc>,
    ) -> Outcome {
        let (participant, info) = participant_of(event, registration, true)?;
        // A confirmation that overtook the creation already sent the ticket: a "pay to
        // confirm" after it would be false.
        let state = projection::ticket_state(tx, participant.registration_id).await?;
        projection::upsert_event(tx, &info, now).await?;
        projection::upsert_participant(tx, &participant, now).await?;
        let facts = info.facts(&self.public_url);
        if state.is_some_and(|s| s.sent) {
            return Ok(Vec::new());
        }
        let Some(kind) = awaiting(registration) else {
            return Ok(self
                .ticket(tx, &participant, &facts, event, now)
                .await?
                .into_iter()
                .collect());
        };
        let to =
            projection::recipient(tx, participant.user_id, &participant.first_name, "").await?;
        Ok(vec![self.seat_held(kind, &to, &facts, event, registration)])
    }

    /// The "seat held, pay to confirm" message of `kind` (see `awaiting`) to `to`.
    fn seat_held(
        &self,
        kind: Kind,
        to: &Recipient,
        facts: &EventFacts,
        event: &Envelope,
        registration: &Registration,
    ) -> NewMessage {
        let mut values = self.values_for(to, facts);
        if let Some(until) = registration.expires_at {
            let at = times::date(until, facts.zone, to.preferences.language);
            values.insert("expiresAt".into(), at);
        }
        let mut message = self.message(kind, to, &values, event, event.tenant_id, None);
        message.button = self.pay_button(to, registration.registration_id);
        message
    }

    /// "Pay" under a seat held for payment: the ticket's page on the web front, where the Pay
    /// button opens the provider's. Telegram takes only public https addresses for buttons, so
    /// an installation without one (development on localhost) sends the text alone.
    fn pay_button(&self, to: &Recipient, registration: Uuid) -> Option<Button> {
        let base = self.public_url.trim_end_matches('/');
        if !base.starts_with("https://") {
            return None;
        }
        let text = match to.preferences.language {
            domain::Lang::Ru => "Оплатить",
            domain::Lang::En => "Pay",
        };
        Some(Button {
            text: text.into(),
            url: format!("{base}/me/tickets/{registration}"),
        })
    }

    /// The ticket message of `participant` to `to` (who carries its code).
    fn ticket_message(
        &self,
        participant: &Participant,
        to: &Recipient,
        facts: &EventFacts,
        event: &Envelope,
    ) -> NewMessage {
        let values = self.values_for(to, facts);
        self.message(
            Kind::RegistrationConfirmed,
            to,
            &values,
            event,
            Some(participant.tenant_id),
            Some(participant.confirmation_code.clone()),
        )
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
        Ok(Some(self.ticket_message(participant, &to, facts, event)))
    }

    /// registration.confirmed (a payment confirmed it, or took a free seat after its
    /// reservation ran out): the projection follows and the ticket goes out, once. Only the
    /// event service's word confirms a seat: a payment alone may come too late and be refunded.
    async fn confirmed(
        &self,
        tx: &Tx,
        event: &Envelope,
        registration: &Registration,
        now: DateTime<Utc>,
    ) -> Outcome {
        let (participant, info) = participant_of(event, registration, true)?;
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
        registration: &Registration,
        kind: Kind,
        now: DateTime<Utc>,
    ) -> Outcome {
        let (participant, info) = participant_of(event, registration, false)?;
        projection::upsert_event(tx, &info, now).await?;
        if registration.cancellation_reason.as_deref() == Some(EVENT_CANCELLED) {
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
        state: &EventState,
        kind: Kind,
        now: DateTime<Utc>,
    ) -> Outcome {
        let info = EventInfo {
            event_id: state.event_id,
            tenant_id: event.tenant_id.unwrap_or(state.tenant_id),
            title: state.title.clone(),
            slug: state.slug.clone(),
            starts_at: state.starts_at,
            timezone: Some(state.timezone.clone()),
            location_address: state.location_address.clone(),
            location_url: state.location_url.clone(),
        };
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

    /// A message of `kind` (the receipt of payment.completed, the notice of refund.requested)
    /// about the amount a payment event names, else the ticket's price.
    async fn about_money(
        &self,
        tx: &Tx,
        event: &Envelope,
        registration: Uuid,
        amount_cents: Option<i64>,
        currency: Option<String>,
        kind: Kind,
    ) -> Outcome {
        let Some((p, to, mut values)) = self.about_payment(tx, registration).await? else {
            return Err(format!("{} for a registration not known yet", event.event_type).into());
        };
        let cents = amount_cents.unwrap_or(p.price_cents);
        let currency = currency.or(p.currency.clone()).unwrap_or_default();
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
        registration: Uuid,
    ) -> Result<
        Option<(
            projection::Participant,
            projection::Recipient,
            BTreeMap<String, String>,
        )>,
        HandlerError,
    > {
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
    async fn waitlist(
        &self,
        tx: &Tx,
        event: &Envelope,
        offer: &WaitlistOffer,
    ) -> Result<Planned, HandlerError> {
        let user = offer.user_id;
        let summary = &offer.event;
        let event_id = offer.event_id;
        let to = projection::recipient(tx, user, "", "").await?;
        let zone = match summary.timezone.as_deref() {
            Some(name) => Zone::or_utc(name),
            // An announcement from before the zone was in the payload: the known event's.
            None => projection::event(tx, event_id)
                .await?
                .map(|e| e.facts(&self.public_url).zone)
                .unwrap_or_default(),
        };
        let facts = EventFacts {
            title: summary.title.clone(),
            starts_at: Some(summary.starts_at),
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
        if let Some(until) = offer.expires_at {
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
        let email = match offer.email.as_deref().filter(|e| !e.trim().is_empty()) {
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

    /// queue.admitted: "your turn", by the messenger where it reaches the person (the queue
    /// page, open or not, says the same). The admission's minutes start when they open it.
    async fn turn(&self, tx: &Tx, event: &Envelope, place: &QueuePlace) -> Outcome {
        let to = projection::recipient(tx, place.user_id, "", "").await?;
        let summary = &place.event;
        let zone = Zone::or_utc(summary.timezone.as_deref().unwrap_or("UTC"));
        let base = self.public_url.trim_end_matches('/');
        let facts = EventFacts {
            title: summary.title.clone(),
            starts_at: Some(summary.starts_at),
            zone,
            location_address: None,
            location_url: None,
            url: format!("{base}/e/{}", summary.slug),
        };
        let mut values = self.values_for(&to, &facts);
        values.insert(
            "queueUrl".into(),
            format!("{base}/e/{}/queue", summary.slug),
        );
        values.insert(
            "minutes".into(),
            place.admission_minutes.unwrap_or(10).to_string(),
        );
        Ok(vec![self.message(
            Kind::QueueAdmitted,
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

async fn rename(tx: &Tx, user: &UserChanged, now: DateTime<Utc>) -> Outcome {
    projection::upsert_user(tx, &user_info(user), now).await?;
    Ok(Vec::new())
}

/// A user from a user.registered / user.updated payload.
fn user_info(user: &UserChanged) -> UserInfo {
    UserInfo {
        user_id: user.user_id,
        first_name: user.first_name.clone(),
        last_name: user.last_name.clone(),
        email: user.email.clone().filter(|e| !e.trim().is_empty()),
    }
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

/// The kind of "seat held" message a new registration gets while it awaits payment; `None`
/// when it holds its seat already (it gets its ticket).
fn awaiting(registration: &Registration) -> Option<Kind> {
    match registration.status {
        RegistrationStatus::Reserved => Some(Kind::RegistrationReserved),
        RegistrationStatus::Pending => Some(Kind::RegistrationPending),
        _ => None,
    }
}

/// The participant and its event from a registration event; `active` says whether it holds a
/// seat after the event.
fn participant_of(
    event: &Envelope,
    r: &Registration,
    active: bool,
) -> Result<(Participant, EventInfo), HandlerError> {
    let tenant = event
        .tenant_id
        .ok_or("registration event without tenantId")?;
    let info = event_info(r.event_id, &r.event, tenant);
    let participant = Participant {
        registration_id: r.registration_id,
        tenant_id: tenant,
        event_id: info.event_id,
        user_id: r.user_id,
        first_name: r.first_name.clone(),
        confirmation_code: r.confirmation_code.clone(),
        price_cents: r.price_cents,
        currency: Some(r.currency.clone()),
        active,
    };
    Ok((participant, info))
}

/// An event's details from a registration's summary of it.
fn event_info(event_id: Uuid, summary: &EventSummary, tenant: TenantId) -> EventInfo {
    EventInfo {
        event_id,
        tenant_id: tenant,
        title: summary.title.clone(),
        slug: summary.slug.clone(),
        starts_at: summary.starts_at,
        timezone: summary.timezone.clone(),
        location_address: summary.location_address.clone(),
        location_url: summary.location_url.clone(),
    }
}
