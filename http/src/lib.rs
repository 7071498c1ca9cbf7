//! The HTTP side of bilet: the conventions every endpoint follows (error body, languages,
//! extractors, paging, correlation ids, idempotency keys), health and metrics, the OpenAPI
//! document, and the routers of the gateway and of each service.

pub mod analytics;
pub mod contention;
pub mod context;
pub mod conventions;
pub mod error;
pub mod events;
pub mod extract;
pub mod gateway;
pub mod handover;
pub mod health;
pub mod idempotency;
pub mod identity;
pub mod internal_call;
pub mod media;
pub mod metrics;
pub mod notifications;
pub mod openapi;
pub mod paging;
pub mod paths;
pub mod peers;
pub mod proxy;
pub mod ratelimit;
pub mod revocations;
pub mod router;
pub mod serve;
pub mod state;
pub mod tokens;
pub mod trust;
pub mod web;

pub use error::ApiError;
pub use state::AppState;
