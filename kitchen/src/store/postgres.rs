//! PostgreSQL's pool and transactions, reached directly or through a
//! pooler that lends a server connection per transaction (pgbouncer's
//! `pool_mode = transaction`).
//!
//! Why a wrapper around sqlx's pool: behind such a pooler, two things sqlx
//! does by default break (measured with pgbouncer 1.18; tests/ha/NOTES.md):
//!
//! - sqlx names its prepared statements (`sqlx_s_N`, counted per client
//!   connection) and keeps them. The pooler lends another client's server
//!   connection, where the name already exists or never did. So every
//!   statement is unnamed ([`Unnamed`]).
//! - A statement with arguments takes sqlx two round trips (Parse + Sync,
//!   then Bind + Execute + Sync). Outside a transaction the server is idle
//!   in between, and the pooler may run the second half on another server
//!   connection, where the unnamed statement does not exist. So every
//!   statement runs inside a transaction: a transaction's own, or one
//!   opened for the statement alone ([`PgPool`]'s executor).
//!
//! Session state does not survive either: the wait bound is set per
//! transaction (`SET LOCAL lock_timeout`) instead of per connection, and
//! migrations take a transaction's advisory lock instead of a session's.
//!
//! Directly connected (the default), everything stays as sqlx does it:
//! named statements cached per connection, one round trip per statement.

use std::ops::{Deref, DerefMut};
use std::str::FromStr;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use sqlx::error::BoxDynError;
use sqlx::migrate::MigrateError;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{
    PgArguments, PgConnectOptions, PgConnection, PgPoolOptions, PgQueryResult, PgRow, PgStatement,
    PgTypeInfo,
};
use sqlx::{
    AssertSqlSafe, Connection, Either, Execute, Executor, Pool, Postgres, SqlStr, Transaction,
};

use crate::{DatabasePooler, KitchenConfig, KitchenError};

/// The PostgreSQL pool, and how statements must run on it.
#[derive(Debug, Clone)]
pub(crate) struct PgPool {
    pool: Pool<Postgres>,
    /// Behind a transaction-mode pooler (unnamed statements, each inside a
    /// transaction): what opens a transaction, `BEGIN` and the wait bound
    /// for that transaction alone.
    pooled_begin: Option<String>,
}

/// A few statements on [`PgPool`] in a row, each its own transaction, on
/// one connection borrowed once: a create and the guard's read after it.
///
/// Why: each borrowing costs sqlx's ping as the connection comes back (a
/// round trip PostgreSQL's backend answers, on two cores a share of what a
/// create waits for), and the borrowing itself. Behind a pooler there is
/// nothing to hold (a server connection is lent per transaction): each
/// statement then runs on the pool as any other.
#[derive(Debug)]
pub(crate) enum PgSession<'p> {
    /// Directly connected: the connection, until the session is dropped.
    Held(PoolConnection<Postgres>),
    /// Behind a pooler: the pool.
    Pooled(&'p PgPool),
}

/// A transaction on [`PgPool`]. It dereferences to [`PgTxConn`], so store
/// code writes `&mut *tx` as for sqlx's own transactions.
#[derive(Debug)]
pub(crate) struct PgTx(PgTxConn);

/// The connection of a [`PgTx`]: what its statements execute on.
#[derive(Debug)]
pub(crate) struct PgTxConn {
    tx: Transaction<'static, Postgres>,
    pooled: bool,
}

impl PgPool {
    /// Opens the pool for `url`, refusing a standby, after bringing the
    /// schema up to date.
    pub(crate) async fn connect(url: &str, config: &KitchenConfig) -> Result<Self, KitchenError> {
        let pooled = config.database_pooler == DatabasePooler::Transaction;
        let mut options = PgConnectOptions::from_str(url)?;
        if pooled {
            // No statement is kept: see the module's documentation.
            options = options.statement_cache_capacity(0);
        }
        let mut migrating = PgConnection::connect_with(&options).await?;
        migrate(&mut migrating).await?;
        migrating.close().await?;

        let wait_ms = config.wait_bound.as_millis().max(1);
        let lock_timeout = format!("{wait_ms}ms");
        let ping_after_idle = config.ping_after_idle;
        let mut pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            // Fail fast: a database that is down costs a caller this long,
            // not sqlx's default 30 s.
            .acquire_timeout(config.acquire_timeout)
            // Why ping at all: after a failover, a connection that sat idle
            // through it still has the old primary at its other end; the
            // ping finds that out and the pool opens a new one before a
            // caller's statement fails on it. Why not every time (sqlx's
            // default): that is a round trip on the caller's path per
            // statement on the pool (a create and its guard's read: two),
            // 6-14 % of PostgreSQL creates on two cores
            // (docs/performance.md), while sqlx already pings each
            // connection as it comes back (on a task of its own) and under
            // load lends it again within milliseconds. A server that died
            // in between fails the statement as it fails one already
            // running (a `503`, retried with the same key).
            .test_before_acquire(false)
            .before_acquire(move |conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= ping_after_idle {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            });
        if !pooled {
            // The wait bound, for every statement of every connection: a
            // create is one statement, and a lock wait past the bound is an
            // InProgress answer. Reads take no row locks, so it never cuts
            // them short. (Behind a pooler a session setting would land on
            // whichever server connection ran it: see `begin`.)
            pool = pool.after_connect(move |conn, _| {
                let lock_timeout = lock_timeout.clone();
                Box::pin(async move {
                    sqlx::query("SELECT set_config('lock_timeout', $1, false)")
                        .bind(lock_timeout)
                        .execute(conn)
                        .await
                        .map(drop)
                })
            });
        }
        Ok(Self {
            pool: pool.connect_with(options).await?,
            pooled_begin: pooled.then(|| format!("BEGIN; SET LOCAL lock_timeout = '{wait_ms}ms'")),
        })
    }

