//! What a write answers. Every expected result is a value here; only
//! infrastructure failures are [`KitchenError`](KitchenError)s.
//!
//! Two policies every door needs are decided here, once: which outcomes are
//! the caller's mistake ([`Outcome::is_caller_mistake`]) and how long a
//! caller should wait before trying again ([`Outcome::retry_after`]).

use std::time::Duration;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::duplicate::EarlierWrite;
use crate::domain::effect::{AttemptKind, AttemptResult, EffectAttempt, OperationStatus};
use crate::domain::operation::{OperationRecord, OperationRef, OperationState, ResultSnapshot};
use crate::domain::status::TicketStatus;
use crate::domain::ticket::{Ticket, TicketId, Version};
use crate::domain::violation::FieldViolation;

/// How long a caller should wait before retrying an [`Outcome::InProgress`].
pub const RETRY_AFTER: Duration = Duration::from_secs(1);
/// How long a caller should wait before retrying when the provider could
/// not be reached ([`NotCreatedReason::Unavailable`]).
pub const PROVIDER_UNAVAILABLE_RETRY_AFTER: Duration = Duration::from_secs(5);
/// How long a caller should wait before asking again about an
/// [`Outcome::Unknown`] effect: reconciliation usually settles it by then.
pub const UNKNOWN_RETRY_AFTER: Duration = Duration::from_secs(2);

/// The outcome of one write attempt. `T` is what the action makes: a
/// [`Ticket`] for create, update and transition, a comment for
/// `add_comment`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Outcome<T = Ticket> {
    /// The key was new: the effect and its operation record were committed
    /// together by this attempt.
    Created(Receipt<T>),
    /// The key was already used with the same request: this is the original
    /// result, byte for byte. Nothing new was written.
    Replayed(Receipt<T>),
    /// The key was used with the same request longer ago than its replay
    /// window: the first answer is no longer kept, but its effect is.
    /// Nothing new was written; this carries the resource as it is now
    /// (not as the first answer showed it).
    Expired(Expired<T>),
    /// The key was already used with a different request. Nothing was
    /// written. Carries a reference to the original operation, never its
    /// payload: use a new key for a new effect, or look the original up.
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
    /// The request is valid but the ticket it names does not allow it now
    /// (absent, at another version, or in a status it cannot move from).
    /// Nothing was written and the key is not consumed.
    Refused(Refusal),
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
        /// Reconciliation gave up on it (its calls to the provider reached
        /// the cap): no worker calls the provider for it again until an
        /// operator resolves it, so waiting or retrying answers the same.
        gave_up: bool,
    },
}

/// Why a valid write was not applied to the ticket it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The tenant has no ticket with this id (another tenant's ticket is
    /// not found either: its existence is not revealed).
    TicketNotFound {
        /// The id the caller sent.
        ticket_id: TicketId,
    },
    /// The caller expected another version than the ticket's: someone else
    /// changed it meanwhile. Read it again, then decide.
    VersionMismatch {
        /// The version the caller expected.
        expected: Version,
        /// The ticket's version now.
        current: Version,
    },
    /// The status machine does not allow this move.
    TransitionNotAllowed {
        /// The ticket's status now.
        from: TicketStatus,
        /// Where the caller asked to go.
        to: TicketStatus,
        /// Where it may go from here.
        allowed: &'static [TicketStatus],
    },
    /// (Remote backend.) The ticket has no copy at the provider: it was
    /// made while this deployment kept its tickets in its own database, so
    /// it exists only here and a change to it has nowhere to go.
    NotAtProvider {
        /// The id the caller sent.
        ticket_id: TicketId,
    },
    /// The ticket already carries as many labels as a ticket may
    /// ([`MAX_LABELS_PER_TICKET`](crate::MAX_LABELS_PER_TICKET)): remove
    /// one first.
    LabelLimitReached {
        /// The ticket labelled.
        ticket_id: TicketId,
        /// How many labels a ticket may carry.
        limit: usize,
    },
    /// (Remote backend.) The action has no counterpart at the provider (it
    /// implements no `RemoteAction`), so this deployment cannot do it.
    /// Refused before anything is read or written; the key stays unused.
    NotSupportedByProvider {
        /// The action asked for.
        action: Action,
    },
    /// The likely-duplicate guard is in `confirm` mode and a write with the
    /// same content was made (or is being made) under another key within
    /// its window: this looks like a retry under a fresh key. Nothing was
    /// written and the key is unused. Retry with the earlier write's key if
    /// this was a retry; send `confirm_new` if a second one is meant.
    PossibleDuplicate {
        /// The earlier write.
        of: EarlierWrite,
    },
}

