//! Rules of the event service: the event life cycle, what a change to an event may do, slugs,
//! seats, ticket types, waiting rooms, waiting lists and payments, what a valid event and ticket type are,
//! and the refusals it answers with.

pub mod checkout;
pub mod copy;
pub mod lifecycle;
pub mod offer;
pub mod patch;
pub mod payments;
pub mod refunds;
pub mod refusals;
pub mod registrations;
pub mod search;
pub mod seats;
pub mod slug;
pub mod ticket_types;
pub mod validation;
pub mod waiting_room;
pub mod waitlist;
