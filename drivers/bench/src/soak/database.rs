//! The soak's own database: a SQLite file in a temp directory, or a fresh
//! PostgreSQL database made for the run and dropped after it, so that the
//! count at the end sees only what the soak made.

use anyhow::Context;
use sqlx::{Connection, PgConnection};

/// Which database the server under soak runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DatabaseKind {
    /// The embedded default: a SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

impl DatabaseKind {
    /// `sqlite` or `postgres`, as in the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            DatabaseKind::Sqlite => "sqlite",
            DatabaseKind::Postgres => "postgres",
        }
    }
}

/// A database made for one soak run. Call [`SoakDatabase::remove`] when
/// done, on success and on failure alike.
#[derive(Debug)]
pub(crate) struct SoakDatabase {
    url: String,
    // Holds the SQLite file; removed with the directory when dropped.
    _dir: Option<tempfile::TempDir>,
    // (server URL, database name) of the PostgreSQL database to drop.
    postgres: Option<(String, String)>,
}

impl SoakDatabase {
    /// A new, empty database of `kind`; PostgreSQL ones are made on the
    /// server at `postgres_url`.
    pub(crate) async fn create(kind: DatabaseKind, postgres_url: &str) -> anyhow::Result<Self> {
        match kind {
            DatabaseKind::Sqlite => {
                let dir = tempfile::Builder::new().prefix("soak").tempdir()?;
                Ok(Self {
                    url: format!("sqlite:{}", dir.path().join("tickets.db").display()),
                    _dir: Some(dir),
                    postgres: None,
                })
            }
            DatabaseKind::Postgres => {
                // Not from the run's seed: a replay must not meet the
                // database of the run it replays if that one was left behind.
                let name = format!("soak_{:016x}", rand::random::<u64>());
                let mut admin = PgConnection::connect(postgres_url)
                    .await
                    .with_context(|| format!("connect to PostgreSQL at {postgres_url}"))?;
                // The name is ours (hex only), so building the statement is safe.
                sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                    .execute(&mut admin)
                    .await
                    .with_context(|| format!("create the database {name}"))?;
                let _ = admin.close().await;
                Ok(Self {
                    url: kitchen::testing::with_database(postgres_url, &name),
                    _dir: None,
                    postgres: Some((postgres_url.to_owned(), name)),
                })
            }
        }
    }

    /// The URL the server and the count connect to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// Drops the PostgreSQL database (even with connections still open) or
    /// deletes the SQLite file's directory.
    pub(crate) async fn remove(self) -> anyhow::Result<()> {
        let Some((server, name)) = &self.postgres else {
            return Ok(());
        };
        let mut admin = PgConnection::connect(server).await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"
        )))
        .execute(&mut admin)
        .await
        .with_context(|| format!("drop the database {name}"))?;
        let _ = admin.close().await;
        Ok(())
    }
}