/// Why a provider made nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotCreatedReason {
    /// The provider refused the ticket (a validation answer); its words.
    Rejected(String),
    /// The provider could not be reached, or a search proved that what was
    /// sent never arrived; a retry with the same key may make it.
    Unavailable(String),
}

impl NotCreatedReason {
    /// Why a `failed_before_effect` made nothing, as its ledger recorded
    /// it: the provider's refusal (its words, from the last dispatch), or a
    /// provider that could not be reached or a search that proved nothing
    /// arrived (`detail`, the record's own words).
    pub fn from_ledger(attempts: &[EffectAttempt], detail: String) -> Self {
        let last_dispatch = attempts
            .iter()
            .rev()
            .find(|a| a.kind == AttemptKind::Dispatch);
        match last_dispatch {
            Some(a) if a.result == Some(AttemptResult::Rejected) => {
                Self::Rejected(a.detail.clone().unwrap_or(detail))
            }
            _ => Self::Unavailable(detail),
        }
    }

    /// The words for the caller.
    pub fn detail(&self) -> &str {
        match self {
            Self::Rejected(d) | Self::Unavailable(d) => d,
        }
    }
}

impl<T> Outcome<T> {
    /// The outcome's stable name (`created`, `replayed`, `expired`, `conflict`,
    /// `invalid`, `refused`, `in_progress`, `not_created`, `unknown`, and
    /// `possible_duplicate` for a write the likely-duplicate guard flagged,
    /// made under `warn` or refused under `confirm`), as doors report it
    /// and metrics label it.
    pub fn name(&self) -> &'static str {
        match self {
            // Made, but flagged: counted apart, so that how often callers
            // mint a fresh key for what looks like a retry is one query.
            Self::Created(receipt) if receipt.possible_duplicate_of.is_some() => {
                "possible_duplicate"
            }
            Self::Refused(Refusal::PossibleDuplicate { .. }) => "possible_duplicate",
            Self::Created(_) => "created",
            Self::Replayed(_) => "replayed",
            Self::Expired(_) => "expired",
            Self::Conflict { .. } => "conflict",
            Self::Invalid { .. } => "invalid",
            Self::Refused(_) => "refused",
            Self::InProgress { .. } => "in_progress",
            Self::NotCreated { .. } => "not_created",
            Self::Unknown { .. } => "unknown",
        }
    }

    /// Whether the caller must change something before trying again (a
    /// client error), as opposed to a success, or a wait that a plain retry
    /// with the same key resolves.
    pub fn is_caller_mistake(&self) -> bool {
        match self {
            Self::Conflict { .. } | Self::Invalid { .. } | Self::Refused(_) => true,
            Self::NotCreated { reason, .. } => match reason {
                NotCreatedReason::Rejected(_) => true,
                NotCreatedReason::Unavailable(_) => false,
            },
            Self::Created(_)
            | Self::Replayed(_)
            | Self::Expired(_)
            | Self::InProgress { .. }
            | Self::Unknown { .. } => false,
        }
    }

    /// How long to wait before retrying with the same key (or, for an
    /// unknown effect, before asking for its status), when waiting is the
    /// answer; `None` when a retry would not help.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::InProgress { retry_after } => Some(*retry_after),
            Self::NotCreated { reason, .. } => match reason {
                NotCreatedReason::Unavailable(_) => Some(PROVIDER_UNAVAILABLE_RETRY_AFTER),
                NotCreatedReason::Rejected(_) => None,
            },
            // Waiting settles an unknown effect, unless reconciliation gave
            // up on it: then only an operator does.
            Self::Unknown { gave_up: false, .. } => Some(UNKNOWN_RETRY_AFTER),
            Self::Unknown { gave_up: true, .. } => None,
            Self::Created(_)
            | Self::Replayed(_)
            | Self::Expired(_)
            | Self::Conflict { .. }
            | Self::Invalid { .. }
            | Self::Refused(_) => None,
        }
    }

    /// The outcome for an attempt whose key another attempt already took:
    /// a replay of the original's frozen result when the requests mean the
    /// same, a conflict otherwise.
    pub(crate) fn for_taken_key(
        original: OperationRecord,
        attempt_fingerprint: &crate::Fingerprint,
    ) -> Result<Self, KitchenError>
    where
        T: serde::de::DeserializeOwned,
    {
        if original.fingerprint != *attempt_fingerprint {
            return Ok(Self::Conflict {
                original: original.reference(),
            });
        }
        let snapshot = original.result.clone().ok_or_else(|| {
            KitchenError::CorruptRecord(format!(
                "operation {} is {} but has no result",
                original.key,
                original.state.as_str()
            ))
        })?;
        let result = snapshot.parse::<T>().map_err(|e| {
            KitchenError::CorruptRecord(format!("result snapshot of {}: {e}", original.key))
        })?;
        Ok(Self::Replayed(Receipt {
            possible_duplicate_of: None,
            result,
            snapshot,
            operation: original,
        }))
    }
}

