//! One filled-in example of every domain event, for the contract tests: the unit test here
//! and the workspace test that has every consumer decode what it subscribes to.

use super::events::{
    CheckinCompleted, CoverChanged, EventChanged, EventDeleted, EventState, EventSummary, Place,
    QueuePlace, RefundRequested, RefundSucceeded, Registration, RegistrationConfirmed,
    WaitlistOffer,
};
use super::identity::{
    GroupMemberAdded, GroupState, MemberAdded, MemberRemoved, MemberRoleChanged,
    OrganizationCreated, OrganizationDeleted, OrganizationUpdated, RequestCreated, RequestReviewed,
    UserChange, UserChanged,
};
use super::payments::Payment;
use super::{DomainEvent, Kind};
use crate::events::lifecycle::EventStatus;
use crate::events::payments::{Channel, PaymentOutcome};
use crate::events::registrations::{CheckInMethod, RegistrationStatus};
use crate::events::validation::LocationType;
use crate::i18n::Lang;
use crate::identity::mail_request::{MailRequest, TokenKind};
use crate::ids::{TenantId, UserId};
use crate::roles::Role;
use chrono::{DateTime, TimeZone, Utc};
use uuid::Uuid;

fn at(hour: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 5, hour, 0, 0)
        .single()
        .unwrap_or_default()
}

fn user() -> UserChanged {
    UserChanged {
        user_id: UserId(Uuid::from_u128(1)),
        email: Some("anna@example.org".into()),
        first_name: "Анна".into(),
        last_name: "Иванова".into(),
        messenger_id: Some("4242".into()),
        avatar_id: Some(Uuid::from_u128(2)),
        method: Some(UserChange::Email),
        deleted: false,
    }
}

fn event(status: EventStatus) -> EventState {
    EventState {
        event_id: Uuid::from_u128(10),
        tenant_id: TenantId(Uuid::from_u128(11)),
        organizer_id: UserId(Uuid::from_u128(1)),
        group_id: Some(Uuid::from_u128(12)),
        title: "Rust meetup".into(),
        slug: "rust-meetup".into(),
        status,
        starts_at: at(18),
        ends_at: Some(at(21)),
        timezone: "Europe/Moscow".into(),
        location_type: Some(LocationType::Offline),
        location_address: Some("Тверская, 1".into()),
        location_url: None,
        cover_image_id: Some(Uuid::from_u128(13)),
    }
}

fn summary() -> EventSummary {
    EventSummary {
        event_id: Uuid::from_u128(10),
        title: "Rust meetup".into(),
        starts_at: at(18),
        ends_at: Some(at(21)),
        timezone: Some("Europe/Moscow".into()),
        location_address: Some("Тверская, 1".into()),
        location_url: None,
        slug: "rust-meetup".into(),
    }
}

fn registration(status: RegistrationStatus) -> Registration {
    Registration {
        registration_id: Uuid::from_u128(20),
        event_id: Uuid::from_u128(10),
        ticket_type_id: Uuid::from_u128(21),
        user_id: UserId(Uuid::from_u128(1)),
        email: Some("anna@example.org".into()),
        first_name: "Анна".into(),
        last_name: "Иванова".into(),
        confirmation_code: "K7M2QX9P".into(),
        status,
        price_cents: 150_000,
        currency: "RUB".into(),
        expires_at: Some(at(12)),
        cancellation_reason: None,
        source: None,
        event: summary(),
    }
}

fn payment(outcome: Option<PaymentOutcome>) -> Payment {
    Payment {
        payment_id: Some("pay_1".into()),
        registration_id: Uuid::from_u128(20),
        event_id: Some(Uuid::from_u128(10)),
        amount_cents: Some(150_000),
        currency: Some("RUB".into()),
        channel: Some(Channel::Webhook),
        outcome,
    }
}

