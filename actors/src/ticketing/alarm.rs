//! A timer an actor sets for itself (ractor's `send_after`), cancelled when another of the same
//! kind is set and when the actor's state is dropped: by the actor's task when it fails, else
//! by its supervisor once it has handled the `ActorTerminated` that carries the state (ours
//! keep nothing of it).
//!
//! Why: a sleeping timer holds a reference to its actor, and with it the actor's mailbox and
//! cell. An event actor's reminder timer sleeps up to an hour before it looks at the clock
//! again, and an idle timer up to the idle time; left to run after their actor had stopped,
//! they kept the mailboxes of a sale's stopped actors allocated, blocks scattered over the
//! allocator's pages, which then could not go back to the operating system (bench/README.md,
//! twentieth sitting: 55 mailboxes and 62 timers still there 370 s after the sale).

use ractor::MessagingErr;
use tokio::task::JoinHandle;

/// The one pending timer of a kind.
pub(super) struct Alarm<T>(Option<JoinHandle<Result<(), MessagingErr<T>>>>);

impl<T> Default for Alarm<T> {
    fn default() -> Self {
        Alarm(None)
    }
}

impl<T> Alarm<T> {
    /// Sets `timer` as the pending one; the one set before no longer fires.
    pub(super) fn set(&mut self, timer: JoinHandle<Result<(), MessagingErr<T>>>) {
        if let Some(before) = self.0.replace(timer) {
            before.abort();
        }
    }
}

impl<T> Drop for Alarm<T> {
    fn drop(&mut self) {
        if let Some(timer) = self.0.take() {
            timer.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Alarm;
    use ractor::{Actor, ActorProcessingErr, ActorRef};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Counts the messages it is sent.
    struct Counter;

    impl Actor for Counter {
        type Msg = ();
        type State = Arc<AtomicUsize>;
        type Arguments = Arc<AtomicUsize>;

        async fn pre_start(
            &self,
            _: ActorRef<()>,
            count: Arc<AtomicUsize>,
        ) -> Result<Arc<AtomicUsize>, ActorProcessingErr> {
            Ok(count)
        }

        async fn handle(
            &self,
            _: ActorRef<()>,
            _: (),
            count: &mut Arc<AtomicUsize>,
        ) -> Result<(), ActorProcessingErr> {
            count.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_timer_set_again_or_dropped_does_not_fire_and_lets_its_actor_go() {
        let count = Arc::new(AtomicUsize::new(0));
        let (actor, handle) = Actor::spawn(None, Counter, count.clone()).await.unwrap();
        let mut alarm = Alarm::default();
        alarm.set(actor.send_after(Duration::from_millis(50), || ()));
        // Set again: only the second fires.
        alarm.set(actor.send_after(Duration::from_millis(100), || ()));
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            count.load(Ordering::SeqCst),
            1,
            "the replaced timer did not fire"
        );

        // Dropped (the actor's state going with it): the sleeping timer's task ends at once,
        // and with it the reference to the actor that kept its mailbox allocated.
        let tasks = || {
            tokio::runtime::Handle::current()
                .metrics()
                .num_alive_tasks()
        };
        let before = tasks();
        alarm.set(actor.send_after(Duration::from_secs(3600), || ()));
        assert_eq!(tasks(), before + 1);
        drop(alarm);
        for _ in 0..100 {
            if tasks() == before {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(tasks(), before, "the hour-long timer's task is gone");
        actor.stop(None);
        handle.await.unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }
}
