//! Everything one backend's cells share: the provider simulator (remote
//! backends), the proxy every caller goes through, and the instances of
//! this service, each started the first time a cell needs it: the main one
//! (SQLite), one with a short replay window (SQLite), and two on one fresh
//! PostgreSQL database, each of them once per likely-duplicate guard mode
//! a cell asks for. All of it is torn down when the backend's cells are
//! done.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::matrix::Backend;
use super::proxy::Proxy;
use super::servers::{self, Server, Settings};
use super::timing;
use crate::soak::DatabaseKind;
use crate::soak::database::SoakDatabase as Database;
use provider_sim::{self, KeyPolicy, RunningSim, SimClient, SimConfig};

/// One instance of this service (or two on one database) with its token.
pub(crate) struct Instance {
    /// Where it answers (A, then B for a pair).
    pub(crate) servers: Vec<Server>,
    /// Its database.
    pub(crate) database: Database,
    /// A token of the bench's tenant.
    pub(crate) token: String,
}

impl Instance {
    /// The first server's base URL.
    pub(crate) fn url(&self, at: usize) -> String {
        self.servers
            .get(at)
            .or(self.servers.first())
            .map(Server::base_url)
            .unwrap_or_default()
    }

    async fn stop(self) -> anyhow::Result<()> {
        for server in self.servers {
            server.stop().await?;
        }
        self.database.remove().await
    }
}

/// Which instance a cell talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Which {
    /// The main one.
    Main,
    /// The one with a short replay window.
    ShortWindow,
    /// Two on one PostgreSQL database.
    Pair,
}

/// A backend's shared parts.
pub(crate) struct Env {
    /// Which backend.
    pub(crate) backend: Backend,
    /// The simulator, on the remote backends.
    pub(crate) sim: Option<RunningSim>,
    /// The proxy in front of every caller.
    pub(crate) proxy: Proxy,
    binary: PathBuf,
    postgres_url: String,
    logs: PathBuf,
    /// The instances started so far, by kind and `DUPLICATE_GUARD`.
    instances: BTreeMap<(Which, &'static str), Instance>,
}

impl Env {
    /// The simulator (remote backends) and the proxy; no server yet.
    pub(crate) async fn start(
        backend: Backend,
        binary: &Path,
        postgres_url: &str,
        logs: &Path,
    ) -> anyhow::Result<Self> {
        let sim = match backend {
            Backend::Local => None,
            Backend::Honour | Backend::Ignore => {
                let keys = if backend == Backend::Honour {
                    KeyPolicy::Honour
                } else {
                    KeyPolicy::Ignore
                };
                let listen: SocketAddr = "127.0.0.1:0".parse()?;
                let config = SimConfig {
                    keys,
                    dedup_window: timing::PROVIDER_WINDOW,
                };
                Some(provider_sim::spawn(listen, config).await?)
            }
        };
        let first = sim.as_ref().map(RunningSim::base_url).unwrap_or_default();
        Ok(Self {
            backend,
            proxy: Proxy::start(&first).await?,
            sim,
            binary: binary.to_owned(),
            postgres_url: postgres_url.to_owned(),
            logs: logs.to_owned(),
            instances: BTreeMap::new(),
        })
    }

    /// The simulator's client, on the remote backends.
    pub(crate) fn sim(&self) -> Option<SimClient> {
        self.sim.as_ref().map(RunningSim::client)
    }

    /// The instance `which` with the guard `guard`, started if it is not
    /// yet.
    pub(crate) async fn instance(
        &mut self,
        which: Which,
        guard: kitchen::GuardMode,
    ) -> anyhow::Result<&Instance> {
        let slot = (which, guard.as_str());
        if !self.instances.contains_key(&slot) {
            let backend = self.backend;
            let settings = Settings {
                provider: self.sim.as_ref().map(RunningSim::base_url),
                provider_window: if backend == Backend::Honour {
                    timing::PROVIDER_WINDOW
                } else {
                    Duration::ZERO
                },
                replay_window_secs: (which == Which::ShortWindow)
                    .then_some(timing::REPLAY_WINDOW_SECS),
                guard,
                log: self
                    .logs
                    .join(format!("{backend}-{which:?}-guard-{guard}.log").to_lowercase()),
            };
            // A fresh log per run; the servers append to it.
            std::fs::File::create(&settings.log)?;
            let database = match which {
                Which::Pair => Database::create(DatabaseKind::Postgres, &self.postgres_url).await?,
                Which::Main | Which::ShortWindow => {
                    Database::create(DatabaseKind::Sqlite, &self.postgres_url).await?
                }
            };
            let count = if which == Which::Pair { 2 } else { 1 };
            let started = async {
                let token = servers::tenant(&self.binary, database.url()).await?;
                let mut servers = Vec::new();
                for _ in 0..count {
                    servers.push(Server::start(&self.binary, database.url(), &settings).await?);
                }
                anyhow::Ok((token, servers))
            }
            .await;
            match started {
                Ok((token, servers)) => {
                    self.instances.insert(
                        slot,
                        Instance {
                            servers,
                            database,
                            token,
                        },
                    );
                }
                Err(e) => {
                    // Started servers die with the vector; the database
                    // must not outlive the run.
                    let _ = database.remove().await;
                    return Err(e);
                }
            }
        }
        self.instances
            .get(&slot)
            .ok_or_else(|| anyhow::anyhow!("the {which:?} instance ({guard}) did not start"))
    }

    /// Stops every server and removes every database (the PostgreSQL one
    /// included, on failure too).
    pub(crate) async fn stop(self) -> anyhow::Result<()> {
        let mut first_error = None;
        for instance in self.instances.into_values() {
            if let Err(e) = instance.stop().await {
                first_error.get_or_insert(e);
            }
        }
        if let Some(sim) = self.sim {
            sim.shutdown().await;
        }
        first_error.map_or(Ok(()), Err)
    }
}
