//! bilet's pure model: ids, error kinds, validation, paging, configuration and the event
//! envelope. Nothing here performs I/O, so every rule can be unit-tested on its own.

pub mod analytics;
mod catalogue;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod connections;
pub mod contract;
pub mod envelope;
pub mod error;
pub mod events;
pub mod i18n;
pub mod identity;
pub mod ids;
pub mod media;
pub mod notifications;
pub mod paging;
pub mod refusals;
pub mod roles;
pub mod trust;
pub mod validation;

pub use error::ErrorCode;
pub use i18n::Lang;