fn reviewed() -> RequestReviewed {
    RequestReviewed {
        request_id: Uuid::from_u128(30),
        user_id: UserId(Uuid::from_u128(1)),
        name: "Клуб".into(),
        slug: "club".into(),
        reason: Some("ok".into()),
        reserved_until: Some(at(9)),
    }
}

fn group() -> GroupState {
    GroupState {
        group_id: Uuid::from_u128(12),
        organization_id: TenantId(Uuid::from_u128(11)),
        name: "Volunteers".into(),
    }
}

/// The example of one kind.
pub fn of(kind: Kind) -> DomainEvent {
    use DomainEvent as E;
    let org = TenantId(Uuid::from_u128(11));
    let person = UserId(Uuid::from_u128(1));
    match kind {
        Kind::UserRegistered => E::UserRegistered(user()),
        Kind::UserUpdated => E::UserUpdated(UserChanged::deleted(person)),
        Kind::MailRequested => E::MailRequested(MailRequest {
            kind: TokenKind::EmailVerification,
            to: "anna@example.org".into(),
            lang: Lang::En,
            token: "t0ken".into(),
            first_name: "Анна".into(),
        }),
        Kind::OrganizationRequested => E::OrganizationRequested(RequestCreated {
            request_id: Uuid::from_u128(30),
            user_id: person,
            name: "Клуб".into(),
            slug: "club".into(),
        }),
        Kind::OrganizationRequestApproved => E::OrganizationRequestApproved(reviewed()),
        Kind::OrganizationRequestRejected => E::OrganizationRequestRejected(reviewed()),
        Kind::OrganizationCreated => E::OrganizationCreated(OrganizationCreated {
            organization_id: org,
            name: "Клуб".into(),
            slug: "club".into(),
            owner_id: person,
            request_id: Some(Uuid::from_u128(30)),
        }),
        Kind::OrganizationUpdated => E::OrganizationUpdated(OrganizationUpdated {
            organization_id: org,
            name: "Клуб".into(),
            slug: "club".into(),
            logo_id: Some(Uuid::from_u128(31)),
            logo_url: None,
        }),
        Kind::OrganizationDeleted => E::OrganizationDeleted(OrganizationDeleted {
            organization_id: org,
            name: "Клуб".into(),
            slug: "club".into(),
        }),
        Kind::MemberAdded => E::MemberAdded(MemberAdded {
            organization_id: org,
            organization_name: "Клуб".into(),
            user_id: UserId(Uuid::from_u128(3)),
            role: Role::Moderator,
            invited_by: Some(person),
        }),
        Kind::MemberRemoved => E::MemberRemoved(MemberRemoved {
            organization_id: org,
            user_id: UserId(Uuid::from_u128(3)),
            role: Role::Moderator,
            removed_at: Some(at(10)),
            reason: None,
        }),
        Kind::MemberRoleChanged => E::MemberRoleChanged(MemberRoleChanged {
            organization_id: org,
            user_id: UserId(Uuid::from_u128(3)),
            old_role: Role::Moderator,
            role: Role::Owner,
        }),
        Kind::GroupCreated => E::GroupCreated(group()),
        Kind::GroupDeleted => E::GroupDeleted(group()),
        Kind::GroupMemberAdded => E::GroupMemberAdded(GroupMemberAdded {
            group_id: Uuid::from_u128(12),
            organization_id: org,
            group_name: "Volunteers".into(),
            user_id: person,
        }),
        Kind::EventCreated => E::EventCreated(event(EventStatus::Draft)),
        Kind::EventPublished => E::EventPublished(event(EventStatus::Published)),
        Kind::EventUnpublished => E::EventUnpublished(event(EventStatus::Draft)),
        Kind::EventCancelled => E::EventCancelled(event(EventStatus::Cancelled)),
        Kind::EventCompleted => E::EventCompleted(event(EventStatus::Completed)),
        Kind::EventReminder => E::EventReminder(event(EventStatus::Published)),
        Kind::EventChanged => E::EventChanged(EventChanged {
            event: event(EventStatus::Published),
            previous: Place {
                starts_at: at(17),
                ends_at: None,
                location_type: Some(LocationType::Online),
                location_address: None,
                location_url: Some("https://meet.example.org/r".into()),
            },
        }),
        Kind::EventCoverChanged => E::EventCoverChanged(CoverChanged {
            event_id: Uuid::from_u128(10),
            cover_image_id: Some(Uuid::from_u128(14)),
            previous_cover_image_id: Some(Uuid::from_u128(13)),
        }),
        Kind::EventDeleted => E::EventDeleted(EventDeleted {
            event_id: Uuid::from_u128(10),
            cover_image_id: Some(Uuid::from_u128(13)),
        }),
        Kind::RegistrationCreated => {
            E::RegistrationCreated(registration(RegistrationStatus::Reserved))
        }
        Kind::RegistrationConfirmed => E::RegistrationConfirmed(RegistrationConfirmed {
            registration: registration(RegistrationStatus::Confirmed),
            payment_id: Some("pay_1".into()),
            amount_cents: Some(150_000),
        }),
        Kind::RegistrationCancelled => E::RegistrationCancelled(Registration {
            cancellation_reason: Some("CANCELLED_BY_USER".into()),
            ..registration(RegistrationStatus::Cancelled)
        }),
        Kind::ReservationExpired => {
            E::ReservationExpired(registration(RegistrationStatus::Expired))
        }
        Kind::CheckinCompleted => E::CheckinCompleted(CheckinCompleted {
            registration: registration(RegistrationStatus::CheckedIn),
            method: CheckInMethod::QrCode,
            checked_in_by: UserId(Uuid::from_u128(3)),
            checked_in_at: at(18),
        }),
        Kind::RefundRequested => E::RefundRequested(RefundRequested {
            registration_id: Uuid::from_u128(20),
            event_id: Uuid::from_u128(10),
            user_id: person,
            email: Some("anna@example.org".into()),
            payment_id: Some("pay_1".into()),
            amount_cents: 150_000,
            currency: "RUB".into(),
            reason: "NO_SEAT".into(),
            event: summary(),
        }),
        Kind::RefundSucceeded => E::RefundSucceeded(RefundSucceeded {
            refund_id: Uuid::from_u128(50),
            registration_id: Uuid::from_u128(20),
            event_id: Uuid::from_u128(10),
            user_id: person,
            email: Some("anna@example.org".into()),
            amount_cents: 150_000,
            currency: "RUB".into(),
            provider: "yookassa".into(),
            provider_refund_id: "rf_1".into(),
            event: summary(),
        }),
        Kind::WaitlistAvailable => E::WaitlistAvailable(WaitlistOffer {
            entry_id: Uuid::from_u128(40),
            event_id: Uuid::from_u128(10),
            ticket_type_id: Uuid::from_u128(21),
            user_id: person,
            email: None,
            expires_at: Some(at(12)),
            event: summary(),
        }),
        Kind::QueueJoined => E::QueueJoined(queue_place(person, None)),
        Kind::QueueAdmitted => E::QueueAdmitted(queue_place(person, Some(10))),
        Kind::QueueLeft => E::QueueLeft(queue_place(person, None)),
        Kind::PaymentCompleted => E::PaymentCompleted(payment(Some(PaymentOutcome::Confirmed))),
        Kind::PaymentFailed => E::PaymentFailed(payment(None)),
        Kind::PaymentRefunded => E::PaymentRefunded(payment(Some(PaymentOutcome::Cancelled))),
    }
}

fn queue_place(person: UserId, admission_minutes: Option<i32>) -> QueuePlace {
    QueuePlace {
        event_id: Uuid::from_u128(10),
        user_id: person,
        early: true,
        joined_at: at(9),
        admission_minutes,
        event: summary(),
    }
}

/// One example of every kind.
pub fn all() -> Vec<DomainEvent> {
    Kind::ALL.iter().map(|k| of(*k)).collect()
}
