//! Storage of the identity service (schema user_service).

pub mod admins;
