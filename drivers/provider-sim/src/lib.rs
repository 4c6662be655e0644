//! The provider simulator: a fake hosted ticket tracker, kept in memory,
//! that misbehaves on demand. Tests of the remote ticket backend point it
//! here; its per-reference counts of tickets, change records and comments
//! are the ground truth for duplicates.
//! The HTTP contract is `docs/provider-simulator.md`. Test
//! infrastructure: nothing of the service depends on it.
//!
//! # Layout
//!
//! - `bin/provider-sim.rs`: the command line.
//! - `api`: the JSON both sides speak ([`SimTicket`], [`SimChange`],
//!   [`SimComment`], [`FaultRule`], [`Counts`]).
//! - `requests`: the bodies the tracker accepts, checked field by field.
//! - `store`: tickets, change records, comments, remembered keys with their
//!   dedup window, counters.
//! - `faults`: scheduled faults and which request they hit.
//! - `http`: the routes.
//! - `listener`: the accept loop (outages, connections closed unanswered).
//! - `tls`: serving over TLS ([`SimTls`]) and throwaway certificates for
//!   tests ([`TestCertificates`]).
//! - `client`: [`SimClient`], for tests and drivers.
//! - `redmine_proxy`: the same faults in front of a real Redmine
//!   ([`spawn_redmine_proxy`]).

mod api;
mod client;
mod faults;
mod http;
mod listener;
mod redmine_proxy;
mod requests;
mod store;
mod tls;

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use api::{
    ChangeKind, ChangeRefCount, CommentRefCount, Counts, Fault, FaultOn, FaultRule, FieldChange,
    RefCount, STATUSES, SimChange, SimComment, SimObject, SimTicket,
};
pub use client::SimClient;
pub use tls::{SimTls, TestCertificates};

/// How the simulator treats `Idempotency-Key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum KeyPolicy {
    /// A key seen again within the dedup window replays its answer.
    #[default]
    Honour,
    /// Every request acts, key or not.
    Ignore,
}

impl fmt::Display for KeyPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Honour => "honour",
            Self::Ignore => "ignore",
        })
    }
}

/// How a simulator behaves when no fault is scheduled.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Whether idempotency keys are honoured.
    pub keys: KeyPolicy,
    /// How long a key is remembered from when its request first acted.
    pub dedup_window: Duration,
}

impl Default for SimConfig {
    /// Honour keys for a day, like the command line's defaults.
    fn default() -> Self {
        Self {
            keys: KeyPolicy::Honour,
            dedup_window: Duration::from_secs(24 * 60 * 60),
        }
    }
}

/// Starts a simulator on `listen` (port 0 picks a free one). It runs on the
/// current tokio runtime until [`RunningSim::shutdown`] or drop.
pub async fn spawn(listen: SocketAddr, config: SimConfig) -> io::Result<RunningSim> {
    start(listen, config, None, None).await
}

/// As [`spawn`], serving HTTPS with `tls`. `ca_pem`, when known, is the CA
/// that signed the server certificate: [`RunningSim::client`] trusts it.
pub async fn spawn_tls(
    listen: SocketAddr,
    config: SimConfig,
    tls: &SimTls,
    ca_pem: Option<&str>,
) -> io::Result<RunningSim> {
    start(
        listen,
        config,
        Some(tls.acceptor()?),
        ca_pem.map(str::to_owned),
    )
    .await
}

/// Starts a fault proxy on `listen` in front of the Redmine at `upstream`
/// (`http://host:port`): every request is forwarded, and the simulator's
/// `/_sim/faults` rules and `/_sim/outage` apply to it (see the
/// `redmine_proxy` module for what each fault means there). It has no
/// `/_sim/counts` (Redmine holds the truth); `GET /_sim/received` answers
/// `{"creates_received": N}`, the creates that reached it.
pub async fn spawn_redmine_proxy(listen: SocketAddr, upstream: &str) -> io::Result<RunningSim> {
    let listener = listener::bind(listen)?;
    let addr = listener.local_addr()?;
    let (outages, outage_requests) = mpsc::unbounded_channel();
    let proxy = redmine_proxy::Proxy {
        upstream: upstream.trim_end_matches('/').to_owned(),
        client: reqwest::Client::new(),
        faults: Arc::default(),
        outages,
        creates_received: Arc::default(),
    };
    let task = tokio::spawn(listener::serve(
        listener,
        redmine_proxy::router(proxy),
        None,
        outage_requests,
    ));
    Ok(RunningSim {
        addr,
        tls: false,
        ca_pem: None,
        task,
    })
}

/// Serves HTTPS when given an acceptor; `ca_pem` is what its clients trust.
async fn start(
    listen: SocketAddr,
    config: SimConfig,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    ca_pem: Option<String>,
) -> io::Result<RunningSim> {
    let listener = listener::bind(listen)?;
    let addr = listener.local_addr()?;
    let (outages, outage_requests) = mpsc::unbounded_channel();
    let app = http::App {
        store: Arc::new(store::Store::new(config.keys, config.dedup_window)),
        faults: Arc::default(),
        outages,
    };
    let tls = acceptor.is_some();
    let task = tokio::spawn(listener::serve(
        listener,
        http::router(app),
        acceptor,
        outage_requests,
    ));
    Ok(RunningSim {
        addr,
        tls,
        ca_pem,
        task,
    })
}

/// A running simulator. Dropping it stops it (open connections included);
/// a `hang` commit already under way still completes in the background.
pub struct RunningSim {
    addr: SocketAddr,
    /// Whether it serves HTTPS.
    tls: bool,
    /// Over TLS: the CA that signed its certificate, when known.
    ca_pem: Option<String>,
    task: JoinHandle<()>,
}

impl RunningSim {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, or `https://ADDR` over TLS.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// A client for this simulator (over TLS trusting its CA, when known).
    pub fn client(&self) -> SimClient {
        match &self.ca_pem {
            None => SimClient::new(self.base_url()),
            Some(ca) => SimClient::trusting(self.base_url(), ca),
        }
    }

    /// Stops it and waits until the port is closed.
    pub async fn shutdown(mut self) {
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}

impl Drop for RunningSim {
    fn drop(&mut self) {
        self.task.abort();
    }
}
