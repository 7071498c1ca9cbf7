//! Consumers that give way to the seat path. On a node that sells seats and also runs the
//! consumers of every registration (notifications, analytics), both want the same cores at an
//! on-sale's peak, and every millisecond a consumer spends is a seat not sold in it. What a
//! person in the queue waits for is their seat; their ticket message and the dashboard's count
//! can follow a little later. So while the node has seat requests in flight
//! ([`Foreground`]), such a consumer ([`Yielding`]) holds its next batch back until the seat
//! path is idle, or until the batch's oldest event is `most_lag` old: the lag stays bounded
//! under an overload that never ends, and a quiet or lightly loaded node (whose seat path is
//! idle between requests) applies at once.

use super::{Handler, HandlerError};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::envelope::Envelope;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Notify;

/// The node's seat requests in flight, and a bell rung each time their number falls to zero.
#[derive(Clone, Default)]
pub struct Foreground {
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    busy: AtomicUsize,
    idle: Notify,
}

/// One request counted in flight while it lives (released on unwind and cancellation too).
pub struct Busy {
    state: Arc<State>,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if self.state.busy.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.state.idle.notify_waiters();
        }
    }
}

impl Foreground {
    /// Counts one request in flight until the guard is dropped.
    pub fn enter(&self) -> Busy {
        self.state.busy.fetch_add(1, Ordering::AcqRel);
        Busy {
            state: self.state.clone(),
        }
    }

    /// Requests in flight now.
    pub fn busy(&self) -> usize {
        self.state.busy.load(Ordering::Acquire)
    }

    /// Waits until nothing is in flight or `longest` has passed; whether it ended idle.
    pub async fn idle_within(&self, longest: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + longest;
        loop {
            // Registered before the count is read, so a fall to zero between the two wakes.
            let idle = self.state.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            if self.busy() == 0 {
                return true;
            }
            tokio::select! {
                () = &mut idle => {}
                () = tokio::time::sleep_until(deadline) => return self.busy() == 0,
            }
        }
    }
}

/// How long a batch whose oldest event occurred at `oldest` may still wait at `now`: what is
/// left of `most_lag`, and never more than `most_lag` (an event stamped ahead of this node's
/// clock waits no longer than one stamped now).
pub fn patience(oldest: DateTime<Utc>, now: DateTime<Utc>, most_lag: Duration) -> Duration {
    let waited = (now - oldest).to_std().unwrap_or(Duration::ZERO);
    most_lag.saturating_sub(waited)
}

/// A consumer's handler that waits for the seat path before each batch (see the module).
pub struct Yielding {
    inner: Arc<dyn Handler>,
    foreground: Foreground,
    most_lag: Duration,
}

impl Yielding {
    /// `inner`, giving way to `foreground` for at most `most_lag` behind an event.
    pub fn new(inner: Arc<dyn Handler>, foreground: Foreground, most_lag: Duration) -> Yielding {
        Yielding {
            inner,
            foreground,
            most_lag,
        }
    }

    async fn give_way(&self, events: &[Envelope]) {
        if self.foreground.busy() == 0 {
            return;
        }
        let Some(oldest) = events.iter().map(|e| e.occurred_at).min() else {
            return;
        };
        let left = patience(oldest, Utc::now(), self.most_lag);
        if !left.is_zero() {
            self.foreground.idle_within(left).await;
        }
    }
}

#[async_trait]
impl Handler for Yielding {
    async fn handle(&self, event: &Envelope) -> Result<(), HandlerError> {
        self.give_way(std::slice::from_ref(event)).await;
        self.inner.handle(event).await
    }

    async fn handle_batch(&self, events: &[Envelope]) -> Result<(), HandlerError> {
        self.give_way(events).await;
        self.inner.handle_batch(events).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn patience_is_what_is_left_of_the_lag_and_never_more() {
        let now = Utc::now();
        let lag = Duration::from_secs(30);
        assert_eq!(patience(now, now, lag), lag);
        assert_eq!(
            patience(now - chrono::Duration::seconds(10), now, lag),
            Duration::from_secs(20)
        );
        assert_eq!(
            patience(now - chrono::Duration::seconds(31), now, lag),
            Duration::ZERO
        );
        assert_eq!(patience(now + chrono::Duration::hours(1), now, lag), lag);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_seat_path_lets_a_waiting_consumer_go_at_once() {
        let foreground = Foreground::default();
        assert!(foreground.idle_within(Duration::from_secs(30)).await);
        let busy = foreground.enter();
        let second = foreground.enter();
        let waiting = tokio::spawn({
            let foreground = foreground.clone();
            async move {
                let started = tokio::time::Instant::now();
                let idle = foreground.idle_within(Duration::from_secs(30)).await;
                (idle, started.elapsed())
            }
        });
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(busy);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!waiting.is_finished(), "one request is still in flight");
        drop(second);
        let (idle, waited) = waiting.await.unwrap();
        assert!(idle);
        assert_eq!(waited, Duration::from_secs(10));
        assert_eq!(foreground.busy(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_seat_path_that_stays_busy_holds_a_consumer_for_its_patience_only() {
        let foreground = Foreground::default();
        let _busy = foreground.enter();
        let started = tokio::time::Instant::now();
        assert!(!foreground.idle_within(Duration::from_secs(3)).await);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    /// Counts the events it was handed.
    #[derive(Default)]
    struct Counting(AtomicU32);

    #[async_trait]
    impl Handler for Counting {
        async fn handle(&self, _: &Envelope) -> Result<(), HandlerError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_batch_waits_for_the_seat_path_but_an_old_one_does_not() {
        let foreground = Foreground::default();
        let counting = Arc::new(Counting::default());
        let yielding = Arc::new(Yielding::new(
            counting.clone(),
            foreground.clone(),
            Duration::from_secs(30),
        ));
        let busy = foreground.enter();

        let late = Envelope {
            occurred_at: Utc::now() - chrono::Duration::seconds(40),
            ..Envelope::new("registration.created", None, None, serde_json::json!({}))
        };
        yielding.handle_batch(&[late]).await.unwrap();
        assert_eq!(
            counting.0.load(Ordering::SeqCst),
            1,
            "past its lag: applied"
        );

        let fresh = Envelope::new("registration.created", None, None, serde_json::json!({}));
        let held = tokio::spawn({
            let yielding = yielding.clone();
            async move { yielding.handle_batch(&[fresh]).await }
        });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(
            counting.0.load(Ordering::SeqCst),
            1,
            "held while seats are sold"
        );
        drop(busy);
        held.await.unwrap().unwrap();
        assert_eq!(counting.0.load(Ordering::SeqCst), 2);
    }
}