    /// Borrows a connection for a few statements in a row ([`PgSession`]).
    pub(crate) async fn session(&self) -> sqlx::Result<PgSession<'_>> {
        Ok(match self.pooled_begin {
            None => PgSession::Held(self.pool.acquire().await?),
            Some(_) => PgSession::Pooled(self),
        })
    }

    /// Begins a transaction whose lock waits give up after the wait bound.
    pub(crate) async fn begin(&self) -> sqlx::Result<PgTx> {
        // Directly connected, the wait bound is already every connection's
        // `lock_timeout` (set at connect), so setting it again per
        // transaction would only cost a round trip per write.
        let tx = self.begin_detached(self.pooled_begin.clone()).await?;
        Ok(PgTx(PgTxConn {
            tx,
            pooled: self.pooled_begin.is_some(),
        }))
    }

    /// Begins a transaction with `begin` (sqlx's `BEGIN` when `None`) on a
    /// task of its own, and hands it over.
    ///
    /// Why a task: sqlx queues a `ROLLBACK` for a dropped transaction only
    /// once its `BEGIN` has been answered. A caller dropped while it waits
    /// for that answer (an HTTP client that went away mid-request) would
    /// put the connection back in the pool inside the transaction, and the
    /// next statements on it would fail: "current transaction is aborted",
    /// or, after a read-only one, a create refused as a write in a
    /// read-only transaction (seen as 500s and 503s at the end of a load
    /// run). A task runs to its end whatever becomes of its caller: the
    /// transaction is handed over, or dropped and rolled back like any
    /// other.
    async fn begin_detached(
        &self,
        begin: Option<String>,
    ) -> sqlx::Result<Transaction<'static, Postgres>> {
        let pool = self.pool.clone();
        tokio::spawn(async move {
            match begin {
                Some(begin) => pool.begin_with(AssertSqlSafe(begin)).await,
                None => pool.begin().await,
            }
        })
        .await
        .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))?
    }

    /// Closes every connection; pending work finishes first.
    pub(crate) async fn close(&self) {
        self.pool.close().await;
    }
}

impl PgTx {
    /// Commits.
    pub(crate) async fn commit(self) -> sqlx::Result<()> {
        self.0.tx.commit().await
    }

    /// Rolls back.
    pub(crate) async fn rollback(self) -> sqlx::Result<()> {
        self.0.tx.rollback().await
    }
}

impl Deref for PgTx {
    type Target = PgTxConn;
    fn deref(&self) -> &PgTxConn {
        &self.0
    }
}

impl DerefMut for PgTx {
    fn deref_mut(&mut self) -> &mut PgTxConn {
        &mut self.0
    }
}

/// Brings the schema up to date in one transaction, under a transaction's
/// advisory lock; refuses a standby.
///
/// Why one transaction: a connection lost in the middle (a failover at
/// start) leaves the schema as it was, never half-applied; the next start
/// applies it all. Why a transaction's lock rather than sqlx's session lock:
/// behind a pooler, sqlx's unlock may run on another server connection and
/// leave the lock held. The lock's number is sqlx's own, so an instance of
/// an earlier release that migrates the sqlx way still waits for this one,
/// and this one for it.
async fn migrate(conn: &mut PgConnection) -> Result<(), KitchenError> {
    // Every statement here is in the transaction: behind a pooler, one
    // outside it could be split across server connections.
    let mut tx = conn.begin().await?;
    // sqlx names the statements below and its migrator's. A migration that
    // failed behind a pooler may have left such names on this server
    // connection, where they would collide with this run's. (`raw_sql`: a
    // DEALLOCATE that sqlx prepared would deallocate itself.)
    sqlx::raw_sql("DEALLOCATE ALL").execute(&mut *tx).await?;
    // A standby (a replica port, or a node demoted by a failover) would
    // answer reads and refuse every write: refuse it at start, by name.
    let (standby,): (bool,) = sqlx::query_as("SELECT pg_is_in_recovery()")
        .fetch_one(&mut *tx)
        .await?;
    if standby {
        tx.rollback().await?;
        return Err(KitchenError::ReadOnlyStandby);
    }
    let (database,): (String,) = sqlx::query_as("SELECT current_database()")
        .fetch_one(&mut *tx)
        .await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(sqlx_migration_lock_id(&database))
        .persistent(false)
        .execute(&mut *tx)
        .await?;
    apply_migrations(&mut tx).await?;
    // sqlx's migrator prepares named statements of its own. Behind a
    // pooler this server connection serves other clients next, and other
    // migrations (whose names count from the same start).
    sqlx::raw_sql("DEALLOCATE ALL").execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(())
}

