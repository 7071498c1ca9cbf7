//! Faults injected by tests (the `faults` feature, enabled only for the test build): chance
//! events too rare to wait for.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use uuid::Uuid;

/// Confirmation codes the next registrations of each event draw, in order.
static CODES: Mutex<BTreeMap<Uuid, VecDeque<String>>> = Mutex::new(BTreeMap::new());

/// The next registrations of `event` draw `codes`, one each, before chance draws again: a
/// test makes two of them draw the same code, which happens by chance about once in a sale
/// of 30,000 seats.
pub fn draw_codes(event: Uuid, codes: &[&str]) {
    CODES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(event)
        .or_default()
        .extend(codes.iter().map(|c| c.to_string()));
}

/// The code a test set for the next registration of `event`, if any (taking it).
pub(crate) fn drawn_code(event: Uuid) -> Option<String> {
    CODES
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get_mut(&event)
        .and_then(VecDeque::pop_front)
}
