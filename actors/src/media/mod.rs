//! Media: rendering image variants and the worker that makes them after an upload.

pub mod render;
pub mod workers;

pub use workers::{MediaWorkers, VariantArgs};
