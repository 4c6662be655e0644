//! Everything one backend's cells share: the provider simulator (the
//! remote backends; on `redmine` the fault proxy in front of Redmine, with
//! the simple adapter's connection and the count), the proxy every caller
//! goes through, and the instances of
//! this service, each started the first time a cell needs it: the main one
//! (SQLite), one with a short replay window (SQLite), and two on one fresh
//! PostgreSQL database, each of them once per likely-duplicate guard mode
//! a cell asks for. All of it is torn down when the backend's cells are
//! done.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use double_fire::RedmineTruth;
use provider_client::ProviderTls;
use provider_client::redmine::{RedmineProvider, RedmineSettings, StatusNames};

use super::RedmineConfig;
use super::matrix::Backend;
use super::proxy::Proxy;
use super::servers::{self, Server, Settings};
use super::timing;
use super::truth::Ledger;
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

/// What the `redmine` backend's cells use of its Redmine.
pub(crate) struct RedmineParts {
    /// Its settings (our servers get them).
    config: RedmineConfig,
    /// Strategy (b): the service's own Redmine adapter, called directly,
    /// through the bench's proxy and then the fault proxy (as (b) reaches
    /// the simulator through the bench's proxy).
    pub(crate) adapter: RedmineProvider,
    /// Where effects are counted: Redmine itself, not through a proxy.
    truth: RedmineTruth,
}

/// A backend's shared parts.
pub(crate) struct Env {
    /// Which backend.
    pub(crate) backend: Backend,
    /// The simulator, on the remote backends (on `redmine`, the fault
    /// proxy in front of Redmine, which takes the simulator's faults).
    pub(crate) sim: Option<RunningSim>,
    /// The Redmine parts, on `redmine`.
    pub(crate) redmine: Option<RedmineParts>,
    /// For the count and the fault proxy's tally.
    http: reqwest::Client,
    /// The proxy in front of every caller.
    pub(crate) proxy: Proxy,
    binary: PathBuf,
    postgres_url: String,
    logs: PathBuf,
    /// The instances started so far, by kind and `DUPLICATE_GUARD`.
    instances: BTreeMap<(Which, &'static str), Instance>,
}

impl Env {
    /// The simulator (remote backends) and the proxy; no server yet. On
    /// `redmine`, the fault proxy in front of `redmine` (required there),
    /// checked to be fresh, and strategy (b)'s adapter connected.
    pub(crate) async fn start(
        backend: Backend,
        binary: &Path,
        postgres_url: &str,
        logs: &Path,
        redmine: Option<&RedmineConfig>,
    ) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()?;
        let redmine = match backend {
            Backend::Redmine => Some(redmine.ok_or_else(|| {
                anyhow::anyhow!("the redmine backend needs a Redmine (--redmine-url …)")
            })?),
            _ => None,
        };
        // `redmine` is there exactly on the redmine backend.
        let sim = match (backend, redmine) {
            (Backend::Local, _) => None,
            (_, Some(config)) => {
                let listen: SocketAddr = "127.0.0.1:0".parse()?;
                Some(provider_sim::spawn_redmine_proxy(listen, &config.url).await?)
            }
            (_, None) => {
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
        let proxy = Proxy::start(&first).await?;
        let redmine = match redmine {
            Some(config) => Some(RedmineParts::start(config, &proxy, &http).await?),
            None => None,
        };
        Ok(Self {
            backend,
            proxy,
            sim,
            redmine,
            http,
            binary: binary.to_owned(),
            postgres_url: postgres_url.to_owned(),
            logs: logs.to_owned(),
            instances: BTreeMap::new(),
        })
    }

    /// The simulator's client, on the remote backends (on `redmine` the
    /// fault proxy's: faults and outages, no counts).
    pub(crate) fn sim(&self) -> Option<SimClient> {
        self.sim.as_ref().map(RunningSim::client)
    }

    /// Where a remote backend's effects are counted: the simulator, or
    /// Redmine itself.
    pub(crate) fn provider_ledger(&self) -> Option<Ledger> {
        match (&self.redmine, &self.sim) {
            (Some(redmine), _) => Some(Ledger::Redmine {
                truth: redmine.truth.clone(),
                http: self.http.clone(),
            }),
            (None, Some(sim)) => Some(Ledger::Provider(sim.client())),
            (None, None) => None,
        }
    }

    /// Creates the provider has received so far (remote backends): the
    /// simulator's `creates_received`, or the fault proxy's tally of the
    /// creates that reached it (`/_sim/received`) in front of Redmine.
    pub(crate) async fn creates_received(&self) -> anyhow::Result<Option<u64>> {
        let Some(sim) = &self.sim else {
            return Ok(None);
        };
        if self.redmine.is_none() {
            return Ok(Some(sim.client().counts().await?.creates_received));
        }
        #[derive(serde::Deserialize)]
        struct Received {
            creates_received: u64,
        }
        let url = format!("{}/_sim/received", sim.base_url());
        let answer = self
            .http
            .get(&url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("GET {url}"))?;
        let received: Received = answer.json().await.with_context(|| format!("GET {url}"))?;
        Ok(Some(received.creates_received))
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
                redmine: self.redmine.as_ref().map(|r| r.config.clone()),
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

impl RedmineParts {
    /// Checks that the project holds no issue yet (the count reads issues
    /// by subject: an earlier run's would be counted as this run's), then
    /// connects strategy (b)'s adapter through `proxy`.
    async fn start(
        config: &RedmineConfig,
        proxy: &Proxy,
        http: &reqwest::Client,
    ) -> anyhow::Result<Self> {
        #[derive(serde::Deserialize)]
        struct Issues {
            total_count: u64,
        }
        let url = format!("{}/issues.json", config.url.trim_end_matches('/'));
        let issues: Issues = http
            .get(&url)
            .header("x-redmine-api-key", &config.truth_api_key)
            .query(&[
                ("project_id", config.project.as_str()),
                ("status_id", "*"),
                ("limit", "1"),
            ])
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("Redmine GET {url} (is it running? is the key right?)"))?
            .json()
            .await
            .with_context(|| format!("Redmine GET {url}: not the JSON expected"))?;
        anyhow::ensure!(
            issues.total_count == 0,
            "Redmine's project {} already holds {} issue(s): the count reads issues by \
             subject, so the run needs a fresh Redmine (drivers/effect_bench.sh starts one)",
            config.project,
            issues.total_count
        );
        let settings = RedmineSettings {
            base_url: proxy.base_url(),
            api_key: config.api_key.clone(),
            project: config.project.clone(),
            reference_field: config.reference_field.clone(),
            statuses: StatusNames::default(),
            // Each of its calls is one attempt of the caller's budget.
            timeout: timing::CALL_TIMEOUT,
            tls: ProviderTls::default(),
        };
        let adapter = RedmineProvider::connect(&settings)
            .await
            .context("strategy (b)'s Redmine adapter could not start through the proxies")?;
        Ok(Self {
            config: config.clone(),
            adapter,
            truth: RedmineTruth {
                url: config.url.trim_end_matches('/').to_owned(),
                api_key: config.truth_api_key.clone(),
                project: config.project.clone(),
            },
        })
    }
}
