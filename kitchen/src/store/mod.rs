//! Storage: the only place in the project that speaks SQL.
//!
//! Reads run the same SQL text on both databases (`$1`-style parameters work
//! on both drivers); [`on_db!`] expands one body once per driver, so each
//! copy is type-checked against a concrete pool instead of sqlx's generic
//! bounds. The create differs on purpose: SQLite claims and inserts in a
//! `BEGIN IMMEDIATE` transaction, PostgreSQL in one statement (one round
//! trip; see `planned.rs`). [`is_lock_timeout`] recognises a lock wait
//! that ran past the wait bound on either. On SQLite the writes of the
//! generic write path go through one writer that commits small groups
//! (`group_commit.rs`); everything else stays on the pool.

use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Connection, Pool, Sqlite, Transaction};

use postgres::{PgPool, PgTx};

use crate::{KitchenConfig, KitchenError};

pub(crate) mod circuit;
pub(crate) mod comments;
pub(crate) mod duplicates;
pub(crate) mod effects;
pub(crate) mod fault;
pub(crate) mod group_commit;
pub(crate) mod history;
pub(crate) mod ledger;
pub(crate) mod operation_list;
pub(crate) mod operations;
pub(crate) mod planned;
pub(crate) mod postgres;
pub(crate) mod rows;
pub(crate) mod settlements;
pub(crate) mod shared_text;
pub(crate) mod sweep;
pub(crate) mod tenants;
pub(crate) mod tickets;
pub(crate) mod write;

/// A pool on one of the two supported databases.
#[derive(Debug, Clone)]
pub(crate) enum Db {
    Sqlite(Pool<Sqlite>),
    Postgres(PgPool),
}

/// Runs `$body` with `$pool` bound to the concrete pool, whichever it is.
macro_rules! on_db {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::store::Db::Sqlite($pool) => $body,
            $crate::store::Db::Postgres($pool) => $body,
        }
    };
}
pub(crate) use on_db;

impl Db {
    /// Opens a pool for `url` (`sqlite:` or `postgres:`) and brings the
    /// schema up to date.
    pub(crate) async fn connect(url: &str, config: &KitchenConfig) -> Result<Self, KitchenError> {
        let scheme = url.split(':').next().unwrap_or_default();
        let db = match scheme {
            "sqlite" => {
                let options = SqliteConnectOptions::from_str(url)?
                    .create_if_missing(true)
                    // WAL lets readers run while the one writer commits.
                    .journal_mode(SqliteJournalMode::Wal)
                    // FULL: a create we answered must survive a power cut, or a
                    // retry after it would make the ticket a second time.
                    .synchronous(SqliteSynchronous::Full)
                    .foreign_keys(true)
                    // The wait bound: how long a write waits for the write lock
                    // before InProgress. The write path's own writes queue in
                    // the group writer instead (group_commit.rs), which opens
                    // its connection with these same options; the rare other
                    // writes (sweep batches, tenants and tokens, the remote
                    // ledger) stay on this pool and wait in the busy handler.
                    .busy_timeout(config.wait_bound);
                // A newcomer's first run points at a file in a folder that
                // does not exist yet (data/ by default): make it.
                if let Some(dir) = options.get_filename().parent()
                    && !dir.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| KitchenError::Database(sqlx::Error::Io(e)))?;
                }
                let pool = sqlite_pool_options(config)
                    .max_connections(config.max_connections)
                    .connect_with(options)
                    .await?;
                sqlx::migrate!("../migrations/sqlite").run(&pool).await?;
                Db::Sqlite(pool)
            }
            "postgres" | "postgresql" => Db::Postgres(PgPool::connect(url, config).await?),
            _ => {
                return Err(KitchenError::UnsupportedDatabaseUrl {
                    scheme: scheme.to_owned(),
                });
            }
        };
        Ok(db)
    }

    /// Which database this is, for logs.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Round-trips a trivial query: is the database there?
    pub(crate) async fn ping(&self) -> Result<(), KitchenError> {
        on_db!(self, pool => sqlx::query("SELECT 1").execute(pool).await.map(drop))?;
        Ok(())
    }

    /// Closes every connection; pending work finishes first.
    pub(crate) async fn close(&self) {
        on_db!(self, pool => pool.close().await);
    }
}

