//! Infrastructure failures. Anything a caller can cause or fix is an
//! [`Outcome`](crate::Outcome) instead.

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
