//! The event contract across services: every consumer reads every kind it subscribes to, as it
//! travels (serialized into the envelope, over the wire, and back). Producers and consumers
//! share the payload structs of `domain::contract`, so a renamed field does not compile; this
//! test catches the rest — a kind a consumer subscribes to that its decoding would not take,
//! or a payload that does not survive the wire.

use analytics::consumers::Recorder;
use domain::contract::{DomainEvent, Kind, samples};
use domain::envelope::Envelope;
use domain::ids::{TenantId, UserId};
use messenger::consumers::Notifier;
use std::collections::BTreeSet;
use storage::events::consumers::Projections;
use storage::identity::mail_consumer::MailSender;
use storage::inbox::{Inbox, Projection};
use storage::media::consumers::Attachments;

/// Every kind `P` takes, serialized as the outbox and the brokers carry it, decodes in `P`'s
/// inbox to the very event that was sent; kinds it does not take are passed over.
fn reads_what_it_takes<P: Projection>() -> BTreeSet<Kind> {
    for event in samples::all() {
        let sent = Envelope::of(&event, Some(TenantId::new()), Some(UserId::new()));
        let wire = serde_json::to_vec(&sent).unwrap();
        let received: Envelope = serde_json::from_slice(&wire).unwrap();
        let decoded = Inbox::<P>::decode(&received)
            .unwrap_or_else(|e| panic!("{} cannot read {}: {e}", P::NAME, event.kind().as_str()));
        if P::TAKES.contains(&event.kind()) {
            assert_eq!(
                decoded.as_ref(),
                Some(&event),
                "{} reads {}",
                P::NAME,
                event.kind().as_str()
            );
        } else {
            assert_eq!(
                decoded,
                None,
                "{} passes over {}",
                P::NAME,
                event.kind().as_str()
            );
        }
    }
    P::TAKES.iter().copied().collect()
}

#[test]
fn every_consumer_reads_every_event_it_subscribes_to() {
    let consumed: BTreeSet<Kind> = [
        reads_what_it_takes::<MailSender>(),
        reads_what_it_takes::<Projections>(),
        reads_what_it_takes::<Attachments>(),
        reads_what_it_takes::<Recorder>(),
        reads_what_it_takes::<Notifier>(),
    ]
    .into_iter()
    .flatten()
    .collect();
    // What the spec says each service consumes is subscribed to.
    for kind in [
        Kind::PaymentCompleted,
        Kind::PaymentFailed,
        Kind::PaymentRefunded,
        Kind::GroupMemberAdded,
        Kind::OrganizationDeleted,
        Kind::EventPublished,
        Kind::RegistrationCreated,
        Kind::RegistrationCancelled,
        Kind::CheckinCompleted,
        Kind::UserRegistered,
        Kind::ReservationExpired,
        Kind::EventCancelled,
        Kind::EventChanged,
        Kind::EventReminder,
        Kind::WaitlistAvailable,
    ] {
        assert!(
            consumed.contains(&kind),
            "nobody consumes {}",
            kind.as_str()
        );
    }
}

#[test]
fn a_payload_missing_a_field_is_a_bad_message_not_a_default() {
    let mut data = samples::of(Kind::RegistrationCreated).to_data().value();
    data.as_object_mut().unwrap().remove("confirmationCode");
    let envelope = Envelope::new("registration.created", Some(TenantId::new()), None, data);
    let refused = Inbox::<Notifier>::decode(&envelope).unwrap_err();
    assert!(
        refused.to_string().contains("confirmationCode"),
        "{refused}"
    );
    // A kind nobody declared is not an error for a consumer: topic patterns can bring it.
    let unknown = Envelope::new("x.y", None, None, serde_json::json!({}));
    assert_eq!(
        Inbox::<Notifier>::decode(&unknown).unwrap(),
        None::<DomainEvent>
    );
}