/// Applies what is missing, without sqlx's session lock (`migrate` holds
/// the transaction's).
///
/// `run_direct` is what sqlx's `run` calls once it has a connection; sqlx
/// keeps it public (if hidden from its docs) because `run` itself fails the
/// `Send` check of every future that awaits it on a borrowed connection
/// ("implementation of `Acquire` is not general enough").
async fn apply_migrations(conn: &mut PgConnection) -> Result<(), MigrateError> {
    let mut migrator = sqlx::migrate!("../migrations/postgres");
    migrator.set_locking(false);
    migrator.run_direct(None, conn, false).await
}

/// The advisory lock sqlx's migrator takes for `database` (sqlx-postgres
/// 0.9, `migrate.rs`, `generate_lock_id`).
fn sqlx_migration_lock_id(database: &str) -> i64 {
    const CRC_IEEE: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    0x3d32ad9e * i64::from(CRC_IEEE.checksum(database.as_bytes()))
}

/// A statement that must not be kept on the server under a name.
struct Unnamed<E>(E);

impl<'q, E: Execute<'q, Postgres>> Execute<'q, Postgres> for Unnamed<E> {
    fn sql(self) -> SqlStr {
        self.0.sql()
    }

    fn statement(&self) -> Option<&PgStatement> {
        self.0.statement()
    }

    fn take_arguments(&mut self) -> Result<Option<PgArguments>, BoxDynError> {
        self.0.take_arguments()
    }

    fn persistent(&self) -> bool {
        false
    }
}

/// A statement on the pool: directly, as sqlx runs it; behind a pooler, in
/// a transaction of its own, unnamed.
impl<'c> Executor<'c> for &'c PgPool {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if self.pooled_begin.is_none() {
            return self.pool.fetch_many(query);
        }
        // Collected, so that the transaction ends before the caller reads:
        // the store's statements return a row or a few.
        futures::stream::once(async move {
            let mut tx = self.begin().await?;
            let steps: Vec<_> = (&mut *tx).fetch_many(query).try_collect().await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(futures::stream::iter(steps.into_iter().map(Ok)))
        })
        .try_flatten()
        .boxed()
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if self.pooled_begin.is_none() {
            return self.pool.fetch_optional(query);
        }
        Box::pin(async move {
            let mut tx = self.begin().await?;
            let row = (&mut *tx).fetch_optional(query).await?;
            tx.commit().await?;
            Ok(row)
        })
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        self.pool.prepare_with(sql, parameters)
    }

    fn describe<'e>(
        self,
        sql: SqlStr,
    ) -> BoxFuture<'e, Result<sqlx::Describe<Postgres>, sqlx::Error>>
    where
        'c: 'e,
    {
        self.pool.describe(sql)
    }
}

/// A statement of a session: as on the pool, on the session's connection.
impl<'c, 'p: 'c> Executor<'c> for &'c mut PgSession<'p> {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        match self {
            PgSession::Held(conn) => (&mut **conn).fetch_many(query),
            PgSession::Pooled(pool) => pool.fetch_many(query),
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        match self {
            PgSession::Held(conn) => (&mut **conn).fetch_optional(query),
            PgSession::Pooled(pool) => pool.fetch_optional(query),
        }
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        match self {
            PgSession::Held(conn) => (&mut **conn).prepare_with(sql, parameters),
            PgSession::Pooled(pool) => pool.prepare_with(sql, parameters),
        }
    }

    fn describe<'e>(
        self,
        sql: SqlStr,
    ) -> BoxFuture<'e, Result<sqlx::Describe<Postgres>, sqlx::Error>>
    where
        'c: 'e,
    {
        match self {
            PgSession::Held(conn) => (&mut **conn).describe(sql),
            PgSession::Pooled(pool) => pool.describe(sql),
        }
    }
}

