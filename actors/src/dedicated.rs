//! A long-lived loop on a thread and runtime of its own.
//!
//! On the request runtime, each answer PostgreSQL sends to such a loop waits in the run queue
//! behind every request ready at that moment; under a burst that delay outlasts what the loop
//! must keep (a lease's trust, the revocation feed's freshness). In a thread of its own the
//! operating system's scheduler runs the loop as soon as its answer arrives.

use std::future::Future;
use tokio::sync::oneshot;

/// Runs `work` on a thread named `name`, on a current-thread runtime of its own.
///
/// `work` is handed a sender for its first result (say, its first round), which this waits
/// for: `None` when the thread ended without sending one (it could not start, or panicked).
/// The receiver returned beside it is answered when `work` returns, and dropped unanswered
/// when the thread ends any other way.
pub async fn start<T, F, Fut>(name: &str, work: F) -> (Option<T>, oneshot::Receiver<()>)
where
    T: Send + 'static,
    F: FnOnce(oneshot::Sender<T>) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    let (first_tx, first) = oneshot::channel();
    let (ended, returned) = oneshot::channel();
    let thread_name = name.to_string();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    tracing::error!(thread = %thread_name, error = %e, "a runtime of its own did not start");
                    return;
                }
            };
            runtime.block_on(work(first_tx));
            let _ = ended.send(());
        });
    if let Err(e) = thread {
        tracing::error!(thread = %name, error = %e, "a thread of its own did not start");
    }
    (first.await.ok(), returned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_result_is_awaited_and_the_end_reported() {
        let (go_on, proceed) = oneshot::channel::<()>();
        let (first, returned) = start("test-loop", move |first| async move {
            let _ = first.send(std::thread::current().name().map(str::to_string));
            let _ = proceed.await;
        })
        .await;
        assert_eq!(first, Some(Some("test-loop".to_string())));
        go_on.send(()).unwrap();
        assert_eq!(returned.await, Ok(()));
    }

    #[tokio::test]
    async fn a_panic_answers_neither() {
        let (first, returned) = start("test-panic", |_: oneshot::Sender<()>| async {
            panic!("the loop failed")
        })
        .await;
        assert_eq!(first, None);
        assert!(returned.await.is_err());
    }
}
