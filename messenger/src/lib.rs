//! The notification service: broker events become messages rendered from templates, queued
//! in the database and sent by a rate-limited actor through the messenger bot, which also
//! answers /start (account linking, invites), /help and /tickets. A waiting-list offer no chat
//! can carry goes by mail.

pub mod bot;
pub mod consumers;
pub mod direct;
pub mod invites;
pub mod offer_mail;
pub mod sender;
pub mod telegram;
pub mod ticket;
pub mod tickets;

pub use sender::{SendCounters, SendQueue, SenderArgs};
pub use telegram::Telegram;
