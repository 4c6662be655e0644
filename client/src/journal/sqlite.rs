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

/// A row as stored: id, key, request JSON, created_at.
type Row = (String, String, String, String);

/// A journal in a SQLite file.
#[derive(Debug, Clone)]
pub struct SqliteJournal {
    pool: Pool<Sqlite>,
}

impl SqliteJournal {
    /// Opens (or makes) the journal at `path`, with its table.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // FULL: `begin` must survive a power cut, or a run after it
            // would not know the key its intent was sent with.
            .synchronous(SqliteSynchronous::Full)
            // Two processes on one journal (a resume beside a run) wait for
            // each other's short writes rather than fail.
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(2)
            .connect_with(options)
            .await
            .map_err(JournalError::storage)?;
        sqlx::query(SCHEMA)
            .execute(&pool)
            .await
            .map_err(JournalError::storage)?;
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
