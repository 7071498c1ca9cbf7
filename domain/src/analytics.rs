//! Analytics rules: the tracked event types, what a tracked event may carry, and the figures
//! (rates with zero denominators give 0).

pub mod refusals;

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Largest `properties` object accepted, serialized.
pub const MAX_PROPERTIES_BYTES: usize = 4 * 1024;

/// A tracked event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
pub enum TrackType {
    /// Someone looked at the event page.
    #[serde(rename = "page.view")]
    PageView,
    /// Someone opened the registration form.
    #[serde(rename = "registration.started")]
    RegistrationStarted,
    /// A registration was created (from the event service).
    #[serde(rename = "registration.completed")]
    RegistrationCompleted,
    /// A registration was cancelled (from the event service).
    #[serde(rename = "registration.cancelled")]
    RegistrationCancelled,
    /// Someone was checked in (from the event service).
    #[serde(rename = "checkin.completed")]
    CheckinCompleted,
    /// A registration was paid (from payments).
    #[serde(rename = "payment.completed")]
    PaymentCompleted,
    /// Someone took a place in the event's waiting room (from the event service).
    #[serde(rename = "queue.joined")]
    QueueJoined,
    /// The waiting room let someone in (from the event service).
    #[serde(rename = "queue.admitted")]
    QueueAdmitted,
    /// Someone left the waiting room (from the event service).
    #[serde(rename = "queue.left")]
    QueueLeft,
}

impl TrackType {
    /// Every type.
    pub const ALL: [TrackType; 9] = [
        TrackType::PageView,
        TrackType::RegistrationStarted,
        TrackType::RegistrationCompleted,
        TrackType::RegistrationCancelled,
        TrackType::CheckinCompleted,
        TrackType::PaymentCompleted,
        TrackType::QueueJoined,
        TrackType::QueueAdmitted,
        TrackType::QueueLeft,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            TrackType::PageView => "page.view",
            TrackType::RegistrationStarted => "registration.started",
            TrackType::RegistrationCompleted => "registration.completed",
            TrackType::RegistrationCancelled => "registration.cancelled",
            TrackType::CheckinCompleted => "checkin.completed",
            TrackType::PaymentCompleted => "payment.completed",
            TrackType::QueueJoined => "queue.joined",
            TrackType::QueueAdmitted => "queue.admitted",
            TrackType::QueueLeft => "queue.left",
        }
    }

    /// Whether clients may send it to `/track` (the others come from the services' events).
    pub fn client_tracked(self) -> bool {
        matches!(self, TrackType::PageView | TrackType::RegistrationStarted)
    }
}

impl FromStr for TrackType {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        TrackType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(())
    }
}

/// `numerator / denominator`, 0 when the denominator is 0, rounded to 4 decimals so every
/// store gives the same figure.
pub fn rate(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        return 0.0;
    }
    (numerator as f64 / denominator as f64 * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_never_divide_by_zero() {
        assert_eq!(rate(0, 0), 0.0);
        assert_eq!(rate(5, 0), 0.0);
        assert_eq!(rate(1, 3), 0.3333);
        assert_eq!(rate(2, 2), 1.0);
    }

    #[test]
    fn types_round_trip() {
        for t in TrackType::ALL {
            assert_eq!(t.as_str().parse::<TrackType>(), Ok(t));
        }
        assert!("page.viewed".parse::<TrackType>().is_err());
        assert!(TrackType::PageView.client_tracked());
        assert!(!TrackType::CheckinCompleted.client_tracked());
    }
}

/// A traffic source as clients name it (`vk`, `newsletter-2026`): 1 to 64 lower-case letters,
/// digits, `-` or `_`, so dashboards group by a stable key.
pub fn check_source(errors: &mut crate::validation::FieldErrors, field: &str, source: &str) {
    let fine = !source.is_empty()
        && source.len() <= 64
        && source
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !fine {
        errors.add(
            field,
            crate::validation::FieldError::Invalid(crate::i18n::Text {
                ru: "Источник: от 1 до 64 строчных латинских букв, цифр, «-» или «_»",
                en: "A source is 1 to 64 lower-case letters, digits, '-' or '_'",
            }),
        );
    }
}

#[cfg(test)]
mod source_tests {
    use super::check_source;
    use crate::validation::FieldErrors;

    #[test]
    fn sources_are_short_slugs() {
        for ok in ["vk", "newsletter-2026", "tg_channel"] {
            let mut errors = FieldErrors::new();
            check_source(&mut errors, "source", ok);
            assert!(errors.into_result().is_ok(), "{ok}");
        }
        for bad in ["", "VK", "a b", "ссылка", &"x".repeat(65), "a/b"] {
            let mut errors = FieldErrors::new();
            check_source(&mut errors, "source", bad);
            assert!(errors.into_result().is_err(), "{bad}");
        }
    }
}
