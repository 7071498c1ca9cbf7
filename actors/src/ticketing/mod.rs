//! Ticketing: event actors supervising ticket-type actors (ractor), their registry, and the
//! node's sweep over stored deadlines for whatever has no running actor.

mod event;
mod registry;
mod ticket_type;
mod timers;

pub use registry::{Ticketing, TicketingError};
pub use timers::ReservationTimer;
