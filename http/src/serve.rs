//! The listener of a service: accepts connections and serves a router on them, and lets go of
//! a connection that has nothing more to say.
//!
//! A burst of thousands of connections at once overflowed a listen queue of 128: the kernel
//! answered the excess with SYN cookies, and some connections ended established on the node's
//! side with no client on the other. Nothing closed them — no request ever came, and the
//! server waited for one without a deadline — so each kept its buffers and task for the life
//! of the process (471 to 1,050 of them after a sustained sale, 40–70 MB; bench/README.md).
//! Anyone can also open connections and leave them idle on purpose. So: a listen queue that
//! holds a burst; a deadline for a connection's first bytes and for each request's head (which
//! is also how long an idle keep-alive connection stays open); pings on HTTP/2 connections
//! (the gateway's own to the services), which stay open while their peer answers; and TCP
//! keepalive for a peer that vanished in the middle of a request.

use axum::Router;
use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tower::ServiceExt;

/// Connections the kernel may hold for the node before it accepts them (capped by
/// `net.core.somaxconn`).
const BACKLOG: u32 = 4096;

/// How long an accept error (out of file descriptors) pauses the loop.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// How a peer that stopped answering is found out: probes after this much silence.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(60);

/// What an HTTP/2 connection without TLS opens with (RFC 9113, 3.4).
const HTTP2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long to wait for the rest of an HTTP/2 preface that arrived in pieces.
const PREFACE_PAUSE: Duration = Duration::from_millis(5);

/// The protocol a connection opens with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// Binds `addr` with a listen queue that holds an on-sale's burst of connections.
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    // As the standard library's bind: a restarted node can listen at once.
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Serves `router` on `listener` until `stop` changes, then lets the open connections finish
/// their requests. A connection waits at most `idle` for the head of its next request.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    idle: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(idle);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(idle)
        .keep_alive_timeout(idle);
    // hyper's own choice between the two reads the first bytes without a deadline.
    let http1 = Arc::new(builder.clone().http1_only());
    let http2 = Arc::new(builder.http2_only());
    let graceful = GracefulShutdown::new();
    loop {
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was taken: the
                    // listener itself is fine.
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
            _ = stop.changed() => break,
        };
        keep_alive(&stream);
        let service = router
            .clone()
            .map_request(move |mut request: axum::extract::Request<_>| {
                request.extensions_mut().insert(ConnectInfo(remote));
                request.map(axum::body::Body::new)
            });
        let service = hyper_util::service::TowerToHyperService::new(service);
        let (http1, http2, watcher) = (http1.clone(), http2.clone(), graceful.watcher());
        tokio::spawn(async move {
            let builder = match protocol(&stream, idle).await {
                Some(Protocol::Http1) => http1,
                Some(Protocol::Http2) => http2,
                // Nothing in time, or closed: dropping the stream closes it.
                None => return,
            };
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            if let Err(e) = watcher.watch(connection).await {
                tracing::trace!(error = %e, "connection ended");
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// Which protocol `stream` speaks, from its first bytes (left unread for hyper), if they come
/// within `within`.
async fn protocol(stream: &TcpStream, within: Duration) -> Option<Protocol> {
    let read = async {
        let mut first = [0u8; HTTP2_PREFACE.len()];
        loop {
            let n = stream.peek(&mut first).await.ok()?;
            if n == 0 {
                return None;
            }
            if first[..n] != HTTP2_PREFACE[..n] {
                return Some(Protocol::Http1);
            }
            if n == HTTP2_PREFACE.len() {
                return Some(Protocol::Http2);
            }
            // Part of the preface: a peek would find the same bytes at once until more come.
            tokio::time::sleep(PREFACE_PAUSE).await;
        }
    };
    tokio::time::timeout(within, read).await.ok().flatten()
}

/// Lets the kernel probe a connection that has been silent, so one whose peer is gone ends.
fn keep_alive(stream: &TcpStream) {
    let settings = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_IDLE / 4);
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_keepalive(&settings) {
        tracing::debug!(error = %e, "keepalive not set");
    }
}
