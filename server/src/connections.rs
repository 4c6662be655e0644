//! The accept loop: each connection served by hyper's HTTP/1.1 connection
//! builder, with the bounds `axum::serve` does not set.
//!
//! `axum::serve` reads request headers without a deadline, accepts without
//! a limit and waits for every connection on shutdown, so one client that
//! sends half a request holds a connection (and its memory and file
//! descriptor) forever and keeps a stopping server alive forever. Here:
//!
//! - hyper's header-read timer closes a connection whose request head does
//!   not arrive in time (hyper also runs it while a kept-alive connection
//!   waits for its next request);
//! - a connection on which no request has started for the idle timeout is
//!   closed, after the response it may still be writing;
//! - a semaphore permit per connection caps how many are open: when none is
//!   left, the loop stops accepting and new clients wait in the kernel's
//!   backlog, not in this process's memory;
//! - each client address may hold at most `max_connections_per_client` of
//!   them: past it, a new connection from that address is closed as soon
//!   as it is accepted, so one client re-opening half-sent requests cannot
//!   fill the limit and starve the others (who keep being accepted);
//! - on shutdown the listener closes, every connection finishes the request
//!   it is serving, and whatever is still open after the grace period is
//!   dropped. A create cut off this way still commits or rolls back: the
//!   kitchen runs it on its own task.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, watch};
use tokio::task::{JoinError, JoinSet};
use tokio::time::Instant;
use tower::ServiceExt;

/// First pause after an accept error; it doubles up to [`MAX_ACCEPT_PAUSE`].
const MIN_ACCEPT_PAUSE: Duration = Duration::from_millis(10);
/// Longest pause after repeated accept errors (as hyper 0.14 and axum do).
const MAX_ACCEPT_PAUSE: Duration = Duration::from_secs(1);
/// Least time between two "connection limit reached" warnings, so a server
/// that stays at its limit does not log once per accepted connection.
const LIMIT_WARNING_EVERY: Duration = Duration::from_secs(10);

/// The bounds on connections (see `ServeSettings` for each one's meaning).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) header_read_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_connections_per_client: usize,
    pub(crate) shutdown_grace: Duration,
}

/// How many connections each client address holds open.
#[derive(Debug, Default)]
struct PerClient {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One client's place under its cap; freed when dropped.
struct ClientSlot {
    clients: Arc<PerClient>,
    address: IpAddr,
}

impl PerClient {
    /// A place for one more connection from `address`, unless it already
    /// holds `cap`.
    fn take(self: &Arc<Self>, address: IpAddr, cap: usize) -> Option<ClientSlot> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(address).or_insert(0);
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(ClientSlot {
            clients: Arc::clone(self),
            address,
        })
    }
}

impl Drop for ClientSlot {
    fn drop(&mut self) {
        let mut open = self
            .clients
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// Where the accept loop is: the connection limit, each client's cap, and
/// when it last warned about either.
struct Admission {
    permits: Arc<Semaphore>,
    limit: usize,
    clients: Arc<PerClient>,
    per_client: usize,
    last_limit_warning: Option<Instant>,
    last_client_warning: Option<Instant>,
}

/// Serves `router` on `listener` until `shutdown` resolves, then drains the
/// open connections for at most `limits.shutdown_grace`.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let http = Arc::new(http);
    // A zero limit would never accept; more than the semaphore can count
    // would panic.
    let mut admission = Admission {
        permits: Arc::new(Semaphore::new(
            limits.max_connections.clamp(1, Semaphore::MAX_PERMITS),
        )),
        limit: limits.max_connections,
        clients: Arc::default(),
        per_client: limits.max_connections_per_client.max(1),
        last_limit_warning: None,
        last_client_warning: None,
    };
    // Never sent on: dropping it tells every connection to finish up.
    let (closing, closing_rx) = watch::channel(());
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);

    loop {
        // Finished connections leave the set here, so it holds about as
        // many tasks as there are open connections.
        while let Some(ended) = connections.try_join_next() {
            report_end(ended);
        }
        let next = tokio::select! {
            biased;
            () = &mut shutdown => break,
            next = next_connection(&listener, &mut admission) => next,
        };
        let Some((stream, places)) = next else { break };
        connections.spawn(serve_connection(
            stream,
            router.clone(),
            Arc::clone(&http),
            closing_rx.clone(),
            limits.idle_timeout,
            places,
        ));
    }

    // New clients are refused at once instead of waiting in the backlog of
    // a listener nobody accepts from any more.
    drop(listener);
    drop(closing);
    let open = connections.len();
    let drained = tokio::time::timeout(limits.shutdown_grace, async {
        while let Some(ended) = connections.join_next().await {
            report_end(ended);
        }
    })
    .await;
    if drained.is_err() {
        while let Some(ended) = connections.try_join_next() {
            report_end(ended);
        }
        tracing::warn!(
            stragglers = connections.len(),
            open_at_shutdown = open,
            grace_secs = limits.shutdown_grace.as_secs_f64(),
            "shutdown grace period over: dropping the connections still open"
        );
        // Aborting drops their requests; a create among them still ends on
        // the kitchen's own task.
        connections.shutdown().await;
    }
}

