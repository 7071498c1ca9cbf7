//! Rules of the event service: the event life cycle, slugs, and what a valid event and
//! ticket type are.

pub mod lifecycle;
pub mod payments;
pub mod registrations;
pub mod seats;
pub mod slug;
pub mod validation;
