//! Actors in front of the database: one actor per ticket type serializes its seat requests and
//! commits whatever is waiting in its mailbox in one transaction (group commit); a timer
//! actor expires reservations from the deadlines stored in the database.

pub mod cluster;
pub mod dedicated;
#[cfg(feature = "faults")]
pub mod faults;
pub mod media;
pub mod ticketing;
