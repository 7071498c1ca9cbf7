//! Rules of the identity service: what a valid password, email, slug and name are, the
//! lifetimes and limits of its tokens, the mails it asks for, the organization request
//! states, who may change which member, the messenger sign-in check, and which revocations
//! end an access token before it expires.

pub mod limits;
pub mod mail_request;
pub mod mails;
pub mod members;
pub mod messenger;
pub mod refusals;
pub mod requests;
pub mod revocation;
pub mod rules;
pub mod tokens;
