//! Registration rules: the status a registration starts in, which statuses hold a seat,
//! what can be cancelled or checked in, and confirmation codes.

use super::refusals::EventRefusal;
use crate::error::Refusal;
use chrono::{DateTime, Duration, Utc};
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

impl Seat {
    /// What the seat adds to its ticket type's counts: (sold, reserved).
    pub fn counts(self) -> (i32, i32) {
        match self {
            Seat::Sold => (1, 0),
            Seat::Reserved => (0, 1),
            Seat::None => (0, 0),
        }
    }
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

    /// When a new registration in this status runs out: only a reservation, and only when
    /// its type holds reservations for some minutes; anything else waits without a timer.
    pub fn deadline(
        self,
        reservation_minutes: Option<i32>,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        match self {
            Self::Reserved => reservation_minutes.map(|m| now + Duration::minutes(m.into())),
            _ => None,
        }
    }

    /// Whether a registration that runs out at `expires_at` has run out at `now`: only a
    /// reservation does, at its deadline.
    pub fn lapsed(self, expires_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
        self == Self::Reserved && expires_at.is_some_and(|e| e <= now)
    }

    /// Whether a check-in is allowed, or why not.
    pub fn check_in(self) -> Result<RegistrationStatus, Refusal> {
        match self {
            Self::Confirmed => Ok(Self::CheckedIn),
            Self::CheckedIn => Err(Refusal::from(EventRefusal::AlreadyCheckedIn)),
            _ => Err(Refusal::from(EventRefusal::CheckInNotConfirmed)),
        }
    }

    /// What `DELETE /registrations/{id}` does (the spec's "(any) → CANCELLED"): an active
    /// registration is cancelled; one that holds no seat any more is already where the request
    /// wants it (`None`: nothing to do, 204); after check-in only an organizer may cancel.
    pub fn cancel(self, by: Canceller) -> Result<Option<RegistrationStatus>, Refusal> {
        match (self, by) {
            (Self::Reserved | Self::Pending | Self::Confirmed, _) => Ok(Some(Self::Cancelled)),
            (Self::CheckedIn, Canceller::Organizer) => Ok(Some(Self::Cancelled)),
            (Self::CheckedIn, Canceller::Participant) => {
                Err(Refusal::from(EventRefusal::CheckedInOrganizerOnly))
            }
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

/// Whether a registration has a ticket to print or carry in a wallet: a confirmed one only (a
/// reservation still to pay has no ticket yet; a used, cancelled or lapsed one none any more).
pub fn has_ticket_file(status: RegistrationStatus) -> bool {
    status == RegistrationStatus::Confirmed
}

/// Confirmation code alphabet: upper-case letters and digits without look-alikes (0/O, 1/I).
pub const CODE_ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// An 8-character confirmation code of a registration to `event`: two symbols named by the
/// event, then six from `random` (32 symbols: no bias). The codes of one event share their
/// first two symbols, so the platform's unique index takes a sale's new codes into one small
/// region instead of onto random leaves of all of it (see docs/decisions.md).
pub fn confirmation_code(event: uuid::Uuid, random: [u8; 6]) -> String {
    let [first, second] = code_prefix(event);
    [first, second]
        .into_iter()
        .chain(random.iter().map(|b| CODE_ALPHABET[(*b as usize) % 32]))
        .map(char::from)
        .collect()
}

/// The two symbols every confirmation code of `event` starts with: ten bits of the id's random
/// tail (the last bytes of a v7 or v4 id are random).
pub fn code_prefix(event: uuid::Uuid) -> [u8; 2] {
    let bytes = event.as_bytes();
    let bits = u16::from_be_bytes([bytes[14], bytes[15]]) as usize;
    [CODE_ALPHABET[(bits >> 5) & 31], CODE_ALPHABET[bits & 31]]
}

/// A confirmation code as door staff typed it, trimmed and upper-cased; `None` when it cannot
/// be one (8 Latin letters or digits).
pub fn typed_code(raw: &str) -> Option<String> {
    let code = raw.trim().to_uppercase();
    (code.len() == 8 && code.chars().all(|c| c.is_ascii_alphanumeric())).then_some(code)
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

    #[test]
    fn only_a_confirmed_registration_has_a_ticket_file() {
        use RegistrationStatus::*;
        for status in [Reserved, Pending, Cancelled, CheckedIn, Expired] {
            assert!(!has_ticket_file(status), "{status:?}");
        }
        assert!(has_ticket_file(Confirmed));
    }
    use crate::error::ErrorCode;
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
    fn seats_count_on_their_ticket_type() {
        assert_eq!(Confirmed.seat().counts(), (1, 0));
        assert_eq!(Pending.seat().counts(), (0, 1));
        assert_eq!(Expired.seat().counts(), (0, 0));
    }

    #[test]
    fn only_a_reservation_runs_out() {
        let now = Utc::now();
        assert_eq!(
            Reserved.deadline(Some(15), now),
            Some(now + Duration::minutes(15))
        );
        assert_eq!(Reserved.deadline(None, now), None);
        assert_eq!(Confirmed.deadline(Some(15), now), None);
        assert!(Reserved.lapsed(Some(now), now));
        assert!(!Reserved.lapsed(Some(now + Duration::seconds(1)), now));
        assert!(!Reserved.lapsed(None, now));
        assert!(!Confirmed.lapsed(Some(now), now), "paid meanwhile");
    }

    #[test]
    fn typed_codes_are_normalized() {
        assert_eq!(typed_code(" ab3k9xyz ").as_deref(), Some("AB3K9XYZ"));
        assert_eq!(typed_code("AB3K9XY"), None);
        assert_eq!(typed_code("AB3K-9XY"), None);
        assert_eq!(typed_code("АВ3К9ХУZ"), None, "Cyrillic look-alikes");
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
        let event = uuid::Uuid::from_u128(0x0193_0000_0000_7000_8000_0000_0000_ffff);
        let code = confirmation_code(event, [0, 31, 8, 14, 255, 100]);
        assert_eq!(code.len(), 8);
        assert!(
            code.chars()
                .all(|c| !"01IO".contains(c) && (c.is_ascii_uppercase() || c.is_ascii_digit()))
        );
        assert!(typed_code(&code).is_some());
    }

    #[test]
    fn the_codes_of_one_event_share_their_first_two_symbols_and_no_more() {
        let event = uuid::Uuid::from_u128(0x0193_0000_0000_7000_8000_0000_0000_03e1);
        let a = confirmation_code(event, [0, 1, 2, 3, 4, 5]);
        let b = confirmation_code(event, [31, 30, 29, 28, 27, 26]);
        // 0x03e1: bits 9..5 are 31 ('9'), bits 4..0 are 1 ('B').
        assert_eq!(&a[..2], "9B");
        assert_eq!(&b[..2], "9B");
        assert_eq!(&a[2..], "ABCDEF");
        assert_eq!(&b[2..], "987654");
        let other = uuid::Uuid::from_u128(0x0193_0000_0000_7000_8000_0000_0000_0000);
        assert_eq!(&confirmation_code(other, [0, 1, 2, 3, 4, 5])[..2], "AA");
        // Ten bits of the id: every one of the 1,024 prefixes is reachable.
        let prefixes: std::collections::HashSet<[u8; 2]> = (0u128..1024)
            .map(|tail| code_prefix(uuid::Uuid::from_u128((0x0193u128 << 112) | tail)))
            .collect();
        assert_eq!(prefixes.len(), 1024);
    }
}
