//! Storage of the notification service (schema notification_service): settings, chat links,
//! the projection of other services' events, and the send queue with its log.

pub mod links;
pub mod preferences;
pub mod projection;
pub mod queue;
