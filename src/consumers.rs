//! The broker consumers a node runs: each service declares one projection, and every
//! projection sits behind the same inbox (`storage::inbox::Inbox`).

use domain::config::Service;
use http::AppState;
use storage::broker::{Subscription, Yielding};
use storage::inbox::{Inbox, Projection};

/// The name of every consumer a node can run: the dead-letter tool's only valid arguments.
pub const NAMES: [&str; 6] = [
    storage::identity::mail_consumer::MailSender::NAME,
    storage::events::consumers::Projections::NAME,
    storage::events::consumers::PaymentFollowUps::NAME,
    storage::media::consumers::Attachments::NAME,
    analytics::consumers::Recorder::NAME,
    messenger::consumers::Notifier::NAME,
];

/// Refuses a consumer no node runs and lists those that exist: a mistyped name otherwise
/// reads as a broker failure (RabbitMQ has no queue of that name) or as no dead letters.
pub fn known(consumer: &str) -> anyhow::Result<()> {
    if NAMES.contains(&consumer) {
        return Ok(());
    }
    anyhow::bail!(
        "no consumer is named `{consumer}`; the consumers are: {}",
        NAMES.join(", ")
    )
}

/// The subscriptions of the services in `services`.
pub fn for_node(state: &AppState, services: &[Service]) -> Vec<Subscription> {
    let db = || state.db.clone();
    let public_url = &state.config.http.public_url;
    services
        .iter()
        .flat_map(|service| match service {
            Service::Gateway => Vec::new(),
            Service::Identity => vec![Inbox::subscription(
                db(),
                storage::identity::mail_consumer::MailSender::new(state.mailer.clone(), public_url),
            )],
            Service::Events => vec![
                Inbox::subscription(db(), storage::events::consumers::Projections),
                Inbox::subscription(db(), storage::events::consumers::PaymentFollowUps),
            ],
            Service::Media => vec![Inbox::subscription(
                db(),
                storage::media::consumers::Attachments,
            )],
            Service::Analytics => Vec::from_iter(state.analytics.as_ref().map(|parts| {
                giving_way(
                    state,
                    services,
                    Inbox::subscription(
                        db(),
                        analytics::consumers::Recorder::new(db(), parts.store.clone()),
                    ),
                )
            })),
            Service::Notifications => Vec::from_iter(state.notifications.as_ref().map(|parts| {
                giving_way(
                    state,
                    services,
                    Inbox::subscription(
                        db(),
                        messenger::consumers::Notifier::new(
                            parts.queue.clone(),
                            parts.telegram.is_on(),
                            public_url,
                            state.mailer.clone(),
                            state.clock.clone(),
                        ),
                    ),
                )
            })),
        })
        .collect()
}

/// A consumer of every registration, made to give way to the seat path when the node sells
/// seats too (`ticketing.consumer_lag_ms`; see `storage::broker::Yielding`). On a node
/// without the events service it shares no cores with the seats and never waits.
fn giving_way(
    state: &AppState,
    services: &[Service],
    mut subscription: Subscription,
) -> Subscription {
    let lag = state.config.ticketing.consumer_lag_ms;
    if lag > 0 && services.contains(&Service::Events) {
        subscription.handler = std::sync::Arc::new(Yielding::new(
            subscription.handler,
            state.ticketing.foreground().clone(),
            std::time::Duration::from_millis(lag),
        ));
    }
    subscription
}