/// The options every SQLite pool opens with (the shared pool and the group
/// writer's own).
pub(crate) fn sqlite_pool_options(config: &KitchenConfig) -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        // Fail fast: a file that cannot be opened costs a caller this long,
        // not sqlx's default 30 s.
        .acquire_timeout(config.acquire_timeout)
        // No ping before each use. sqlx already pings every connection as it
        // comes back to the pool (and drops one whose thread has died); a
        // SQLite connection is a file opened in this process, with no other
        // end to hang up while it sits idle; and the ping is a hand-over to
        // the connection's own thread and back, paid on the caller's path
        // by every read (the guard's after each create among them): REST
        // creates at 16 clients 2.70k -> 2.80k/s with 10 % less server CPU
        // each, at 64 3.3k -> 3.6k/s (p99 31-33 -> 28-30 ms). PostgreSQL
        // keeps it: a failover kills idle connections.
        .test_before_acquire(false)
        // A connection whose transaction did not end cleanly goes, rather
        // than back to the pool. When a COMMIT fails (a full disk), SQLite
        // may already have rolled the transaction back, so the ROLLBACK
        // that follows fails too and sqlx still counts the connection as
        // inside a transaction: every later BEGIN on it would fail
        // ("attempted to call begin_with at non-zero transaction depth")
        // until a restart. A fresh connection has no such memory. (It
        // also drops a connection whose transaction was merely dropped
        // mid-way, whose rollback is still queued: an error path, where a
        // reconnect costs nothing that matters.)
        .after_release(|conn, _| Box::pin(async move { Ok(!conn.is_in_transaction()) }))
}

/// How each database's pool starts a write transaction.
pub(crate) trait WriteTransaction {
    /// The transaction it starts.
    type Tx;

    /// Begins a write transaction whose lock waits give up after `wait`
    /// (the connection's or the transaction's setting: both databases set
    /// it from the same wait bound every writer passes).
    async fn begin_write(&self, wait: Duration) -> sqlx::Result<Self::Tx>;
}

impl WriteTransaction for Pool<Sqlite> {
    type Tx = Transaction<'static, Sqlite>;

    async fn begin_write(&self, _wait: Duration) -> sqlx::Result<Self::Tx> {
        // IMMEDIATE takes the write lock now. A deferred transaction would
        // take it at its first write and, if another writer got there first,
        // fail at once with SQLITE_BUSY instead of waiting. The wait itself
        // is the connection's busy timeout, set to the wait bound at connect.
        self.begin_with("BEGIN IMMEDIATE").await
    }
}

impl WriteTransaction for PgPool {
    type Tx = PgTx;

    async fn begin_write(&self, _wait: Duration) -> sqlx::Result<Self::Tx> {
        // READ COMMITTED (the default); the wait bound is the connection's
        // or the transaction's `lock_timeout` (postgres.rs).
        self.begin().await
    }
}

/// Whether `err` means "waited for a lock past the wait bound": another
/// attempt holds the key (PostgreSQL) or the write lock (SQLite).
pub(crate) fn is_lock_timeout(err: &sqlx::Error) -> bool {
    const PG_LOCK_NOT_AVAILABLE: &str = "55P03";
    const SQLITE_BUSY: i32 = 5;
    let Some(db_err) = err.as_database_error() else {
        return false;
    };
    if db_err
        .try_downcast_ref::<sqlx::sqlite::SqliteError>()
        .is_some()
    {
        // SQLite reports extended codes; the primary code is the low byte.
        db_err
            .code()
            .and_then(|c| c.parse::<i32>().ok())
            .is_some_and(|c| c & 0xff == SQLITE_BUSY)
    } else {
        db_err
            .try_downcast_ref::<sqlx::postgres::PgDatabaseError>()
            .is_some_and(|e| e.code() == PG_LOCK_NOT_AVAILABLE)
    }
}
