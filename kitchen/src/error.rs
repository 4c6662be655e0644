//! Infrastructure failures. Anything a caller can cause or fix is an
//! [`Outcome`](crate::Outcome) instead. Among them, a storage fault (the
//! database cannot be used right now) is told apart from the unexpected by
//! [`KitchenError::storage_fault`], for the doors to answer it as
//! retryable.

use crate::domain::fault::{StorageFault, Written};

/// Something went wrong that is not the caller's doing.
#[derive(Debug, thiserror::Error)]
pub enum KitchenError {
    /// The database URL names neither SQLite nor PostgreSQL.
    #[error(
        "unsupported database URL scheme {scheme:?}: use sqlite:PATH (for example \
         sqlite:data/tickets.db) or postgres://USER@HOST/DB"
    )]
    UnsupportedDatabaseUrl {
        /// What the URL started with.
        scheme: String,
    },
    /// The database could not be reached or refused a statement.
    #[error("database error")]
    Database(#[from] sqlx::Error),
    /// The database cannot be used right now, and the kitchen knows what
    /// that means for the request: whether anything was written.
    #[error("the database is unavailable ({fault}): {cause}")]
    Unavailable {
        /// Which fault.
        fault: StorageFault,
        /// Whether anything of the request was written.
        written: Written,
        /// The database's words, for the log.
        cause: String,
    },
    /// The PostgreSQL server named is a read-only standby (a replica):
    /// every write would be refused.
    #[error(
        "the database is a read-only standby (pg_is_in_recovery() is true): point DATABASE_URL \
         at the primary, e.g. the HAProxy port that checks Patroni's /primary"
    )]
    ReadOnlyStandby,
    /// The schema could not be brought up to date.
    #[error("could not apply database migrations")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// The task running a create ended without an answer (the runtime is
    /// shutting down, or the task panicked). Whether the create committed is
    /// unknown: the operation record tells.
    #[error("the create was interrupted before it answered: {0}")]
    Interrupted(String),
    /// A stored row does not hold what the kitchen wrote: a bug or a
    /// hand-edited database.
    #[error("stored record is unreadable: {0}")]
    CorruptRecord(String),
}

impl KitchenError {
    /// The storage fault this is, and whether anything was written; `None`
    /// for the unexpected (a bug, a corrupt record), which stays a `500`.
    pub fn storage_fault(&self) -> Option<(StorageFault, Written)> {
        match self {
            KitchenError::Unavailable { fault, written, .. } => Some((*fault, *written)),
            KitchenError::Database(e) => {
                crate::store::fault::classify(e).map(|fault| (fault, Written::Unknown))
            }
            KitchenError::UnsupportedDatabaseUrl { .. }
            | KitchenError::ReadOnlyStandby
            | KitchenError::Migration(_)
            | KitchenError::Interrupted(_)
            | KitchenError::CorruptRecord(_) => None,
        }
    }

    /// Whether opening the database failed in a way that may pass soon: it
    /// could not be reached or could not write (a server starting, a
    /// failover under way), or it is a standby (HAProxy can reach a node
    /// for a moment while it is demoted or promoted), including in the
    /// middle of migrating. A wrong URL, a refused login or a schema this
    /// release does not know will not pass by waiting.
    pub fn may_open_later(&self) -> bool {
        match self {
            KitchenError::ReadOnlyStandby => true,
            KitchenError::Database(e)
            | KitchenError::Migration(sqlx::migrate::MigrateError::Execute(e))
            | KitchenError::Migration(sqlx::migrate::MigrateError::ExecuteMigration(e, _)) => {
                crate::store::fault::classify(e).is_some()
            }
            KitchenError::Unavailable { .. } => true,
            KitchenError::UnsupportedDatabaseUrl { .. }
            | KitchenError::Migration(_)
            | KitchenError::Interrupted(_)
            | KitchenError::CorruptRecord(_) => false,
        }
    }

    /// `self` as a storage fault the kitchen knows wrote nothing (it failed
    /// before a commit, or the database answered that it rolled back); any
    /// other error unchanged.
    pub(crate) fn nothing_written(self) -> Self {
        match self {
            KitchenError::Database(err) => match crate::store::fault::classify(&err) {
                Some(fault) => KitchenError::Unavailable {
                    fault,
                    written: Written::Nothing,
                    cause: err.to_string(),
                },
                None => KitchenError::Database(err),
            },
            other => other,
        }
    }
}

/// `error: cause: cause…` on one line: how every log and every door writes
/// an error with its causes. A cause the message before it already ends
/// with (an I/O error wrapped by one that prints it) is said once.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = error.to_string();
    let mut last = chain.clone();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !last.ends_with(&said) {
            chain.push_str(": ");
            chain.push_str(&said);
            last = said;
        }
        source = cause.source();
    }
    chain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl std::fmt::Display for Layer {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Layer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|l| l as _)
        }
    }

    #[test]
    fn a_chain_is_one_line_and_says_a_repeated_cause_once() {
        let io = Layer("File exists", None);
        let wrapped = Layer("error communicating: File exists", Some(Box::new(io)));
        let top = Layer(
            "cannot open the database",
            Some(Box::new(Layer("database error", Some(Box::new(wrapped))))),
        );
        assert_eq!(
            error_chain(&top),
            "cannot open the database: database error: error communicating: File exists"
        );
    }

    fn connection_lost() -> sqlx::Error {
        sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
    }

    #[test]
    fn what_may_pass_by_waiting_and_what_will_not() {
        let passes = [
            KitchenError::ReadOnlyStandby,
            KitchenError::Database(connection_lost()),
            KitchenError::Database(sqlx::Error::PoolTimedOut),
            KitchenError::Migration(sqlx::migrate::MigrateError::Execute(connection_lost())),
            KitchenError::Migration(sqlx::migrate::MigrateError::ExecuteMigration(
                connection_lost(),
                9,
            )),
        ];
        for error in &passes {
            assert!(error.may_open_later(), "{error:?}");
        }
        let stays = [
            KitchenError::UnsupportedDatabaseUrl {
                scheme: "mysql".into(),
            },
            KitchenError::Migration(sqlx::migrate::MigrateError::VersionMismatch(3)),
            KitchenError::Database(sqlx::Error::RowNotFound),
            KitchenError::Migration(sqlx::migrate::MigrateError::Execute(
                sqlx::Error::RowNotFound,
            )),
        ];
        for error in &stays {
            assert!(!error.may_open_later(), "{error:?}");
        }
    }
}