/// A connection's places: under the connection limit, and under its
/// client's cap. Both are freed when it ends.
struct Places {
    _permit: OwnedSemaphorePermit,
    _client: ClientSlot,
}

/// Waits for room under the connection limit, then for a connection from a
/// client under its cap (one over it is closed at once). `None` only if the
/// semaphore was closed, which nothing does.
async fn next_connection(
    listener: &TcpListener,
    admission: &mut Admission,
) -> Option<(TcpStream, Places)> {
    // The permit comes first: while none is free nothing is accepted, so the
    // kernel holds new clients in the backlog (and refuses them past it).
    let permit = match Arc::clone(&admission.permits).try_acquire_owned() {
        Ok(permit) => permit,
        Err(TryAcquireError::Closed) => return None,
        Err(TryAcquireError::NoPermits) => {
            if due(&mut admission.last_limit_warning) {
                tracing::warn!(
                    limit = admission.limit,
                    "connection limit reached: not accepting until a connection closes"
                );
            }
            Arc::clone(&admission.permits).acquire_owned().await.ok()?
        }
    };
    let mut pause = MIN_ACCEPT_PAUSE;
    loop {
        match listener.accept().await {
            Ok((stream, peer)) => {
                match admission.clients.take(peer.ip(), admission.per_client) {
                    Some(client) => {
                        return Some((
                            stream,
                            Places {
                                _permit: permit,
                                _client: client,
                            },
                        ));
                    }
                    None => {
                        if due(&mut admission.last_client_warning) {
                            tracing::warn!(
                                client = %peer.ip(),
                                cap = admission.per_client,
                                "a client holds as many connections as it may: closing its new ones"
                            );
                        }
                        // Dropped: closed. The permit stays for the next.
                        drop(stream);
                    }
                }
            }
            // The client gave up before we took its connection: nothing to
            // wait for.
            Err(e) if is_connection_error(&e) => {
                tracing::debug!(error = %e, "a connection ended before it was accepted");
            }
            // Out of file descriptors (EMFILE, ENFILE) or buffers: retrying
            // at once would spin. Pause, longer each time, and try again;
            // connections that close meanwhile free what is missing.
            Err(e) => {
                tracing::error!(
                    error = %e,
                    pause_ms = pause.as_millis(),
                    "cannot accept a connection; pausing before the next try"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_ACCEPT_PAUSE);
            }
        }
    }
}

/// Whether a warning last given at `last` may be given again now (and
/// notes that it is).
fn due(last: &mut Option<Instant>) -> bool {
    if last.is_none_or(|at| at.elapsed() >= LIMIT_WARNING_EVERY) {
        *last = Some(Instant::now());
        return true;
    }
    false
}

/// Errors about one connection, not about the listener.
fn is_connection_error(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

/// Serves one connection until it ends, the idle timeout passes, or the
/// server stops; `_places` frees its places under the limits when it ends.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    http: Arc<http1::Builder>,
    mut closing: watch::Receiver<()>,
    idle_timeout: Duration,
    _places: Places,
) {
    // When the last request started, in milliseconds since the connection
    // opened (an atomic: the service sets it, this task reads it).
    let opened = Instant::now();
    let last_request = Arc::new(AtomicU64::new(0));
    let service = {
        let last_request = Arc::clone(&last_request);
        router.map_request(move |request: Request<Incoming>| {
            let since_open = u64::try_from(opened.elapsed().as_millis()).unwrap_or(u64::MAX);
            last_request.store(since_open, Ordering::Relaxed);
            request
        })
    };
    let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(connection);
    let idle = tokio::time::sleep(idle_timeout);
    tokio::pin!(idle);
    // After graceful_shutdown the connection only needs polling to its end.
    let mut finishing = false;

    loop {
        tokio::select! {
            ended = connection.as_mut() => {
                if let Err(e) = ended {
                    // Timeouts, resets and malformed requests: the client's
                    // doing, not worth more than debug.
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                return;
            }
            // Resolves when the accept loop drops the sender: shutdown.
            _ = closing.changed(), if !finishing => {
                finishing = true;
                connection.as_mut().graceful_shutdown();
            }
            () = &mut idle, if !finishing => {
                let started = Duration::from_millis(last_request.load(Ordering::Relaxed));
                let due = opened + started + idle_timeout;
                if due > Instant::now() {
                    // A request started since the timer was set: wait from it.
                    idle.as_mut().reset(due);
                } else {
                    // Closes at once when no response is being written, or
                    // right after the one that is.
                    finishing = true;
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// Logs a connection task that did not end normally.
fn report_end(ended: Result<(), JoinError>) {
    if let Err(e) = ended
        && e.is_panic()
    {
        tracing::error!(error = %e, "a connection task panicked");
    }
}
