//! Faults injected by tests (the `faults` feature, enabled only for the test build): what the
//! supervision of the ticketing actors must survive.

use std::collections::BTreeSet;
use std::sync::Mutex;
use uuid::Uuid;

static PANIC_ON_FLUSH: Mutex<BTreeSet<Uuid>> = Mutex::new(BTreeSet::new());

/// The next flush of `ticket_type`'s actor panics, with the requests of its batch pending.
pub fn panic_on_next_flush(ticket_type: Uuid) {
    PANIC_ON_FLUSH
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(ticket_type);
}

/// Whether a panic was asked for this flush of `ticket_type` (once).
pub(crate) fn take_flush_panic(ticket_type: Uuid) -> bool {
    PANIC_ON_FLUSH
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .remove(&ticket_type)
}
