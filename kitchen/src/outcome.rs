//! What a create answers. Every expected result is a value here; only
//! infrastructure failures are [`KitchenError`](crate::KitchenError)s.

use std::time::Duration;

use crate::domain::operation::{OperationRecord, OperationRef, ResultSnapshot};
use crate::domain::ticket::Ticket;
use crate::domain::violation::FieldViolation;

/// The outcome of one create attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The key was new: the ticket and its operation record were committed
    /// together by this attempt.
    Created(Receipt),
    /// The key was already used with the same request: this is the original
    /// result, byte for byte. Nothing new was written.
    Replayed(Receipt),
    /// The key was already used with a different request. Nothing was
    /// written. Carries a reference to the original operation, never its
    /// payload: use a new key for a new ticket, or look the original up.
    Conflict {
        /// The operation that owns the key.
        original: OperationRef,
    },
    /// The request is not valid. Nothing was attempted or recorded; the key
    /// is not consumed and may be used again with corrected input.
    Invalid {
        /// Every problem, by field.
        violations: Vec<FieldViolation>,
    },
    /// Another attempt with this key held it past the wait bound. Nothing was
    /// written by this attempt; retry later with the same key.
    InProgress {
        /// A reasonable time to wait before retrying.
        retry_after: Duration,
    },
    /// (Remote backend.) The provider provably made nothing: it refused the
    /// ticket or could not be reached. The key is not spent: retry with the
    /// same key (and, after a refusal, corrected input).
    NotCreated {
        /// The operation, whose status resource tells the same.
        operation: OperationRef,
        /// Why nothing was made.
        reason: NotCreatedReason,
    },
    /// (Remote backend.) The ticket may or may not have been made: the
    /// provider's answer was lost. The kitchen is reconciling against the
    /// provider's own records. Retry with the same key, or read the
    /// operation's status; never make a new key for this ticket.
    Unknown {
        /// The operation to look up.
        operation: OperationRef,
        /// What is known, in words for the caller.
        reason: String,
    },
}

/// Why a provider made nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCreatedReason {
    /// The provider refused the ticket (a validation answer); its words.
    Rejected(String),
    /// The provider could not be reached; a retry later may work.
    Unavailable(String),
}

impl NotCreatedReason {
    /// The words for the caller.
    pub fn detail(&self) -> &str {
        match self {
            Self::Rejected(d) | Self::Unavailable(d) => d,
        }
    }
}

impl Outcome {
    /// The outcome's stable name (`created`, `replayed`, `conflict`,
    /// `invalid`, `in_progress`, `not_created`, `unknown`), as doors report
    /// it and metrics label it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Created(_) => "created",
            Self::Replayed(_) => "replayed",
            Self::Conflict { .. } => "conflict",
            Self::Invalid { .. } => "invalid",
            Self::InProgress { .. } => "in_progress",
            Self::NotCreated { .. } => "not_created",
            Self::Unknown { .. } => "unknown",
        }
    }
}

/// The result of a create that happened, whether just now or earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    /// The ticket, as the snapshot holds it.
    pub ticket: Ticket,
    /// The frozen JSON of the ticket; identical for the create and every replay.
    pub snapshot: ResultSnapshot,
    /// The operation record.
    pub operation: OperationRecord,
}
