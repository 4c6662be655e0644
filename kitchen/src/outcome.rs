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
}

impl Outcome {
    /// The outcome's stable name (`created`, `replayed`, `conflict`,
    /// `invalid`, `in_progress`), as doors report it and metrics label it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Created(_) => "created",
            Self::Replayed(_) => "replayed",
            Self::Conflict { .. } => "conflict",
            Self::Invalid { .. } => "invalid",
            Self::InProgress { .. } => "in_progress",
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
