//! The one write transaction every action runs in: begin, claim the key,
//! (the action's own statements), record the result, commit.
//!
//! Why the claim comes first and is an `INSERT … ON CONFLICT DO NOTHING`:
//! the unique key decides who performs the operation. A concurrent attempt
//! with the same key blocks on that index until the first commits
//! (PostgreSQL) or cannot start before it commits (SQLite, `BEGIN
//! IMMEDIATE`), then finds the row. Checking for the row before inserting
//! would let two attempts both see "free".
//!
//! Why one transaction: the record and the effect commit together or not at
//! all. A crash between two transactions would leave an effect without a
//! record (the retry repeats it) or a record without an effect (the retry
//! replays something that never happened).

use std::time::Duration;

use sqlx::{Sqlite, Transaction};
use uuid::Uuid;

use crate::domain::operation::{OperationRecord, ResultSnapshot};
use crate::domain::ticket::TicketId;

use super::operations::{CLAIM, bind_claim};
use super::postgres::PgTx;
use super::shared_text::{self, Stored};
use super::{Db, WriteTransaction};

/// An open write transaction on either database. Store functions that take
/// part in a write take `&mut WriteTx`.
pub(crate) enum WriteTx {
    Sqlite(Transaction<'static, Sqlite>),
    Postgres(PgTx),
}

/// Runs `$body` with `$conn` bound to the transaction's connection,
/// whichever database it is on.
macro_rules! on_tx {
    ($tx:expr, $conn:ident => $body:expr) => {
        match $tx {
            $crate::store::write::WriteTx::Sqlite(t) => {
                let $conn = &mut **t;
                $body
            }
            $crate::store::write::WriteTx::Postgres(t) => {
                let $conn = &mut **t;
                $body
            }
        }
    };
}
pub(crate) use on_tx;

/// Records the operation's result on the claimed row.
pub(crate) const FINISH: &str = "UPDATE operations SET ticket_id = $4, result_snapshot = $5, \
     resource_id = $6 \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3";

/// Begins a write transaction whose lock waits give up after `wait`.
pub(crate) async fn begin(db: &Db, wait: Duration) -> sqlx::Result<WriteTx> {
    Ok(match db {
        Db::Sqlite(pool) => WriteTx::Sqlite(WriteTransaction::begin_write(pool, wait).await?),
        Db::Postgres(pool) => WriteTx::Postgres(WriteTransaction::begin_write(pool, wait).await?),
    })
}

/// Claims `record`'s (tenant, action, key). `true` when this transaction
/// now owns the key; `false` when another attempt recorded it first (it has
/// committed by the time this returns). A result the record already
/// carries is stored around `shared`, the description of the ticket the
/// same transaction makes, if any (`shared_text.rs`).
pub(crate) async fn claim(
    tx: &mut WriteTx,
    record: &OperationRecord,
    shared: Option<&str>,
) -> sqlx::Result<bool> {
    let result = stored_result(record, shared);
    let inserted = on_tx!(tx, conn => bind_claim!(sqlx::query(CLAIM), record, result)
        .execute(conn)
        .await?
        .rows_affected());
    Ok(inserted == 1)
}

/// `record`'s result as its claim stores it.
pub(crate) fn stored_result<'a>(
    record: &'a OperationRecord,
    shared: Option<&str>,
) -> Option<Stored<'a>> {
    record
        .result
        .as_ref()
        .map(|r| shared_text::split(r.as_str(), shared_text::IN_SNAPSHOT, shared))
}

/// Records the result on the row [`claim`] inserted.
pub(crate) async fn finish(
    tx: &mut WriteTx,
    record: &OperationRecord,
    ticket: Option<TicketId>,
    resource: Uuid,
    snapshot: &ResultSnapshot,
) -> sqlx::Result<()> {
    on_tx!(tx, conn => sqlx::query(FINISH)
        .bind(record.tenant_id.as_uuid())
        .bind(record.action.as_str())
        .bind(record.key.as_str())
        .bind(ticket.map(|t| t.as_uuid()))
        .bind(snapshot.as_str())
        .bind(resource)
        .execute(conn)
        .await
        .map(drop)?);
    Ok(())
}

/// Commits.
pub(crate) async fn commit(tx: WriteTx) -> sqlx::Result<()> {
    match tx {
        WriteTx::Sqlite(t) => t.commit().await,
        WriteTx::Postgres(t) => t.commit().await,
    }
}

/// Rolls back: nothing of this attempt remains, and the key is free again.
pub(crate) async fn rollback(tx: WriteTx) -> sqlx::Result<()> {
    match tx {
        WriteTx::Sqlite(t) => t.rollback().await,
        WriteTx::Postgres(t) => t.rollback().await,
    }
}
