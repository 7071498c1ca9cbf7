//! Storage of the notification service (schema notification_service).

pub mod links;
pub mod preferences;
