//! Logs through tracing: readable lines on a terminal, JSON lines otherwise (with the
//! request span, so every line of a request carries its correlation id).

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber.
pub fn init(filter: &str) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    let result = if std::io::stdout().is_terminal() {
        builder.try_init()
    } else {
        builder
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .flatten_event(true)
            .try_init()
    };
    // A second init (tests) keeps the first subscriber.
    let _ = result;
}
