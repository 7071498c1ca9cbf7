//! Rules of the identity service: what a valid password, email, slug and name are, the
//! lifetimes and limits of its tokens, the mails it asks for, the organization request
//! states, who may change which member, and the messenger sign-in check.

pub mod limits;
pub mod mail_request;
pub mod mails;
pub mod members;
pub mod messenger;
pub mod refusals;
pub mod requests;
pub mod rules;
pub mod tokens;
