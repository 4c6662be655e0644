//! Fresh databases for tests (feature `test-support`).
//!
//! Every kitchen test runs on both SQLite (a file in a temp directory, never
//! `:memory:`, so WAL and locking behave as in production) and PostgreSQL (a
//! fresh database per test, dropped afterwards). PostgreSQL tests never skip:
//! without a server they fail and say how to run without them.

use std::time::Duration;

use sqlx::{Connection, PgConnection, Sqlite, Transaction};
use time::OffsetDateTime;

use crate::store::{Db, WriteTransaction};
use crate::{
    Action, DatabasePooler, IssuedToken, Kitchen, KitchenConfig, OperationKey, Tenant, TenantId,
    TenantName,
};

mod group_commit;
pub(crate) mod precheck;
pub use group_commit::WriterHold;
pub use precheck::{PrecheckPause, pause_before_precheck};

/// Where the PostgreSQL tests connect to create their databases.
pub const POSTGRES_URL_VAR: &str = "TEST_POSTGRES_URL";
const DEFAULT_POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// When set: a pooler in transaction mode (pgbouncer) in front of the
/// server in `TEST_POSTGRES_URL`. The kitchens of the PostgreSQL tests then
/// connect through it, with [`DatabasePooler::Transaction`]; what a test
/// does to its database by hand (seeding an old schema, say) still goes
/// straight to the server. `tests/ha/pgbouncer.py` runs the kitchen's
/// tests this way.
pub const POSTGRES_POOLER_URL_VAR: &str = "TEST_POSTGRES_POOLER_URL";

/// The two databases every kitchen test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatabaseKind {
    /// A SQLite file in a temp directory.
    Sqlite,
    /// A fresh database on the PostgreSQL server in `TEST_POSTGRES_URL`.
    Postgres,
}

/// A fresh, empty database that is removed when dropped.
#[derive(Debug)]
pub struct TestDatabase {
    backend: DatabaseKind,
    url: String,
    // Keeps the SQLite file alive; removed with the directory on drop.
    _dir: Option<tempfile::TempDir>,
    // (server URL, database name) of a PostgreSQL database to drop.
    postgres: Option<(String, String)>,
    // Where kitchens connect, and how, when not straight to `url`.
    kitchen_route: Option<(String, DatabasePooler)>,
}

impl TestDatabase {
    /// A fresh database on `backend`.
    pub async fn new(backend: DatabaseKind) -> Self {
        match backend {
            DatabaseKind::Sqlite => Self::sqlite(),
            DatabaseKind::Postgres => Self::postgres().await,
        }
    }

    /// A SQLite file in a new temp directory.
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("create a temp directory for the test database");
        let url = format!("sqlite:{}", dir.path().join("tickets.db").display());
        Self {
            backend: DatabaseKind::Sqlite,
            url,
            _dir: Some(dir),
            postgres: None,
            kitchen_route: None,
        }
    }

    /// A new database on the PostgreSQL server named by `TEST_POSTGRES_URL`
    /// (default `postgres://postgres@127.0.0.1:5432/postgres`).
    ///
    /// # Panics
    /// When the server cannot be reached, with a message that says how to
    /// run the tests without PostgreSQL.
    pub async fn postgres() -> Self {
        let server =
            std::env::var(POSTGRES_URL_VAR).unwrap_or_else(|_| DEFAULT_POSTGRES_URL.into());
        let mut admin = match PgConnection::connect(&server).await {
            Ok(conn) => conn,
            Err(e) => panic!(
                "PostgreSQL tests need a server at {server} ({e}). Start one, or set \
                 {POSTGRES_URL_VAR} to a server where this user may create databases. \
                 To run only the SQLite tests: cargo nextest run --workspace -E 'not test(/postgres/)'"
            ),
        };
        let name = format!("kitchen_test_{}", uuid::Uuid::now_v7().simple());
        // The name is ours (hex only), so building the statement is safe.
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
            .execute(&mut admin)
            .await
            .expect("create a fresh test database");
        let _ = admin.close().await;
        let url = with_database(&server, &name);
        let kitchen_route = std::env::var(POSTGRES_POOLER_URL_VAR)
            .ok()
            .map(|pooler| (with_database(&pooler, &name), DatabasePooler::Transaction));
        Self {
            backend: DatabaseKind::Postgres,
            url,
            _dir: None,
            postgres: Some((server, name)),
            kitchen_route,
        }
    }

    /// A new PostgreSQL database whose kitchens run their statements as
    /// behind a transaction-mode pooler (unnamed, each in a transaction),
    /// though they connect straight to the server.
    pub async fn postgres_as_if_pooled() -> Self {
        let mut db = Self::postgres().await;
        if db.kitchen_route.is_none() {
            db.kitchen_route = Some((db.url.clone(), DatabasePooler::Transaction));
        }
        db
    }

    /// Which database this is.
    pub fn backend(&self) -> DatabaseKind {
        self.backend
    }

    /// The URL to connect to it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kitchen on this database with default settings.
    pub async fn kitchen(&self) -> Kitchen {
        self.kitchen_with(KitchenConfig::default()).await
    }

    /// A kitchen on this database with `config` (on PostgreSQL, through
    /// the pooler in `TEST_POSTGRES_POOLER_URL` when that is set).
    pub async fn kitchen_with(&self, config: KitchenConfig) -> Kitchen {
        let (url, config) = match &self.kitchen_route {
            Some((url, pooler)) => (
                url.clone(),
                KitchenConfig {
                    database_pooler: *pooler,
                    ..config
                },
            ),
            None => (self.url.clone(), config),
        };
        Kitchen::connect(&url, config)
            .await
            .expect("connect a kitchen to the test database")
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let Some((server, name)) = self.postgres.take() else {
            return;
        };
        // Drop runs inside the test's runtime, which cannot block on async
        // work; a short-lived thread with its own runtime can.
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                let mut admin = PgConnection::connect(&server)
                    .await
                    .map_err(std::io::Error::other)?;
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
                )))
                .execute(&mut admin)
                .await
                .map_err(std::io::Error::other)?;
                Ok::<_, std::io::Error>(())
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("warning: could not drop a PostgreSQL test database: {dropped:?}");
        }
    }
}