/// A write that happened longer ago than its key's replay window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<T = Ticket> {
    /// What the write made or acted on, as it is now.
    pub current: T,
    /// The operation, as its tombstone keeps it.
    pub operation: OperationRef,
}

/// The result of a write that happened, whether just now or earlier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt<T = Ticket> {
    /// What the write made, as the snapshot holds it.
    pub result: T,
    /// Its frozen JSON; identical for the first answer and every replay.
    pub snapshot: ResultSnapshot,
    /// The operation record.
    pub operation: OperationRecord,
    /// On the first answer of a new key only, when the likely-duplicate
    /// guard warns: an earlier write under another key with the same
    /// content, within the guard's window. Not part of the frozen result,
    /// so a replay carries none.
    pub possible_duplicate_of: Option<EarlierWrite>,
}

/// What an operation's status means, by the kitchen's one rule for it, so
/// that no door re-derives an outcome from a record (a task's result, a
/// status read).
impl OperationStatus {
    /// The outcome a write with this record answers now that it has ended:
    /// `Created` with its frozen result once it happened, `NotCreated` once
    /// the provider provably made nothing, `Unknown` (given up) once
    /// reconciliation stopped asking. `None` while it is in flight or its
    /// effect is still being reconciled.
    pub fn ended<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<Outcome<T>>, KitchenError> {
        let record = &self.record;
        let detail = || {
            self.effect
                .as_ref()
                .and_then(|e| e.state_detail.clone())
                .unwrap_or_default()
        };
        Ok(Some(match record.state {
            OperationState::Succeeded => {
                let corrupt = |why: String| {
                    KitchenError::CorruptRecord(format!(
                        "operation {} succeeded but {why}",
                        record.key
                    ))
                };
                let snapshot = record
                    .result
                    .clone()
                    .ok_or_else(|| corrupt("has no result".into()))?;
                let result = snapshot
                    .parse::<T>()
                    .map_err(|e| corrupt(format!("its result does not read: {e}")))?;
                Outcome::Created(Receipt {
                    possible_duplicate_of: None,
                    result,
                    snapshot,
                    operation: record.clone(),
                })
            }
            OperationState::FailedBeforeEffect => Outcome::NotCreated {
                operation: record.reference(),
                reason: NotCreatedReason::from_ledger(
                    self.effect.as_ref().map_or(&[], |e| e.attempts.as_slice()),
                    detail(),
                ),
            },
            OperationState::Unknown if self.given_up() => Outcome::Unknown {
                operation: record.reference(),
                reason: detail(),
                gave_up: true,
            },
            OperationState::Unknown | OperationState::InProgress => return Ok(None),
        }))
    }

    /// Whether reconciliation gave up on this operation's effect: only an
    /// operator settles it now.
    pub fn given_up(&self) -> bool {
        self.effect.as_ref().is_some_and(|e| e.given_up)
    }

    /// What the ledger says about the effect meanwhile, if anything.
    pub fn detail(&self) -> Option<&str> {
        self.effect.as_ref().and_then(|e| e.state_detail.as_deref())
    }
}
