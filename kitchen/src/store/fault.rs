//! The storage-fault taxonomy: which database errors mean "the database
//! cannot be used right now" (a caller should retry later, and no request
//! of theirs is wrong), as opposed to a bug.
//!
//! Why here, once: both doors answer these faults (REST `503`, MCP a
//! retryable error) and must agree on which errors they are. Everything not
//! listed is unexpected and stays a logged `500`.

use crate::domain::fault::StorageFault;

/// PostgreSQL SQLSTATEs that mean the server is going away, not answering,
/// or cannot take writes: class 08 (connection exception) is matched by
/// prefix.
const PG_UNREACHABLE: &[&str] = &[
    "57P01", // admin_shutdown: our backend was terminated
    "57P02", // crash_shutdown
    "57P03", // cannot_connect_now: starting up or shutting down
    "53300", // too_many_connections
];
const PG_CANNOT_WRITE: &[&str] = &[
    "53100", // disk_full
    "25006", // read_only_sql_transaction: a standby, e.g. during a failover
];

/// SQLite primary result codes (the low byte of an extended code).
const SQLITE_BUSY: i32 = 5;
const SQLITE_LOCKED: i32 = 6;
const SQLITE_READONLY: i32 = 8;
const SQLITE_IOERR: i32 = 10;
const SQLITE_FULL: i32 = 13;
const SQLITE_CANTOPEN: i32 = 14;

/// Which storage fault `err` is, if it is one.
pub(crate) fn classify(err: &sqlx::Error) -> Option<StorageFault> {
    match err {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => Some(StorageFault::Unreachable),
        sqlx::Error::Database(db_err) => {
            if let Some(code) = sqlite_code(err) {
                return match code {
                    SQLITE_BUSY | SQLITE_LOCKED => Some(StorageFault::Locked),
                    SQLITE_FULL | SQLITE_READONLY | SQLITE_IOERR => Some(StorageFault::CannotWrite),
                    SQLITE_CANTOPEN => Some(StorageFault::Unreachable),
                    _ => None,
                };
            }
            let state = db_err.code()?;
            if state.starts_with("08") || PG_UNREACHABLE.contains(&state.as_ref()) {
                Some(StorageFault::Unreachable)
            } else if PG_CANNOT_WRITE.contains(&state.as_ref()) {
                Some(StorageFault::CannotWrite)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Whether `err` leaves it unknown if a statement that could commit did:
/// the connection went away without an answer. A database's own error
/// answer means the statement (and, in a transaction, everything before
/// it) did not commit.
pub(crate) fn lost_answer(err: &sqlx::Error) -> bool {
    matches!(
        err,
        sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::WorkerCrashed
    )
}

/// SQLite's primary result code for `err`, when SQLite raised it.
pub(crate) fn sqlite_code(err: &sqlx::Error) -> Option<i32> {
    let db_err = err.as_database_error()?;
    db_err.try_downcast_ref::<sqlx::sqlite::SqliteError>()?;
    // SQLite reports extended codes; the primary code is the low byte.
    db_err
        .code()
        .and_then(|c| c.parse::<i32>().ok())
        .map(|c| c & 0xff)
}

/// Whether an error at a commit (a `COMMIT`, or a statement that commits on
/// its own) may have left the write durable: the connection went away
/// without the database's answer, or SQLite's I/O failed, which can strike
/// after its commit record was written.
pub(crate) fn commit_may_have_landed(err: &sqlx::Error) -> bool {
    sqlite_code(err) == Some(SQLITE_IOERR) || lost_answer(err)
}
