//! Ticket type rules that depend on what has been sold: seats never drop below what is sold
//! and reserved, and a type with any history is retired instead of deleted.

use super::refusals::EventRefusal;
use crate::error::Refusal;

/// Whether a ticket type may be given `quantity` seats while `sold` are sold and `reserved`
/// held: fewer would take seats from people who have them.
pub fn check_quantity(quantity: i32, sold: i32, reserved: i32) -> Result<(), Refusal> {
    if quantity < sold + reserved {
        Err(Refusal::from(EventRefusal::QuantityBelowTaken))
    } else {
        Ok(())
    }
}

/// Whether deleting a ticket type retires it (off sale, kept) instead: a registration or
/// waiting entry refers to it (`referenced`), or it holds seats. Those rows keep their
/// ticket type, so it cannot go.
pub fn retire_instead(referenced: bool, sold: i32, reserved: i32) -> bool {
    referenced || sold + reserved > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_never_drop_below_what_is_taken() {
        assert_eq!(check_quantity(10, 6, 4), Ok(()));
        assert_eq!(check_quantity(0, 0, 0), Ok(()));
        assert_eq!(
            check_quantity(9, 6, 4),
            Err(Refusal::from(EventRefusal::QuantityBelowTaken))
        );
    }

    #[test]
    fn a_type_with_history_is_retired() {
        assert!(!retire_instead(false, 0, 0));
        assert!(
            retire_instead(true, 0, 0),
            "a cancelled registration refers to it"
        );
        assert!(retire_instead(false, 1, 0));
        assert!(retire_instead(false, 0, 1));
    }
}
