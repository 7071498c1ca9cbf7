//! What is given back: the refund a registration cancelled with its event is owed, and why a
//! payment that bought nothing is returned.

use super::registrations::{RegistrationStatus, Seat};

/// The refund a registration cancelled with its event is owed (`was`: its status before):
/// what was `paid` for it, or its price when it was confirmed before payments were recorded;
/// nothing for free or unpaid tickets.
pub fn refund_due(was: RegistrationStatus, paid: i64, price_cents: i64) -> Option<i64> {
    if paid > 0 {
        return Some(paid);
    }
    (was.seat() == Seat::Sold && price_cents > 0).then_some(price_cents)
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
        "EVENT_CANCELLED_BEFORE_PAYMENT"
    } else if status.is_active() {
        "ALREADY_PAID"
    } else {
        "NO_SEAT"
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
