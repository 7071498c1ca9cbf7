//! Ticketing actors: one actor per ticket type serializing its seat changes with group
//! commit, an event actor owning event timers, and the media variant workers. The ticketing
//! core arrives with the registrations step; this crate fixes its place in the workspace.
