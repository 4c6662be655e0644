//! What a storage fault is to a caller: the kind, whether anything of the
//! request was written, and how long to wait. The doors answer these
//! (REST `503` with `Retry-After`, MCP a retryable error); which database
//! errors they are is decided in `store/fault.rs`.

use std::fmt;
use std::time::Duration;

/// Why the database cannot be used right now. None of them is the
/// caller's doing, and each passes without a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageFault {
    /// No connection could be had or kept: the server is down, starting,
    /// restarting, or killed our connection; every connection was busy for
    /// the acquire timeout; the file cannot be opened.
    Unreachable,
    /// The database answers but cannot store anything: a full disk, a
    /// read-only file system or server (a standby during a failover), an
    /// I/O error. Reads still work.
    CannotWrite,
    /// Another program holds the database file's write lock (a backup, an
    /// operator's `sqlite3` in a transaction) past the wait bound.
    Locked,
}

impl StorageFault {
    /// How long a caller should wait before retrying: the kitchen's one
    /// policy, which both doors answer with.
    pub fn retry_after(self) -> Duration {
        match self {
            // A restart or a failover takes seconds; the circuit probes
            // more often than this, so the retry finds it back.
            StorageFault::Unreachable => Duration::from_secs(2),
            // Someone must free space or remount: not a matter of a second.
            StorageFault::CannotWrite => Duration::from_secs(5),
            StorageFault::Locked => Duration::from_secs(1),
        }
    }

    /// A stable name for logs, metrics and machine-readable answers.
    pub fn as_str(self) -> &'static str {
        match self {
            StorageFault::Unreachable => "database_unreachable",
            StorageFault::CannotWrite => "database_cannot_write",
            StorageFault::Locked => "database_locked",
        }
    }

    /// What happened, as a sentence for the caller.
    pub fn sentence(self) -> &'static str {
        match self {
            StorageFault::Unreachable => "The database is not reachable right now.",
            StorageFault::CannotWrite => {
                "The database cannot store anything right now (its disk is full or read-only)."
            }
            StorageFault::Locked => {
                "The database is locked by another program (a backup or an open transaction)."
            }
        }
    }
}

impl fmt::Display for StorageFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a failed request wrote anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Provably nothing: the transaction never began, or the database
    /// answered that it rolled back. The operation key was not used.
    Nothing,
    /// Not known: the connection went away while a commit may have been
    /// on its way. A retry with the same key is safe either way.
    Unknown,
}
