//! Faults injected by tests (the `faults` feature, enabled only for the test build): what the
//! supervision of the ticketing actors must survive.

use std::collections::BTreeMap;
use std::sync::Mutex;
use uuid::Uuid;

/// How many of the next flushes of each ticket type's actor panic.
static PANIC_ON_FLUSH: Mutex<BTreeMap<Uuid, usize>> = Mutex::new(BTreeMap::new());

/// The next `times` flushes of `ticket_type`'s actor panic, with their batch pending.
pub fn panic_on_flushes(ticket_type: Uuid, times: usize) {
    *PANIC_ON_FLUSH
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(ticket_type)
        .or_default() += times;
}

/// Panics asked for `ticket_type` that have not happened yet.
pub fn panics_left(ticket_type: Uuid) -> usize {
    PANIC_ON_FLUSH
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&ticket_type)
        .copied()
        .unwrap_or(0)
}

/// Whether this flush of `ticket_type` is to panic (counting it).
pub(crate) fn take_flush_panic(ticket_type: Uuid) -> bool {
    let mut panics = PANIC_ON_FLUSH.lock().unwrap_or_else(|p| p.into_inner());
    match panics.get_mut(&ticket_type) {
        Some(left) if *left > 0 => {
            *left -= 1;
            true
        }
        _ => false,
    }
}