/// A statement in a transaction: behind a pooler, unnamed.
impl<'c> Executor<'c> for &'c mut PgTxConn {
    type Database = Postgres;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<PgQueryResult, PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if self.pooled {
            (&mut *self.tx).fetch_many(Unnamed(query))
        } else {
            (&mut *self.tx).fetch_many(query)
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<PgRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Postgres>,
    {
        if self.pooled {
            (&mut *self.tx).fetch_optional(Unnamed(query))
        } else {
            (&mut *self.tx).fetch_optional(query)
        }
    }

    fn prepare_with<'e>(
        self,
        sql: SqlStr,
        parameters: &'e [PgTypeInfo],
    ) -> BoxFuture<'e, Result<PgStatement, sqlx::Error>>
    where
        'c: 'e,
    {
        (&mut *self.tx).prepare_with(sql, parameters)
    }

    fn describe<'e>(
        self,
        sql: SqlStr,
    ) -> BoxFuture<'e, Result<sqlx::Describe<Postgres>, sqlx::Error>>
    where
        'c: 'e,
    {
        (&mut *self.tx).describe(sql)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A caller that goes away at any moment of a `BEGIN` leaves no
    /// transaction behind on the pool's one connection: a write after it
    /// runs outside any transaction. (Before `begin_detached`, a caller
    /// dropped while waiting for the answer to `BEGIN READ ONLY` left the
    /// connection inside it, and the write failed.)
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_begin_whose_caller_went_away_leaves_no_transaction_behind() {
        let db = crate::testing::TestDatabase::postgres().await;
        let config = KitchenConfig {
            max_connections: 1,
            ..KitchenConfig::default()
        };
        let pool = PgPool::connect(db.url(), &config).await.expect("connect");
        for polls in 1..200 {
            let mut begin = Box::pin(pool.begin_detached(Some("BEGIN READ ONLY".to_owned())));
            for _ in 0..polls {
                if futures::poll!(begin.as_mut()).is_ready() {
                    break;
                }
                tokio::task::yield_now().await;
            }
            drop(begin);
            let wrote = sqlx::query("CREATE TEMPORARY TABLE IF NOT EXISTS t (x int)")
                .execute(&pool)
                .await;
            assert!(
                wrote.is_ok(),
                "after a begin dropped at poll {polls}: {wrote:?}"
            );
        }
    }

    /// A connection whose server went away while it sat in the pool is
    /// pinged, and replaced, before a statement meets it once it has been
    /// idle for `ping_after_idle`; before that it goes out unchecked, and
    /// the statement meets the dead connection (and fails: a `503` at the
    /// doors).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_idle_long_enough_is_pinged_before_use_and_a_busy_one_is_not() {
        let db = crate::testing::TestDatabase::postgres().await;
        let mut admin = PgConnection::connect(db.url()).await.expect("admin");
        for (ping_after_idle, pinged) in [
            (std::time::Duration::ZERO, true),
            (std::time::Duration::from_secs(3600), false),
        ] {
            let config = KitchenConfig {
                max_connections: 1,
                ping_after_idle,
                ..KitchenConfig::default()
            };
            let pool = PgPool::connect(db.url(), &config).await.expect("connect");
            let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                .fetch_one(&pool)
                .await
                .expect("the pool's one connection");
            // sqlx pings a connection as it comes back to the pool, on a
            // task of its own: once it is idle, that ping is behind it.
            tokio::time::timeout(std::time::Duration::from_secs(5), async {
                while pool.pool.num_idle() == 0 {
                    tokio::task::yield_now().await;
                }
            })
            .await
            .expect("the connection back in the pool");
            // Waits (up to 5 s) until the backend has exited.
            let gone: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1, 5000)")
                .bind(pid)
                .fetch_one(&mut admin)
                .await
                .expect("terminate");
            assert!(gone);
            let next = sqlx::query_scalar::<_, i32>("SELECT pg_backend_pid()")
                .fetch_one(&pool)
                .await;
            if pinged {
                let next = next.expect("a new connection, after the ping found the old one dead");
                assert_ne!(next, pid);
            } else {
                assert!(
                    next.is_err(),
                    "no ping: the statement met the dead connection: {next:?}"
                );
            }
            pool.close().await;
        }
    }

    /// The number must be sqlx's, or an earlier release and this one could
    /// migrate at once. sqlx's test vector: its lock id for "sqlx_test"...
    /// is not published, so this checks the formula against a value
    /// computed by hand from CRC-32 ("postgres" = 0x6a9a9f3b... see below).
    #[test]
    fn lock_id_is_sqlxs_formula() {
        let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
        assert_eq!(crc.checksum(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            sqlx_migration_lock_id("postgres"),
            0x3d32ad9e * i64::from(crc.checksum(b"postgres"))
        );
    }
}
