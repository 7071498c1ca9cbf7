//! What an event offers at a glance, as a catalogue card says it: the lowest price and whether
//! seats are plentiful, few or gone.

use serde::Serialize;

/// How many seats are left, in words a card can show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Availability {
    /// Plenty of seats.
    Available,
    /// At most `FEW_LEFT` seats or a tenth of them, whichever is more: worth saying, since
    /// people decide faster when a hall is nearly full.
    FewLeft,
    /// Every seat of every type on offer is sold or held.
    SoldOut,
}

/// At most this many seats left reads as "few left" however large the hall.
pub const FEW_LEFT: i64 = 5;

/// The availability of `left` seats out of `total` (the types on offer).
pub fn availability(left: i64, total: i64) -> Availability {
    if left <= 0 {
        Availability::SoldOut
    } else if left <= FEW_LEFT.max(total / 10) {
        Availability::FewLeft
    } else {
        Availability::Available
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_is_five_seats_or_a_tenth_of_the_hall() {
        assert_eq!(availability(0, 100), Availability::SoldOut);
        assert_eq!(availability(5, 10), Availability::FewLeft);
        assert_eq!(availability(6, 10), Availability::Available);
        assert_eq!(availability(100, 1000), Availability::FewLeft);
        assert_eq!(availability(101, 1000), Availability::Available);
        assert_eq!(
            availability(-1, 3),
            Availability::SoldOut,
            "oversold never reads as open"
        );
    }
}
