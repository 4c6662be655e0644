//! A TCP relay in front of the servers of a client test, standing where a
//! load balancer would: it forwards each new connection to the server it
//! points at; the next few go through the double-fire driver's fault proxy
//! instead (the server does the work, the answer is lost); and it can stop
//! listening (connections refused, as while a server restarts) and listen
//! again on the same port, in front of another server.
//!
//! It routes whole connections: a client that already holds a pooled
//! connection to the relay keeps using it, so a call whose answer is to be
//! lost needs a client whose first connection it makes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use double_fire::fault_proxy::FaultProxy;
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The relay; it stops listening when dropped.
pub struct Relay {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

/// What the relay's tasks share.
struct Shared {
    routes: Mutex<Routes>,
    accept: Mutex<Option<JoinHandle<()>>>,
}

/// Where the next connections go.
struct Routes {
    upstream: SocketAddr,
    /// Connections still to lose, through this proxy.
    losing: Option<(usize, Arc<FaultProxy>)>,
    /// Whether to stop listening once the next lost answer is lost: the
    /// server died right after its commit.
    down_after_loss: bool,
}

/// Where one connection goes.
enum Hop {
    Pass(SocketAddr),
    Lose {
        proxy: Arc<FaultProxy>,
        then_down: bool,
    },
}

impl Relay {
    /// A relay to `upstream` on a free loopback port.
    pub async fn to(upstream: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let addr = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            routes: Mutex::new(Routes {
                upstream,
                losing: None,
                down_after_loss: false,
            }),
            accept: Mutex::new(None),
        });
        shared.listen(listener);
        Relay { addr, shared }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The next `n` connections go to `server` through a fault proxy: it
    /// does the work, and its answer is lost.
    pub async fn lose_next(&self, n: usize, server: SocketAddr) {
        let proxy = FaultProxy::losing_responses(server)
            .await
            .expect("start the fault proxy");
        self.shared.routes().losing = Some((n, Arc::new(proxy)));
    }

    /// The next connection goes to `server` and its answer is lost, and
    /// then the relay stops listening: the server died right after its
    /// commit, before it could answer.
    pub async fn crash_after_next(&self, server: SocketAddr) {
        self.lose_next(1, server).await;
        self.shared.routes().down_after_loss = true;
    }

    /// Waits (up to 5 s) until the relay has stopped listening.
    pub async fn wait_down(&self) {
        for _ in 0..500 {
            if !self.shared.is_listening() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the relay is still listening");
    }

    /// Listens again on the same port, in front of `upstream`.
    pub async fn come_up(&self, upstream: SocketAddr) {
        self.shared.routes().upstream = upstream;
        let listener = TcpListener::bind(self.addr)
            .await
            .expect("the relay's port again");
        self.shared.listen(listener);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(accept) = self.shared.accept.lock().expect("accept").take() {
            accept.abort();
        }
    }
}

impl Shared {
    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().expect("routes")
    }

    /// Whether the relay listens.
    fn is_listening(&self) -> bool {
        self.accept.lock().expect("accept").is_some()
    }

    /// Accepts on `listener`, one task per connection.
    fn listen(self: &Arc<Self>, listener: TcpListener) {
        let shared = Arc::clone(self);
        let accept = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(Arc::clone(&shared).relay(client));
            }
        });
        *self.accept.lock().expect("accept") = Some(accept);
    }

    /// Stops listening: the listener is closed when this returns, so new
    /// connections are refused.
    async fn stop_listening(&self) {
        let accept = self.accept.lock().expect("accept").take();
        if let Some(accept) = accept {
            accept.abort();
            let _ = accept.await;
        }
    }

    /// Where the next connection goes.
    fn next_hop(&self) -> Hop {
        let mut routes = self.routes();
        match routes.losing.take() {
            Some((n, proxy)) if n > 0 => {
                if n > 1 {
                    routes.losing = Some((n - 1, Arc::clone(&proxy)));
                }
                let then_down = std::mem::take(&mut routes.down_after_loss);
                Hop::Lose { proxy, then_down }
            }
            _ => Hop::Pass(routes.upstream),
        }
    }

    async fn relay(self: Arc<Self>, client: TcpStream) {
        match self.next_hop() {
            Hop::Pass(upstream) => {
                let Ok(mut server) = TcpStream::connect(upstream).await else {
                    return; // dropping the client's connection closes it
                };
                let mut client = client;
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            }
            Hop::Lose { proxy, then_down } => {
                let Ok(server) = TcpStream::connect(proxy_addr(&proxy)).await else {
                    return;
                };
                let (mut from_client, _to_client) = client.into_split();
                let (mut from_server, mut to_server) = server.into_split();
                let forward = tokio::spawn(async move {
                    let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
                });
                // The proxy passes nothing back: it closes once the server's
                // answer starts. Only then is the client's connection closed,
                // after the relay stopped listening if the server "died".
                let mut byte = [0u8; 1];
                let _ = from_server.read(&mut byte).await;
                if then_down {
                    self.stop_listening().await;
                }
                forward.abort();
                let _ = forward.await;
            }
        }
    }
}

/// The proxy's address.
fn proxy_addr(proxy: &FaultProxy) -> SocketAddr {
    proxy
        .base_url()
        .trim_start_matches("http://")
        .parse()
        .expect("the proxy's address")
}
