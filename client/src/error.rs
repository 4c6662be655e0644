//! What can go wrong with the client itself. Everything the service
//! answers is a value ([`crate::Settled`], [`crate::Read`]); these are
//! the rest, split into the caller's mistakes and the unexpected.

use crate::action::Action;
use crate::journal::JournalError;
use crate::key::OperationKey;

/// The client could not do its job.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The caller's mistake: the service URL is not an `http(s)://` URL.
    #[error("the service URL: {0}")]
    InvalidUrl(String),
    /// The caller's mistake: a setting makes no sense.
    #[error("invalid client setting: {0}")]
    InvalidConfig(String),
    /// The caller's mistake: the key already names another request of the
    /// same action in the journal. A different effect takes a new key.
    #[error(
        "the key {key} already names another {action} request in the journal; a different \
         request takes a new key"
    )]
    KeyTaken {
        /// The action.
        action: Action,
        /// The key.
        key: OperationKey,
    },
    /// Unexpected: the journal failed (nothing was sent if it failed
    /// before the first attempt).
    #[error("the journal failed: {0}")]
    Journal(#[source] JournalError),
    /// Unexpected: the HTTP client could not be set up.
    #[error("could not set up the HTTP client: {0}")]
    Setup(String),
    /// Unexpected: a request could not be encoded, or an answer that was
    /// checked against its type did not read as it.
    #[error("could not encode or read {what}: {reason}")]
    Encoding {
        /// What.
        what: &'static str,
        /// Why.
        reason: String,
    },
}

impl ClientError {
    /// Whether the caller can fix it (a URL, a setting, a key).
    pub fn is_caller_fault(&self) -> bool {
        matches!(
            self,
            ClientError::InvalidUrl(_)
                | ClientError::InvalidConfig(_)
                | ClientError::KeyTaken { .. }
        )
    }
}

impl From<JournalError> for ClientError {
    fn from(e: JournalError) -> Self {
        match e {
            JournalError::KeyTaken { action, key } => ClientError::KeyTaken { action, key },
            other => ClientError::Journal(other),
        }
    }
}
