//! Kitchen settings.

use std::time::Duration;

use crate::clock::Clock;
use crate::domain::duplicate::DuplicateGuard;
use crate::provider::TicketBackend;

/// How long a key replays its frozen answer by default: 30 days.
pub const DEFAULT_REPLAY_WINDOW: time::Duration = time::Duration::days(30);

/// How long a key's tombstone is kept by default: 400 days from first use.
/// Until then a retry past the replay window answers `expired` instead of
/// making a second effect.
pub const DEFAULT_TOMBSTONE_HORIZON: time::Duration = time::Duration::days(400);

/// How many records one sweep batch turns into tombstones (or deletes) by
/// default: small, so that on SQLite a write never waits long behind it.
pub const DEFAULT_SWEEP_BATCH: u32 = 500;

/// How long the sweep rests between two full batches by default. On SQLite
/// a write waiting for the lock retries on its own schedule (up to every
/// 100 ms); a sweep that took the lock again at once would keep it from
/// ever getting in while a backlog drains.
pub const DEFAULT_SWEEP_PAUSE: Duration = Duration::from_millis(100);

/// How long a create waits for a concurrent attempt by default: 5 seconds.
pub const DEFAULT_WAIT_BOUND: Duration = Duration::from_secs(5);

/// Most writes one SQLite transaction commits together by default. Enough
/// to share one fsync among every create of a busy moment; small enough
/// that a group is a few milliseconds of work.
pub const DEFAULT_WRITE_GROUP_MAX: usize = 64;

/// How long a request waits for a database connection by default: 1
/// second, well under the request timeout, so that a database that is down
/// is a quick `503` rather than a stalled request.
pub const DEFAULT_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a PostgreSQL connection sits idle in the pool by default
/// before it is checked again before use: 1 second. Under load
/// connections go out again within milliseconds and are not checked (a
/// round trip each); one that sat through a quiet spell, and perhaps a
/// failover, is.
pub const DEFAULT_PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// How long a token lookup is reused by default: 2 seconds.
pub const DEFAULT_AUTH_CACHE_TTL: Duration = Duration::from_secs(2);

/// Settings of a [`Kitchen`](crate::Kitchen).
#[derive(Debug, Clone)]
pub struct KitchenConfig {
    /// How long a create waits for another attempt that holds the same key
    /// (on SQLite: in the group writer's queue, then for the database's
    /// write lock) before answering
    /// [`Outcome::InProgress`](crate::Outcome::InProgress).
    pub wait_bound: Duration,
    /// How long a key replays the first answer byte for byte; sets each
    /// record's `replayable_until`. After it, the record is a tombstone.
    pub replay_window: time::Duration,
    /// How long a key is remembered at all, from its first use; sets each
    /// record's `retained_until`. Until then a retry with the key never
    /// makes a second effect; after it the key is free again. Never
    /// shorter than the replay window (a shorter one is raised to it).
    pub tombstone_horizon: time::Duration,
    /// Most records one sweep batch changes.
    pub sweep_batch: u32,
    /// How long the sweep rests between two full batches, so that writes
    /// get the database in between (see [`DEFAULT_SWEEP_PAUSE`]).
    pub sweep_pause: Duration,
    /// Where the key lifecycle reads the time; the system clock unless a
    /// test holds a manual one.
    pub clock: Clock,
    /// Most database connections the pool opens.
    pub max_connections: u32,
    /// How long a request waits for a database connection before the
    /// database counts as unreachable (a storage fault, answered `503`).
    pub acquire_timeout: Duration,
    /// PostgreSQL: how long a connection sits idle in the pool before it is
    /// pinged before use (a dead one is replaced before a caller's
    /// statement meets it); zero pings every time, as sqlx does by default.
    /// SQLite ignores it: its connections are never pinged.
    pub ping_after_idle: Duration,
    /// How long a successful token lookup is reused. A token revoked on
    /// another instance keeps working there this long; zero disables.
    pub auth_cache_ttl: Duration,
    /// Where tickets are made: locally (the default) or in a provider.
    pub backend: TicketBackend,
    /// SQLite: most writes one transaction of the group writer holds. Every
    /// write of the write path goes through that one writer, which takes
    /// what is queued (up to this many) and commits it at once, each write
    /// still atomic with its own claim. (PostgreSQL ignores it.)
    pub write_group_max: usize,
    /// How many finished answers are kept in memory, so that a retry within
    /// the replay window skips the database.
    pub replay_cache: ReplayCacheConfig,
    /// What a create or a comment whose content matches a recent write
    /// under another key meets (a tenant may have its own mode:
    /// [`Kitchen::set_duplicate_guard`](crate::Kitchen::set_duplicate_guard)).
    pub duplicate_guard: DuplicateGuard,
    /// PostgreSQL: what stands between this service and the database (a
    /// pooler that lends a server connection per transaction needs
    /// statements run differently). SQLite ignores it.
    pub database_pooler: DatabasePooler,
}

