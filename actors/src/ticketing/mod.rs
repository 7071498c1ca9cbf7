//! Ticketing: the registry of ticket-type actors and the reservation timer.

mod registry;
mod ticket_type;
mod timers;

pub use registry::{Ticketing, TicketingError};
pub use timers::ReservationTimer;
