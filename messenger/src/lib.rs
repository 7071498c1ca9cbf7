//! The notification service: templates and rendering, the send queue and its log, and the
//! messenger bot (/start linking, /help, /tickets). It arrives with the notifications step;
//! this crate fixes its place in the workspace.
