//! Storage of the media service: file records (schema media_service), the object stores
//! holding their bytes, and the attachments learned from other services' events.

pub mod consumers;
pub mod files;
pub mod objects;
pub mod uploads;
