//! LISTEN on a channel over a connection of its own, reconnecting after a loss. Whoever
//! listens also polls: a notification can be lost with its connection, so `on_message(None)`
//! is called each time the listener (re)connects, meaning "anything may have happened".

use futures_util::StreamExt;
use std::time::Duration;
use tokio::sync::watch;

/// Listens on `channel` with `login` (the application role's) until `stop` changes; `on_message` gets each
/// notification's payload, and `None` after every (re)connection.
pub async fn listen<F>(
    login: tokio_postgres::Config,
    channel: &'static str,
    on_message: F,
    mut stop: watch::Receiver<bool>,
) where
    F: Fn(Option<&str>) + Send + Sync + 'static,
{
    loop {
        if *stop.borrow() {
            return;
        }
        match login.connect(tokio_postgres::NoTls).await {
            Ok((client, mut connection)) => {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let driver = tokio::spawn(async move {
                    let mut messages =
                        futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
                    while let Some(message) = messages.next().await {
                        match message {
                            Ok(tokio_postgres::AsyncMessage::Notification(n)) => {
                                let _ = tx.send(n.payload().to_string());
                            }
                            Ok(_) => {}
                            Err(_) => break,
                        }
                    }
                });
                if client
                    .batch_execute(&format!("LISTEN {channel}"))
                    .await
                    .is_ok()
                {
                    // Anything committed before LISTEN took effect is picked up by this call.
                    on_message(None);
                    loop {
                        tokio::select! {
                            payload = rx.recv() => match payload {
                                Some(p) => on_message(Some(&p)),
                                None => break,
                            },
                            _ = stop.changed() => { driver.abort(); return; }
                        }
                    }
                }
                driver.abort();
                tracing::warn!(channel, "LISTEN connection lost; polling until it is back");
            }
            Err(e) => {
                tracing::warn!(channel, error = %e, "LISTEN connection failed; polling meanwhile")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            _ = stop.changed() => return,
        }
    }
}
