//! The journal on a SQLite file: an intent written down before its first
//! attempt is still there after a crash, so the next run (`resume`) sends
//! it with the same key.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Pool, Sqlite};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use super::{
    Begun, EntryId, Journal, JournalEntry, JournalError, JournalFuture, SettledOutcome, Settlement,
    take_over,
};
use crate::intent::Intent;
use crate::key::OperationKey;
use crate::requests::WriteRequest;

/// The schema, made at open. One row per intent; (action, key) is the
/// service's own scope for a key, so it is unique here too.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS journal_entries (
    entry_id      TEXT PRIMARY KEY NOT NULL,
    action        TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    request       TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    settled_at    TEXT,
    outcome       TEXT,
    summary       TEXT,
    UNIQUE (action, operation_key)
) STRICT";

/// How long an open, or a write, waits for another process's lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether `e` is SQLite's "database is locked" (`SQLITE_BUSY`, any of its
/// extended codes).
fn is_locked(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) => db
            .code()
            .and_then(|code| code.parse::<i32>().ok())
            .is_some_and(|code| code & 0xff == 5),
        _ => false,
    }
}

/// A row as stored: id, key, request JSON, created_at.
type Row = (String, String, String, String);

/// A journal in a SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteJournal {
    pool: Pool<Sqlite>,
}

impl SqliteJournal {
    /// Opens (or makes) the journal at `path`, with its table.
    ///
    /// Several processes may open one new journal at the same moment (a
    /// run, and a resume or a reader beside it). Making the new file WAL
    /// and creating its table can then fail at once with "database is
    /// locked": SQLite does not always wait out its busy timeout there. The
    /// loser opens again, within the same 5 s bound, and finds the file
    /// made.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let deadline = tokio::time::Instant::now() + BUSY_TIMEOUT;
        let mut pause = Duration::from_millis(5);
        loop {
            match Self::try_open(path.as_ref()).await {
                Err(e) if is_locked(&e) && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                opened => return opened.map_err(JournalError::storage),
            }
        }
    }

    async fn try_open(path: &Path) -> Result<Self, sqlx::Error> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: `begin` must survive a power cut, or a run after it
            // would not know the key its intent was sent with.
            .synchronous(SqliteSynchronous::Full)
            // Two processes on one journal (a resume beside a run) wait for
            // each other's short writes rather than fail.
            .busy_timeout(BUSY_TIMEOUT);
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await?;
        sqlx::query(SCHEMA).execute(&pool).await?;
        Ok(Self { pool })
    }

    async fn begin_intent(&self, intent: &Intent) -> Result<Begun, JournalError> {
        let entry = JournalEntry::new(EntryId::new(), intent, OffsetDateTime::now_utc());
        let request = serde_json::to_string(intent.request()).map_err(JournalError::storage)?;
        let created_at = entry
            .created_at()
            .format(&Rfc3339)
            .map_err(JournalError::storage)?;
        let inserted = sqlx::query(
            "INSERT INTO journal_entries (entry_id, action, operation_key, request, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (action, operation_key) DO NOTHING",
        )
        .bind(entry.id().to_string())
        .bind(intent.action().as_str())
        .bind(intent.key().as_str())
        .bind(&request)
        .bind(&created_at)
        .execute(&self.pool)
        .await
        .map_err(JournalError::storage)?
        .rows_affected();
        if inserted == 1 {
            return Ok(Begun::New(entry));
        }
        // The scope is taken: by this same intent (a caller that kept its
        // key, or a rerun), or by another request.
        let (id, key, stored, at, outcome): (String, String, String, String, Option<String>) =
            sqlx::query_as(
                "SELECT entry_id, operation_key, request, created_at, outcome
                 FROM journal_entries WHERE action = ?1 AND operation_key = ?2",
            )
            .bind(intent.action().as_str())
            .bind(intent.key().as_str())
            .fetch_one(&self.pool)
            .await
            .map_err(JournalError::storage)?;
        let existing = read_row((id, key, stored, at))?;
        if !existing.is_for(intent) {
            let settled = outcome.as_deref().and_then(SettledOutcome::parse);
            take_over(intent, settled)?;
            // The key was left unused: the corrected request takes the
            // entry over, as a new intent (nothing was sent for it).
            sqlx::query(
                "UPDATE journal_entries SET entry_id = ?2, request = ?3, created_at = ?4,
                 settled_at = NULL, outcome = NULL, summary = NULL WHERE entry_id = ?1",
            )
            .bind(existing.id().to_string())
            .bind(entry.id().to_string())
            .bind(&request)
            .bind(&created_at)
            .execute(&self.pool)
            .await
            .map_err(JournalError::storage)?;
            return Ok(Begun::New(entry));
        }
        sqlx::query(
            "UPDATE journal_entries SET settled_at = NULL, outcome = NULL, summary = NULL
             WHERE entry_id = ?1",
        )
        .bind(existing.id().to_string())
        .execute(&self.pool)
        .await
        .map_err(JournalError::storage)?;
        Ok(Begun::Existing(existing))
    }

    async fn settle_entry(
        &self,
        entry: EntryId,
        settlement: &Settlement,
    ) -> Result<(), JournalError> {
        let now = OffsetDateTime::now_utc()
            .format(&Rfc3339)
            .map_err(JournalError::storage)?;
        sqlx::query(
            "UPDATE journal_entries SET settled_at = ?2, outcome = ?3, summary = ?4
             WHERE entry_id = ?1",
        )
        .bind(entry.to_string())
        .bind(now)
        .bind(settlement.outcome.as_str())
        .bind(&settlement.summary)
        .execute(&self.pool)
        .await
        .map_err(JournalError::storage)?;
        Ok(())
    }

    async fn pending_entries(&self) -> Result<Vec<JournalEntry>, JournalError> {
        // Ids are UUID v7: their order is the order entries were made.
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT entry_id, operation_key, request, created_at FROM journal_entries
             WHERE settled_at IS NULL ORDER BY entry_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(JournalError::storage)?;
        rows.into_iter().map(read_row).collect()
    }

    async fn all_entries(&self) -> Result<Vec<JournalEntry>, JournalError> {
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT entry_id, operation_key, request, created_at FROM journal_entries
             ORDER BY entry_id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(JournalError::storage)?;
        rows.into_iter().map(read_row).collect()
    }
}

