//! The accept loop. Hand-rolled rather than `axum::serve` for two powers
//! axum does not give a handler: closing its own connection without an
//! answer (`commit_then_drop`), and refusing connections for a while (the
//! outage) before listening on the same port again.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpSocket};
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

/// Kills the connection a request came on; a request extension.
#[derive(Clone)]
pub(crate) struct ConnKill(Arc<Notify>);

impl ConnKill {
    /// The connection closes without sending anything more.
    pub(crate) fn fire(&self) {
        // `notify_one` keeps a permit if nobody waits yet, so the kill is
        // not lost between polls of the connection task.
        self.0.notify_one();
    }
}

/// Binds with `SO_REUSEADDR`, so the port can be taken again after an
/// outage while connections accepted on it are still open or in TIME_WAIT.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()?
    } else {
        TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Serves `router` on `listener` until the task is dropped. Each outage
/// request closes the listener for that long; its sender hears when the
/// port is closed.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<TlsAcceptor>,
    mut outages: mpsc::UnboundedReceiver<(Duration, oneshot::Sender<()>)>,
) {
    let Ok(addr) = listener.local_addr() else {
        return;
    };
    let mut listener = listener;
    // Tells open connections to finish their request in flight and close,
    // so a pooled client cannot slip through an outage on an idle socket.
    let (closing, _) = watch::channel(());
    // Owning the connection tasks means dropping this future (shutdown,
    // abort) ends them too.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    let (router, closing) = (router.clone(), closing.subscribe());
                    match tls.clone() {
                        None => connections.spawn(serve_connection(stream, router, closing)),
                        // The handshake runs on the connection's own task: a
                        // client that never finishes it holds only that task.
                        Some(acceptor) => connections.spawn(async move {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                serve_connection(stream, router, closing).await;
                            }
                        }),
                    };
                }
                // Per-connection failures (a reset before accept, too many
                // files): back off a moment and keep listening.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some((pause, closed)) = outages.recv() => {
                drop(listener);
                closing.send_replace(());
                let _ = closed.send(()); // the asker may have gone; the outage happens anyway
                tokio::time::sleep(pause).await;
                match rebind(addr).await {
                    Ok(again) => listener = again,
                    Err(e) => {
                        eprintln!("provider-sim: cannot listen on {addr} again after the outage: {e}");
                        return;
                    }
                }
            },
            // Reap finished connections so the set does not grow forever.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Takes the port back; another socket may hold it for a moment.
async fn rebind(addr: SocketAddr) -> io::Result<TcpListener> {
    let mut attempts = 0;
    loop {
        match bind(addr) {
            Ok(listener) => return Ok(listener),
            Err(e) if attempts >= 100 => return Err(e),
            Err(_) => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

async fn serve_connection<S>(stream: S, router: Router, mut closing: watch::Receiver<()>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let kill = ConnKill(Arc::new(Notify::new()));
    let tag = kill.clone();
    let service = router.map_request(move |mut request: Request<Incoming>| {
        request.extensions_mut().insert(tag.clone());
        request
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        tokio::select! {
            _ = connection.as_mut() => return,
            // Returning drops the connection and its socket: no answer.
            () = kill.0.notified() => return,
            changed = closing.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}