impl Default for KitchenConfig {
    fn default() -> Self {
        Self {
            wait_bound: DEFAULT_WAIT_BOUND,
            replay_window: DEFAULT_REPLAY_WINDOW,
            tombstone_horizon: DEFAULT_TOMBSTONE_HORIZON,
            sweep_batch: DEFAULT_SWEEP_BATCH,
            sweep_pause: DEFAULT_SWEEP_PAUSE,
            clock: Clock::system(),
            max_connections: 10,
            acquire_timeout: DEFAULT_ACQUIRE_TIMEOUT,
            ping_after_idle: DEFAULT_PING_AFTER_IDLE,
            auth_cache_ttl: DEFAULT_AUTH_CACHE_TTL,
            backend: TicketBackend::Local,
            write_group_max: DEFAULT_WRITE_GROUP_MAX,
            replay_cache: ReplayCacheConfig::default(),
            duplicate_guard: DuplicateGuard::default(),
            database_pooler: DatabasePooler::None,
        }
    }
}

/// What stands between the service and PostgreSQL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DatabasePooler {
    /// Nothing, or a pooler that gives each client connection a server
    /// connection of its own for as long as it is open (pgbouncer's
    /// `pool_mode = session`, HAProxy): statements are prepared once per
    /// connection and kept. The default.
    #[default]
    None,
    /// A pooler that lends a server connection per transaction (pgbouncer's
    /// `pool_mode = transaction`): every statement is unnamed and runs
    /// inside a transaction, and the wait bound is set per transaction. It
    /// costs a statement outside a transaction up to three more round
    /// trips.
    Transaction,
}

impl DatabasePooler {
    /// Every value, as the setting names them.
    pub const ALL: [DatabasePooler; 2] = [DatabasePooler::None, DatabasePooler::Transaction];

    /// `none` or `transaction`: as the setting names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Transaction => "transaction",
        }
    }
}

impl std::str::FromStr for DatabasePooler {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|pooler| pooler.as_str() == raw)
            .ok_or_else(|| format!("{raw:?} is not a pooler mode (none or transaction)"))
    }
}

impl std::fmt::Display for DatabasePooler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How much memory finished answers may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayCacheConfig {
    /// Most answers kept; 0 turns the cache off.
    pub max_entries: u64,
    /// Most bytes they may take (frozen JSON, the parsed result, the key
    /// and bookkeeping, estimated); 0 turns the cache off.
    pub max_bytes: u64,
}

impl ReplayCacheConfig {
    /// No cache: every retry reads its record from the database.
    pub const OFF: Self = Self {
        max_entries: 0,
        max_bytes: 0,
    };
}

impl Default for ReplayCacheConfig {
    /// 50,000 answers or 16 MiB, whichever is reached first.
    fn default() -> Self {
        Self {
            max_entries: 50_000,
            max_bytes: 16 * 1024 * 1024,
        }
    }
}