/// An entry read back; anything that does not read is named.
fn read_row((id, key, request, created_at): Row) -> Result<JournalEntry, JournalError> {
    let corrupt = |reason: String| JournalError::Corrupt {
        entry: id.clone(),
        reason,
    };
    let entry_id = Uuid::from_str(&id).map_err(|e| corrupt(format!("its id: {e}")))?;
    let key = OperationKey::parse(key).map_err(|e| corrupt(format!("its key: {e}")))?;
    let request: WriteRequest =
        serde_json::from_str(&request).map_err(|e| corrupt(format!("its request: {e}")))?;
    let created_at = OffsetDateTime::parse(&created_at, &Rfc3339)
        .map_err(|e| corrupt(format!("its time: {e}")))?;
    Ok(JournalEntry::new(
        EntryId::from(entry_id),
        &Intent::with_key(key, request),
        created_at,
    ))
}

impl Journal for SqliteJournal {
    fn begin<'a>(&'a self, intent: &'a Intent) -> JournalFuture<'a, Begun> {
        Box::pin(self.begin_intent(intent))
    }

    fn settle<'a>(&'a self, entry: EntryId, settlement: &'a Settlement) -> JournalFuture<'a, ()> {
        Box::pin(self.settle_entry(entry, settlement))
    }

    fn pending(&self) -> JournalFuture<'_, Vec<JournalEntry>> {
        Box::pin(self.pending_entries())
    }

    fn entries(&self) -> JournalFuture<'_, Vec<JournalEntry>> {
        Box::pin(self.all_entries())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run and a resume (or a reader) opening one new journal at the
    /// same moment: every one of them opens it; none is told the database
    /// is locked.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn openers_racing_on_a_new_journal_all_open_it() {
        for round in 0..20 {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let path = dir.path().join("journal.db");
            let opens: Vec<_> = (0..6)
                .map(|_| {
                    let path = path.clone();
                    tokio::spawn(async move { SqliteJournal::open(&path).await.map(drop) })
                })
                .collect();
            for open in opens {
                let opened = open.await.expect("the task ran");
                assert!(opened.is_ok(), "round {round}: {opened:?}");
            }
        }
    }
}
