//! Registration rules: the status a registration starts in, which statuses hold a seat,
//! what can be cancelled or checked in, and confirmation codes.

use crate::error::{ErrorCode, Refusal};
use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// Status of a registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RegistrationStatus {
    /// Booked, awaiting payment with a timer.
    Reserved,
    /// Awaiting payment without a timer.
    Pending,
    /// Confirmed.
    Confirmed,
    /// Cancelled.
    Cancelled,
    /// The participant arrived.
    CheckedIn,
    /// The reservation ran out.
    Expired,
}

/// Which seat count a registration occupies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seat {
    /// Counted in sold_count.
    Sold,
    /// Counted in reserved_count.
    Reserved,
    /// Holds no seat.
    None,
}

impl RegistrationStatus {
    /// Database and wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reserved => "RESERVED",
            Self::Pending => "PENDING",
            Self::Confirmed => "CONFIRMED",
            Self::Cancelled => "CANCELLED",
            Self::CheckedIn => "CHECKED_IN",
            Self::Expired => "EXPIRED",
        }
    }

    /// The seat a registration in this status occupies.
    pub fn seat(self) -> Seat {
        match self {
            Self::Confirmed | Self::CheckedIn => Seat::Sold,
            Self::Reserved | Self::Pending => Seat::Reserved,
            Self::Cancelled | Self::Expired => Seat::None,
        }
    }

    /// Whether it counts as the user's registration for the event.
    pub fn is_active(self) -> bool {
        self.seat() != Seat::None
    }

    /// The status a new registration starts in: free tickets are confirmed at once; paid
    /// ones wait for payment, with a timer when the type has reservation minutes.
    pub fn initial(price_cents: i64, reservation_minutes: Option<i32>) -> RegistrationStatus {
        match (price_cents, reservation_minutes) {
            (0, _) => Self::Confirmed,
            (_, Some(_)) => Self::Reserved,
            (_, None) => Self::Pending,
        }
    }

    /// Whether a check-in is allowed, or why not.
    pub fn check_in(self) -> Result<RegistrationStatus, Refusal> {
        match self {
            Self::Confirmed => Ok(Self::CheckedIn),
            Self::CheckedIn => Err(Refusal::with(
                ErrorCode::Conflict,
                "Участник уже отмечен на входе",
                "The participant has already checked in",
            )),
            _ => Err(Refusal::with(
                ErrorCode::BusinessRule,
                "Отметить можно только подтверждённую регистрацию",
                "Only a confirmed registration can be checked in",
            )),
        }
    }

    /// What `DELETE /registrations/{id}` does (the spec's "(any) → CANCELLED"): an active
    /// registration is cancelled; one that holds no seat any more is already where the request
    /// wants it (`None`: nothing to do, 204); after check-in only an organizer may cancel.
    pub fn cancel(self, by: Canceller) -> Result<Option<RegistrationStatus>, Refusal> {
        match (self, by) {
            (Self::Reserved | Self::Pending | Self::Confirmed, _) => Ok(Some(Self::Cancelled)),
            (Self::CheckedIn, Canceller::Organizer) => Ok(Some(Self::Cancelled)),
            (Self::CheckedIn, Canceller::Participant) => Err(Refusal::with(
                ErrorCode::BusinessRule,
                "После входа регистрацию может отменить только организатор",
                "After check-in only an organizer can cancel the registration",
            )),
            (Self::Cancelled | Self::Expired, _) => Ok(None),
        }
    }
}

/// Who cancels a registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Canceller {
    /// The person it belongs to.
    Participant,
    /// An organizer of the event's organization.
    Organizer,
}

/// Why a registration was cancelled together with its event.
pub const EVENT_CANCELLED: &str = "EVENT_CANCELLED";

impl FromStr for RegistrationStatus {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Ok(match s {
            "RESERVED" => Self::Reserved,
            "PENDING" => Self::Pending,
            "CONFIRMED" => Self::Confirmed,
            "CANCELLED" => Self::Cancelled,
            "CHECKED_IN" => Self::CheckedIn,
            "EXPIRED" => Self::Expired,
            _ => return Err(()),
        })
    }
}

/// Confirmation code alphabet: upper-case letters and digits without look-alikes (0/O, 1/I).
pub const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// An 8-character confirmation code from 8 random bytes (32 symbols: no bias).
pub fn confirmation_code(random: [u8; 8]) -> String {
    random
        .iter()
        .map(|b| CODE_ALPHABET[(*b as usize) % 32] as char)
        .collect()
}

/// How a participant checks in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CheckInMethod {
    /// QR code scanned at the door.
    QrCode,
    /// Code typed in by door staff.
    Manual,
}

impl CheckInMethod {
    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::QrCode => "QR_CODE",
            Self::Manual => "MANUAL",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RegistrationStatus::*;

    #[test]
    fn initial_status_and_seats() {
        assert_eq!(RegistrationStatus::initial(0, Some(15)), Confirmed);
        assert_eq!(RegistrationStatus::initial(500, Some(15)), Reserved);
        assert_eq!(RegistrationStatus::initial(500, None), Pending);
        assert_eq!(Confirmed.seat(), Seat::Sold);
        assert_eq!(Pending.seat(), Seat::Reserved);
        assert!(!Expired.is_active() && CheckedIn.is_active());
    }

    #[test]
    fn check_in_and_cancel_rules() {
        assert_eq!(Confirmed.check_in(), Ok(CheckedIn));
        assert_eq!(CheckedIn.check_in().unwrap_err().code, ErrorCode::Conflict);
        for s in [Reserved, Pending, Cancelled, Expired] {
            assert_eq!(s.check_in().unwrap_err().code, ErrorCode::BusinessRule);
        }
        use Canceller::*;
        for s in [Reserved, Pending, Confirmed] {
            assert_eq!(s.cancel(Participant), Ok(Some(Cancelled)));
            assert_eq!(s.cancel(Organizer), Ok(Some(Cancelled)));
        }
        assert_eq!(
            CheckedIn.cancel(Participant).unwrap_err().code,
            ErrorCode::BusinessRule
        );
        assert_eq!(CheckedIn.cancel(Organizer), Ok(Some(Cancelled)));
        for s in [Cancelled, Expired] {
            assert_eq!(
                s.cancel(Participant),
                Ok(None),
                "already where DELETE wants it"
            );
            assert_eq!(s.cancel(Organizer), Ok(None));
        }
    }

    #[test]
    fn codes_avoid_look_alikes() {
        let code = confirmation_code([0, 31, 8, 14, 255, 100, 7, 13]);
        assert_eq!(code.len(), 8);
        assert!(
            code.chars()
                .all(|c| !"01IO".contains(c) && (c.is_ascii_uppercase() || c.is_ascii_digit()))
        );
    }
}
