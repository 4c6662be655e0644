//! [`Kitchen`]: the one entry point the doors call.
//!
//! # Layout
//! - this file: the kitchen itself, connecting, health and closing;
//! - `writes.rs`: the one write ([`Kitchen::write`]) and the path it takes;
//! - `operations.rs`: operation records and status, the sweep, the reconciler;
//! - `operators.rs`: lists of operations, and settling an effect by hand;
//! - `reads.rs`: tickets, comments, history;
//! - `tenants.rs`: tenants, tokens, identities, authentication.

mod operations;
mod operators;
mod reads;
mod tenants;
pub(crate) mod writes;

use std::future::Future;
use std::sync::Arc;

use crate::auth_cache::AuthCache;
use crate::backend::Backend;
use crate::domain::action::Action;
use crate::domain::duplicate::GuardMode;
use crate::domain::fault::{StorageFault, Written};
use crate::domain::identity::TenantVia;
use crate::domain::lifecycle::Horizons;
use crate::domain::tenant::{Caller, Tenant, TenantName};
use crate::store::Db;
use crate::store::circuit::{self, Health};
use crate::store::group_commit::GroupWriter;
use crate::write::engine::Engine;
use crate::write::keys::KeyRules;
use crate::write::replay_cache::ReplayCache;
use crate::{KitchenConfig, KitchenError};

/// The domain core. Cheap to clone: one reference count (every door
/// clones it per request, so a clone must not touch each part's own).
#[derive(Debug, Clone)]
pub struct Kitchen(Arc<KitchenParts>);

impl std::ops::Deref for Kitchen {
    type Target = KitchenParts;

    fn deref(&self) -> &KitchenParts {
        &self.0
    }
}

/// What a [`Kitchen`] holds, shared by its clones.
#[derive(Debug)]
pub struct KitchenParts {
    pub(crate) db: Db,
    config: KitchenConfig,
    auth_cache: Arc<AuthCache<Caller>>,
    /// Identity-provider subjects' tenants, by a hash of the identity.
    identity_cache: Arc<AuthCache<(Tenant, TenantVia)>>,
    /// Tenants' own likely-duplicate guard modes, by tenant id (`None`:
    /// the deployment's), reread after the same time as a token.
    guard_modes: Arc<AuthCache<Option<GuardMode>>>,
    /// The generic write path, on this kitchen's database.
    pub(crate) engine: Engine,
    /// Where writes happen.
    pub(crate) backend: Backend,
    /// What requests found about the database: the circuit that answers
    /// at once while it is unreachable, and whether writes are failing.
    health: Health,
}

/// A tenant name that is already taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a tenant named {0} already exists")]
pub struct TenantNameTaken(pub TenantName);

impl Kitchen {
    /// Connects to `database_url` (`sqlite:PATH` or `postgres://…`) and
    /// applies pending migrations. Safe to call from several instances at
    /// once on PostgreSQL.
    pub async fn connect(database_url: &str, config: KitchenConfig) -> Result<Self, KitchenError> {
        let db = Db::connect(database_url, &config).await?;
        tracing::debug!(database = db.kind(), "kitchen connected");
        let auth_cache = Arc::new(AuthCache::new(config.auth_cache_ttl));
        let identity_cache = Arc::new(AuthCache::new(config.auth_cache_ttl));
        let guard_modes = Arc::new(AuthCache::new(config.auth_cache_ttl));
        let writer = GroupWriter::for_db(&db, &config).await?;
        let engine = Engine {
            db: db.clone(),
            wait_bound: config.wait_bound,
            keys: KeyRules {
                horizons: Horizons::new(config.replay_window, config.tombstone_horizon),
                clock: config.clock.clone(),
            },
            replays: ReplayCache::new(config.replay_cache, config.clock.clone()),
            writer,
        };
        let backend = Backend::new(&config.backend, &db, &engine);
        Ok(Self(Arc::new(KitchenParts {
            db,
            config,
            auth_cache,
            identity_cache,
            guard_modes,
            engine,
            backend,
            health: Health::default(),
        })))
    }

    /// Which database the kitchen runs on: `sqlite` or `postgres`.
    pub fn database_kind(&self) -> &'static str {
        self.db.kind()
    }

    /// Where tickets are made: `local` or `remote`.
    pub fn backend_name(&self) -> &'static str {
        self.config.backend.name()
    }

    /// Whether doing `action` reaches a system the service does not own (a
    /// provider, on the remote backend): what MCP calls an open world.
    pub fn action_reaches_a_provider(&self, action: Action) -> bool {
        self.backend.sends(action)
    }

    /// Whether reading an operation's status may search a provider (the
    /// remote backend). It never sends anything there.
    pub fn status_reads_reach_a_provider(&self) -> bool {
        self.backend.status_reads_search()
    }

    /// The settings the kitchen runs with.
    pub fn config(&self) -> &KitchenConfig {
        &self.config
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), KitchenError> {
        self.db.ping().await
    }

    /// Whether the service can do its work now, within about the acquire
    /// timeout: the database answers (at once `Err` while the circuit is
    /// open) and, when writes have been failing for want of a writable
    /// database, it can commit a row again. Each `Err` is a storage fault.
    pub async fn ready(&self) -> Result<(), KitchenError> {
        let bound = self.config.acquire_timeout;
        let timed_out = || KitchenError::Unavailable {
            fault: StorageFault::Unreachable,
            written: Written::Nothing,
            cause: format!("no answer within {} ms", bound.as_millis()),
        };
        self.guarded(async {
            tokio::time::timeout(bound, self.db.ping())
                .await
                .map_err(|_| timed_out())??;
            if self.health.writes_failing() {
                tokio::time::timeout(bound, circuit::probe_write(&self.db))
                    .await
                    .map_err(|_| timed_out())??;
                self.health.committed();
            }
            Ok(())
        })
        .await
    }

    /// Runs `work` behind the circuit (at once `Err` while the database is
    /// known to be unreachable), and learns from its storage faults.
    async fn guarded<T>(
        &self,
        work: impl Future<Output = Result<T, KitchenError>>,
    ) -> Result<T, KitchenError> {
        self.health.check()?;
        let result = work.await;
        if let Err(error) = &result {
            self.health
                .saw(error, &self.db, self.config.acquire_timeout);
        }
        result
    }

    /// Lets the group writer finish the writes queued for it, then closes
    /// its connection and the pool. Writes submitted after this fail.
    pub async fn close(&self) {
        if let Some(writer) = &self.engine.writer {
            writer.close().await;
        }
        self.db.close().await;
    }
}
