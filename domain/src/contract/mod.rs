//! The contract between services: every domain event one service tells the others, with one
//! payload struct each. Producers build a [`DomainEvent`] and consumers match on it, so a
//! field renamed on one side no longer compiles on the other. On the wire nothing changed:
//! the envelope still carries the routing key in `type` and the payload in `data`, so queued
//! messages and stored outbox rows written before the contract stay readable.

pub mod events;
pub mod identity;
pub mod payments;
pub mod samples;

use crate::envelope::{Envelope, Payload};
use crate::identity::mail_request::MailRequest;
use crate::ids::{TenantId, UserId};

/// Why a broker message is not a domain event we can read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContractError {
    /// No domain event has this routing key.
    #[error("no domain event is called `{0}`")]
    Unknown(String),
    /// The payload does not have the shape of its type.
    #[error("{kind} payload is malformed: {reason}")]
    Malformed {
        /// The routing key.
        kind: String,
        /// What serde found wrong.
        reason: String,
    },
}

/// Declares the events: each routing key, its variant and its payload. The enum of events,
/// the enum of kinds and the decoding all come from this one list, so they cannot disagree.
macro_rules! contract {
    ($( $(#[$doc:meta])* $key:literal => $variant:ident($payload:ty), )*) => {
        /// A domain event with its payload.
        #[derive(Clone, Debug, PartialEq)]
        pub enum DomainEvent {
            $( $(#[$doc])* $variant($payload), )*
        }

        /// The kind of a domain event; its routing key is `as_str`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind {
            $( $(#[$doc])* $variant, )*
        }

        impl Kind {
            /// Every kind, in declaration order.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant),*];

            /// The routing key (the envelope's `type`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$variant => $key,)*
                }
            }

            /// The kind a routing key names.
            pub fn parse(key: &str) -> Option<Kind> {
                match key {
                    $($key => Some(Kind::$variant),)*
                    _ => None,
                }
            }
        }

        impl DomainEvent {
            /// Which kind of event this is.
            pub fn kind(&self) -> Kind {
                match self {
                    $(DomainEvent::$variant(_) => Kind::$variant,)*
                }
            }

            /// The payload as it travels in the envelope's `data`.
            pub fn to_data(&self) -> Payload {
                match self {
                    $(DomainEvent::$variant(p) => Payload::of(p),)*
                }
            }

            /// Reads the payload of an envelope of type `key`.
            pub fn decode(key: &str, data: &Payload) -> Result<DomainEvent, ContractError> {
                let kind = Kind::parse(key).ok_or_else(|| ContractError::Unknown(key.to_string()))?;
                let decoded = match kind {
                    $(Kind::$variant => data.decode::<$payload>().map(DomainEvent::$variant),)*
                };
                decoded.map_err(|e| ContractError::Malformed {
                    kind: key.to_string(),
                    reason: e.to_string(),
                })
            }
        }
    };
}

contract! {
    /// A person created an account (by email or through the messenger).
    "user.registered" => UserRegistered(identity::UserChanged),
    /// A person changed their profile or deleted their account.
    "user.updated" => UserUpdated(identity::UserChanged),
    /// The identity service asks its mail consumer to send a token mail.
    "mail.requested" => MailRequested(MailRequest),
    /// Someone asked for an organization.
    "organization.request.created" => OrganizationRequested(identity::RequestCreated),
    /// A platform administrator approved a request.
    "organization.request.approved" => OrganizationRequestApproved(identity::RequestReviewed),
    /// A platform administrator rejected a request.
    "organization.request.rejected" => OrganizationRequestRejected(identity::RequestReviewed),
    /// An organization exists.
    "organization.created" => OrganizationCreated(identity::OrganizationCreated),
    /// An organization's name, slug or logo changed.
    "organization.updated" => OrganizationUpdated(identity::OrganizationUpdated),
    /// An organization was deleted.
    "organization.deleted" => OrganizationDeleted(identity::OrganizationDeleted),
    /// Someone joined an organization.
    "organization.member.added" => MemberAdded(identity::MemberAdded),
    /// Someone left or was removed from an organization.
    "organization.member.removed" => MemberRemoved(identity::MemberRemoved),
    /// A member's role changed.
    "organization.member.role.changed" => MemberRoleChanged(identity::MemberRoleChanged),
    /// An organization made a group (the audience of private events).
    "group.created" => GroupCreated(identity::GroupState),
    /// A group was deleted.
    "group.deleted" => GroupDeleted(identity::GroupState),
    /// Someone joined a group.
    "group.member.added" => GroupMemberAdded(identity::GroupMemberAdded),
    /// An event was created (a draft).
    "event.created" => EventCreated(events::EventState),
    /// An event went on public view.
    "event.published" => EventPublished(events::EventState),
    /// A published event went back to a draft.
    "event.unpublished" => EventUnpublished(events::EventState),
    /// An event was cancelled.
    "event.cancelled" => EventCancelled(events::EventState),
    /// An event ended.
    "event.completed" => EventCompleted(events::EventState),
    /// An event starts within 24 hours.
    "event.reminder" => EventReminder(events::EventState),
    /// A published event moved in time or place.
    "event.changed" => EventChanged(events::EventChanged),
    /// An event's cover image changed.
    "event.cover.changed" => EventCoverChanged(events::CoverChanged),
    /// An event was deleted.
    "event.deleted" => EventDeleted(events::EventDeleted),
    /// A registration took a seat, or waits for payment.
    "registration.created" => RegistrationCreated(events::Registration),
    /// A payment confirmed a registration.
    "registration.confirmed" => RegistrationConfirmed(events::RegistrationConfirmed),
    /// A registration was cancelled.
    "registration.cancelled" => RegistrationCancelled(events::Registration),
    /// A reservation ran out unpaid.
    "reservation.expired" => ReservationExpired(events::Registration),
    /// A participant was let in.
    "checkin.completed" => CheckinCompleted(events::CheckinCompleted),
    /// Money must go back to a participant.
    "refund.requested" => RefundRequested(events::RefundRequested),
    /// The provider returned the money.
    "refund.succeeded" => RefundSucceeded(events::RefundSucceeded),
    /// A waiting-list seat is held for someone.
    "waitlist.available" => WaitlistAvailable(events::WaitlistOffer),
    /// Someone took a place in an event's waiting room.
    "queue.joined" => QueueJoined(events::QueuePlace),
    /// A waiting room let someone in: their turn to register.
    "queue.admitted" => QueueAdmitted(events::QueuePlace),
    /// Someone left an event's waiting room.
    "queue.left" => QueueLeft(events::QueuePlace),
    /// The payment provider took the money.
    "payment.completed" => PaymentCompleted(payments::Payment),
    /// A payment did not go through.
    "payment.failed" => PaymentFailed(payments::Payment),
    /// A payment was refunded.
    "payment.refunded" => PaymentRefunded(payments::Payment),
}

impl Envelope {
    /// The envelope of a domain event happening now.
    pub fn of(event: &DomainEvent, tenant: Option<TenantId>, actor: Option<UserId>) -> Envelope {
        Envelope::new(event.kind().as_str(), tenant, actor, event.to_data())
    }

    /// The domain event this envelope carries.
    pub fn decode(&self) -> Result<DomainEvent, ContractError> {
        DomainEvent::decode(&self.event_type, &self.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_sample_that_travels_and_comes_back_equal() {
        let samples = samples::all();
        for kind in Kind::ALL {
            let sample = samples
                .iter()
                .find(|s| s.kind() == *kind)
                .unwrap_or_else(|| panic!("no sample of {}", kind.as_str()));
            let envelope = Envelope::of(sample, None, None);
            let wire = serde_json::to_vec(&envelope).unwrap();
            let back: Envelope = serde_json::from_slice(&wire).unwrap();
            assert_eq!(back.event_type, kind.as_str());
            assert_eq!(&back.decode().unwrap(), sample, "{}", kind.as_str());
        }
    }

    #[test]
    fn routing_keys_are_unique_and_parse_back() {
        let mut keys: Vec<&str> = Kind::ALL.iter().map(|k| k.as_str()).collect();
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(*kind));
        }
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), Kind::ALL.len());
    }

    #[test]
    fn shapes_written_before_the_contract_still_read() {
        use serde_json::json;
        let id = "0190f6b0-0000-7000-8000-000000000001";
        // A provider's payment names little more than the registration.
        let paid = DomainEvent::decode(
            "payment.completed",
            &Payload::from(json!({"registrationId": id})),
        );
        assert!(matches!(paid, Ok(DomainEvent::PaymentCompleted(p)) if p.payment_id.is_none()));
        // An account deletion carried only the id and the flag.
        let gone = DomainEvent::decode(
            "user.updated",
            &Payload::from(json!({"userId": id, "deleted": true})),
        );
        assert!(matches!(gone, Ok(DomainEvent::UserUpdated(u)) if u.deleted && u.method.is_none()));
        // An offer from before the zone was in its summary.
        let offer = DomainEvent::decode(
            "waitlist.available",
            &Payload::from(
                json!({"entryId": id, "eventId": id, "ticketTypeId": id, "userId": id,
                    "email": null, "expiresAt": "2026-12-05T12:00:00Z",
                    "event": {"eventId": id, "title": "T", "startsAt": "2026-12-05T18:00:00Z", "slug": "t"}}),
            ),
        );
        assert!(
            matches!(offer, Ok(DomainEvent::WaitlistAvailable(o)) if o.event.timezone.is_none())
        );
        // A registration as the event service wrote it, nulls included.
        let created = DomainEvent::decode(
            "registration.created",
            &Payload::from(
                json!({"registrationId": id, "eventId": id, "ticketTypeId": id, "userId": id,
                    "email": null, "firstName": "A", "lastName": "B", "confirmationCode": "ABCDEFGH",
                    "status": "CONFIRMED", "priceCents": 0, "currency": "RUB", "expiresAt": null,
                    "cancellationReason": null, "source": null,
                    "event": {"eventId": id, "title": "T", "startsAt": "2026-12-05T18:00:00Z",
                              "endsAt": null, "timezone": "UTC", "locationAddress": null,
                              "locationUrl": null, "slug": "t"}}),
            ),
        );
        assert!(created.is_ok(), "{created:?}");
    }

    #[test]
    fn unknown_and_malformed_events_are_told_apart() {
        assert_eq!(
            DomainEvent::decode("x.y", &Payload::from(serde_json::json!({}))),
            Err(ContractError::Unknown("x.y".into()))
        );
        let malformed = DomainEvent::decode(
            "group.created",
            &Payload::from(serde_json::json!({"name": 1})),
        );
        assert!(matches!(malformed, Err(ContractError::Malformed { .. })));
    }
}
