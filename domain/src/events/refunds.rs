//! What is given back: the refund a registration cancelled with its event is owed, why a
//! payment that bought nothing is returned, and a refund's way to the provider
//! (requested → sent → succeeded or failed, with retries in between).

use super::registrations::{RegistrationStatus, Seat};
use std::time::Duration;

/// Where a refund stands.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RefundStatus {
    /// Asked for; not yet sent to the provider.
    Requested,
    /// Sent at least once; the provider's answer has not been recorded (sent again, under the
    /// same key, until it is).
    Sent,
    /// The provider returned the money.
    Succeeded,
    /// The provider refused, or never answered within the attempts; an operator may retry.
    Failed,
}

impl RefundStatus {
    /// Database spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Requested => "REQUESTED",
            Self::Sent => "SENT",
            Self::Succeeded => "SUCCEEDED",
            Self::Failed => "FAILED",
        }
    }

    /// From the database spelling.
    pub fn parse(s: &str) -> Option<RefundStatus> {
        [Self::Requested, Self::Sent, Self::Succeeded, Self::Failed]
            .into_iter()
            .find(|r| r.as_str() == s)
    }

    /// Whether the executor still has work with it.
    pub fn is_pending(self) -> bool {
        matches!(self, Self::Requested | Self::Sent)
    }

    /// Whether it may move to `to`: forward only, and a failed one back to requested when an
    /// operator retries it.
    pub fn may_become(self, to: RefundStatus) -> bool {
        use RefundStatus::*;
        matches!(
            (self, to),
            (Requested, Sent)
                | (Sent, Sent)
                | (Requested | Sent, Succeeded | Failed)
                | (Failed, Requested)
        )
    }
}

/// Sends of one refund before it is given up as failed (the provider unreachable throughout).
pub const MAX_REFUND_SENDS: i32 = 10;

/// How long after its `sends`-th send a refund without an answer is sent again: 10 s, doubling,
/// at most an hour (ten sends span about two and a half hours).
pub fn resend_after(sends: i32) -> Duration {
    let doublings = u32::try_from(sends.clamp(1, 20) - 1).unwrap_or(0);
    Duration::from_secs(10u64.saturating_mul(1 << doublings).min(3600))
}

/// The refund a registration cancelled with its event is owed (`was`: its status before):
/// what was `paid` for it, or its price when it was confirmed before payments were recorded;
/// nothing for free or unpaid tickets.
pub fn refund_due(was: RegistrationStatus, paid: i64, price_cents: i64) -> Option<i64> {
    if paid > 0 {
        return Some(paid);
    }
    (was.seat() == Seat::Sold && price_cents > 0).then_some(price_cents)
}

/// Why a late payment is returned when no seat was left for it.
pub const NO_SEAT: &str = "NO_SEAT";

/// Why a payment is returned that came after its event was cancelled.
pub const EVENT_CANCELLED_BEFORE_PAYMENT: &str = "EVENT_CANCELLED_BEFORE_PAYMENT";

/// Whether a refund's reason is a payment that came too late to buy anything (the person is
/// told at once that it goes back; other refunds are told when the money is back).
pub fn came_too_late(reason: &str) -> bool {
    reason == NO_SEAT || reason == EVENT_CANCELLED_BEFORE_PAYMENT
}

/// Why a payment that bought nothing is returned, as its `refund.requested` says: it did not
/// cover the ticket, the event was cancelled before it came (the cancellation's own refunds
/// say `EVENT_CANCELLED`), the registration (`status`) was already paid, or no seat was left.
pub fn refund_reason(
    covered: bool,
    event_cancelled: bool,
    status: RegistrationStatus,
) -> &'static str {
    if !covered {
        "AMOUNT_MISMATCH"
    } else if event_cancelled {
        EVENT_CANCELLED_BEFORE_PAYMENT
    } else if status.is_active() {
        "ALREADY_PAID"
    } else {
        NO_SEAT
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use RegistrationStatus::*;

    #[test]
    fn only_paid_tickets_are_refunded() {
        assert_eq!(refund_due(Confirmed, 0, 0), None, "free ticket");
        assert_eq!(refund_due(Reserved, 0, 1500), None, "never paid");
        assert_eq!(refund_due(Pending, 0, 1500), None, "never paid");
        assert_eq!(refund_due(Confirmed, 1500, 1500), Some(1500));
        assert_eq!(
            refund_due(CheckedIn, 0, 900),
            Some(900),
            "paid before payments were kept"
        );
        assert_eq!(
            refund_due(Reserved, 700, 1500),
            Some(700),
            "a part was paid"
        );
    }

    #[test]
    fn refunds_move_forward_and_failed_ones_are_retried() {
        use RefundStatus::*;
        assert!(Requested.may_become(Sent));
        assert!(Sent.may_become(Sent), "sent again under the same key");
        assert!(Sent.may_become(Succeeded));
        assert!(Sent.may_become(Failed));
        assert!(Failed.may_become(Requested));
        assert!(!Succeeded.may_become(Requested));
        assert!(!Succeeded.may_become(Failed));
        assert!(!Failed.may_become(Succeeded));
        for s in [Requested, Sent, Succeeded, Failed] {
            assert_eq!(RefundStatus::parse(s.as_str()), Some(s));
        }
    }

    #[test]
    fn resends_back_off_to_an_hour() {
        assert_eq!(resend_after(1), Duration::from_secs(10));
        assert_eq!(resend_after(2), Duration::from_secs(20));
        assert_eq!(
            resend_after(9),
            Duration::from_secs(2560).min(Duration::from_secs(3600))
        );
        assert_eq!(resend_after(30), Duration::from_secs(3600));
        assert_eq!(resend_after(0), Duration::from_secs(10));
    }

    #[test]
    fn a_returned_payment_says_why() {
        assert_eq!(refund_reason(false, true, Confirmed), "AMOUNT_MISMATCH");
        assert_eq!(
            refund_reason(true, true, Cancelled),
            "EVENT_CANCELLED_BEFORE_PAYMENT"
        );
        assert_eq!(refund_reason(true, false, Confirmed), "ALREADY_PAID");
        assert_eq!(refund_reason(true, false, Expired), "NO_SEAT");
    }
}