/// `server` (a PostgreSQL URL) with its database name replaced by `name`,
/// keeping its query parameters.
pub fn with_database(server: &str, name: &str) -> String {
    let (base, query) = server.split_once('?').unwrap_or((server, ""));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[scheme_end..].find('/') {
        Some(slash) => &base[..scheme_end + slash],
        None => base,
    };
    if query.is_empty() {
        format!("{base}/{name}")
    } else {
        format!("{base}/{name}?{query}")
    }
}

/// Makes a tenant named `name` with one API token.
pub async fn tenant_with_token(kitchen: &Kitchen, name: &str) -> (Tenant, IssuedToken) {
    let name = TenantName::parse(name).expect("test tenant name is a slug");
    let tenant = kitchen
        .create_tenant(name)
        .await
        .expect("database reachable")
        .expect("test tenant name is unused");
    let token = kitchen.issue_token(tenant.id).await.expect("issue a token");
    (tenant, token)
}

/// Holds an operation key the way a slow concurrent attempt would: an open
/// write transaction that has claimed the key and not committed.
pub struct KeyHolder {
    tx: HeldTransaction,
}

impl KeyHolder {
    /// Rolls the claim back, as a crashed or failed attempt would: the key
    /// is free again and nothing of the attempt remains.
    pub async fn roll_back(self) {
        let rolled_back = match self.tx {
            HeldTransaction::Sqlite(tx) => tx.rollback().await,
            HeldTransaction::Postgres(tx) => tx.rollback().await,
        };
        rolled_back.expect("roll the holder's transaction back");
    }
}

enum HeldTransaction {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(crate::store::postgres::PgTx),
}

impl Kitchen {
    /// Claims `key` of `create_ticket` for `tenant` in a transaction that
    /// stays open until the returned holder is dropped (test support).
    pub async fn hold_key_for_test(&self, tenant: TenantId, key: &OperationKey) -> KeyHolder {
        self.hold_action_key_for_test(tenant, Action::CreateTicket, key)
            .await
    }

    /// Claims `key` of `action` for `tenant` in a transaction that stays
    /// open until the returned holder is dropped (test support).
    pub async fn hold_action_key_for_test(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
    ) -> KeyHolder {
        const CLAIM_ONLY: &str = "INSERT INTO operations (tenant_id, action, operation_key, \
             fingerprint_version, fingerprint, state, created_at, replayable_until, retained_until) \
             VALUES ($1, $4, $2, 1, 'held-by-test', 'succeeded', $3, $5, $5)";
        let now = OffsetDateTime::now_utc();
        let wait = Duration::from_secs(30);
        macro_rules! hold {
            ($pool:expr, $variant:ident) => {{
                let mut tx = WriteTransaction::begin_write($pool, wait)
                    .await
                    .expect("begin the holder's transaction");
                sqlx::query(CLAIM_ONLY)
                    .bind(tenant.as_uuid())
                    .bind(key.as_str())
                    .bind(now)
                    .bind(action.as_str())
                    .bind(now + time::Duration::days(400))
                    .execute(&mut *tx)
                    .await
                    .expect("claim the key");
                HeldTransaction::$variant(tx)
            }};
        }
        let tx = match &self.db {
            Db::Sqlite(pool) => hold!(pool, Sqlite),
            Db::Postgres(pool) => hold!(pool, Postgres),
        };
        KeyHolder { tx }
    }
}

impl Kitchen {
    /// Does what a remote create does up to its dispatch, and stops: the
    /// write-ahead record is committed, nothing is sent. That is what a
    /// crash between the two leaves behind (test support).
    ///
    /// # Panics
    /// On the local backend, or when the draft is invalid.
    pub async fn write_ahead_only_for_test(
        &self,
        tenant: TenantId,
        key: &OperationKey,
        draft: &crate::TicketDraft,
    ) {
        let crate::backend::Backend::Remote(remote) = &self.backend else {
            panic!("a kitchen with the remote backend");
        };
        let command = draft.validate().expect("a valid draft");
        let _ = remote
            .write_ahead_then::<crate::actions::CreateTicket>(
                tenant.into(),
                key,
                draft,
                command,
                None,
                false,
            )
            .await
            .expect("write the record ahead");
    }
}

/// Defines, for each named `async fn(TestDatabase)` in scope, one test on
/// SQLite and one on PostgreSQL: `sqlite::NAME` and `postgres::NAME`.
#[macro_export]
macro_rules! on_both_databases {
    ($($test:ident),+ $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test($crate::testing::TestDatabase::sqlite()).await
                }
            )+
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    super::$test($crate::testing::TestDatabase::postgres().await).await
                }
            )+
        }
    };
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn replaces_the_database_name() {
        assert_eq!(
            with_database("postgres://u@h:5432/postgres", "x"),
            "postgres://u@h:5432/x"
        );
        assert_eq!(with_database("postgres://u@h", "x"), "postgres://u@h/x");
        assert_eq!(
            with_database("postgres://u@h/db?sslmode=disable", "x"),
            "postgres://u@h/x?sslmode=disable"
        );
    }
}
