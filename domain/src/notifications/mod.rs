//! Notification rules: the kinds of message, which of them a user may switch off, the
//! templates they are written with, the values that fill them and how times are told, the
//! mail that stands in for a chat, the bot's commands and answers, and the send queue's
//! delivery rules.

pub mod commands;
pub mod delivery;
pub mod mails;
pub mod refusals;
pub mod replies;
pub mod templates;
pub mod times;
pub mod values;

use serde::{Deserialize, Serialize};

/// A kind of notification (also its template's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum Kind {
    /// After sign-up.
    #[serde(rename = "user.welcome")]
    UserWelcome,
    /// A registration holds a seat (with the ticket).
    #[serde(rename = "registration.confirmed")]
    RegistrationConfirmed,
    /// A seat is held until a deadline and awaits payment (no ticket yet).
    #[serde(rename = "registration.reserved")]
    RegistrationReserved,
    /// A seat awaits payment, without a deadline (no ticket yet).
    #[serde(rename = "registration.pending")]
    RegistrationPending,
    /// A registration was cancelled.
    #[serde(rename = "registration.cancelled")]
    RegistrationCancelled,
    /// A reservation ran out before payment.
    #[serde(rename = "reservation.expired")]
    ReservationExpired,
    /// 24 hours before the event.
    #[serde(rename = "event.reminder")]
    EventReminder,
    /// Time or place changed.
    #[serde(rename = "event.changed")]
    EventChanged,
    /// The event was cancelled.
    #[serde(rename = "event.cancelled")]
    EventCancelled,
    /// A seat is held for you from the waiting list (a notice the person asked for by
    /// joining the list, so it cannot be switched off).
    #[serde(rename = "waitlist.available")]
    WaitlistAvailable,
    /// A payment went through.
    #[serde(rename = "payment.receipt")]
    PaymentReceipt,
    /// A payment bought nothing (it came after the seat was gone) and is being returned.
    #[serde(rename = "payment.refund")]
    PaymentRefund,
    /// The provider returned the money (a cancelled event, an organizer's refund, a late
    /// payment).
    #[serde(rename = "refund.succeeded")]
    RefundSucceeded,
    /// The waiting room let you in: your turn to register (a notice the person asked for by
    /// queueing, so it cannot be switched off).
    #[serde(rename = "queue.admitted")]
    QueueAdmitted,
}

/// What a user may switch off; everything else is a service notice and always sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum OptOut {
    /// Reminders before events.
    Reminders,
    /// Changes of time or place.
    Changes,
    /// Kept in the settings for the clients that send it; it silences nothing, since the one
    /// waiting-list message is the offer, and a silenced offer would hold a seat for 24 hours
    /// without the person knowing (leaving the list is how to stop offers).
    WaitingList,
    /// Payment receipts.
    Receipts,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 14] = [
        Kind::UserWelcome,
        Kind::RegistrationConfirmed,
        Kind::RegistrationReserved,
        Kind::RegistrationPending,
        Kind::RegistrationCancelled,
        Kind::ReservationExpired,
        Kind::EventReminder,
        Kind::EventChanged,
        Kind::EventCancelled,
        Kind::WaitlistAvailable,
        Kind::PaymentReceipt,
        Kind::PaymentRefund,
        Kind::RefundSucceeded,
        Kind::QueueAdmitted,
    ];

    /// The kind a template name stands for.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// The template name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::UserWelcome => "user.welcome",
            Kind::RegistrationConfirmed => "registration.confirmed",
            Kind::RegistrationReserved => "registration.reserved",
            Kind::RegistrationPending => "registration.pending",
            Kind::RegistrationCancelled => "registration.cancelled",
            Kind::ReservationExpired => "reservation.expired",
            Kind::EventReminder => "event.reminder",
            Kind::EventChanged => "event.changed",
            Kind::EventCancelled => "event.cancelled",
            Kind::WaitlistAvailable => "waitlist.available",
            Kind::PaymentReceipt => "payment.receipt",
            Kind::PaymentRefund => "payment.refund",
            Kind::RefundSucceeded => "refund.succeeded",
            Kind::QueueAdmitted => "queue.admitted",
        }
    }

    /// The switch that silences it, if it may be silenced.
    pub fn opt_out(self) -> Option<OptOut> {
        match self {
            Kind::EventReminder => Some(OptOut::Reminders),
            Kind::EventChanged => Some(OptOut::Changes),
            Kind::PaymentReceipt => Some(OptOut::Receipts),
            Kind::UserWelcome
            | Kind::RegistrationConfirmed
            | Kind::RegistrationReserved
            | Kind::RegistrationPending
            | Kind::WaitlistAvailable
            | Kind::RegistrationCancelled
            | Kind::ReservationExpired
            | Kind::EventCancelled
            | Kind::PaymentRefund
            | Kind::RefundSucceeded
            | Kind::QueueAdmitted => None,
        }
    }
}

/// A user's notification settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Preferences {
    /// Reminders 24 hours before events.
    pub reminders: bool,
    /// Changes of time or place.
    pub changes: bool,
    /// Stored and answered as set; silences nothing (see `OptOut::WaitingList`).
    pub waiting_list: bool,
    /// Payment receipts.
    pub receipts: bool,
    /// The language of messages.
    pub language: crate::i18n::Lang,
}

impl Default for Preferences {
    fn default() -> Self {
        Preferences {
            reminders: true,
            changes: true,
            waiting_list: true,
            receipts: true,
            language: crate::i18n::Lang::Ru,
        }
    }
}

impl Preferences {
    /// Whether a message of `kind` goes out under these settings.
    pub fn allows(&self, kind: Kind) -> bool {
        match kind.opt_out() {
            None => true,
            Some(OptOut::Reminders) => self.reminders,
            Some(OptOut::Changes) => self.changes,
            Some(OptOut::WaitingList) => self.waiting_list,
            Some(OptOut::Receipts) => self.receipts,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_notices_cannot_be_switched_off() {
        let silent = Preferences {
            reminders: false,
            changes: false,
            waiting_list: false,
            receipts: false,
            ..Preferences::default()
        };
        for kind in Kind::ALL {
            assert_eq!(
                silent.allows(kind),
                kind.opt_out().is_none(),
                "{}",
                kind.as_str()
            );
            assert!(Preferences::default().allows(kind));
        }
        assert!(silent.allows(Kind::RegistrationCancelled));
        assert!(silent.allows(Kind::EventCancelled));
        // An offer holds a seat for the person: it must reach them whatever they switched off.
        assert!(silent.allows(Kind::WaitlistAvailable));
        assert!(!silent.allows(Kind::EventReminder));
    }

    #[test]
    fn names_round_trip() {
        for kind in Kind::ALL {
            assert_eq!(Kind::parse(kind.as_str()), Some(kind));
        }
    }
}
