//! What a call ends with. A write ends in one of four [`Settled`] values,
//! never in an error: what the service did (or refused), or, when that
//! cannot be proved, [`Settled::Unresolved`] with what was seen last, for
//! the caller to decide. A read ends in a [`Read`].

use serde::{Deserialize, Serialize};

use crate::key::OperationKey;
use crate::operation::{OperationState, OperationStatus};
use crate::problem::Problem;

/// How a write ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled<T> {
    /// It happened: `value` is the service's answer to it (the first one,
    /// byte for byte, when `replayed`: the effect was made by an earlier
    /// attempt with the same key, and nothing was made twice).
    Done {
        /// The ticket, or the comment.
        value: T,
        /// The key it happened under.
        key: OperationKey,
        /// Whether this answer is a replay of an earlier attempt's.
        replayed: bool,
    },
    /// It happened, longer ago than the key's replay window: the first
    /// answer is gone, `value` is the resource as it is now, and nothing
    /// was made twice.
    Expired {
        /// The ticket, or the comment, as it is now.
        value: T,
        /// The key it happened under.
        key: OperationKey,
    },
    /// The service refused it and made nothing (invalid input, no such
    /// ticket, another version, a forbidden move, the key used for another
    /// request, the provider's refusal). Never retried: the same request
    /// would be refused again.
    Refused {
        /// The key that was sent.
        key: OperationKey,
        /// Why.
        problem: Problem,
    },
    /// Whether it happened could not be proved within the policy's bounds.
    /// The intent stays pending in the journal; finish it later with
    /// [`crate::Client::resume`], or retry it with this same key. Never
    /// with a new key: that could make the effect twice.
    Unresolved {
        /// The intent's key: the only one it may ever be sent with.
        key: OperationKey,
        /// What was seen last.
        last_seen: LastSeen,
    },
}

impl<T> Settled<T> {
    /// The intent's key.
    pub fn key(&self) -> &OperationKey {
        match self {
            Settled::Done { key, .. }
            | Settled::Expired { key, .. }
            | Settled::Refused { key, .. }
            | Settled::Unresolved { key, .. } => key,
        }
    }

    /// The outcome's name: `done`, `expired`, `refused` or `unresolved`.
    pub fn outcome(&self) -> &'static str {
        match self {
            Settled::Done { .. } => "done",
            Settled::Expired { .. } => "expired",
            Settled::Refused { .. } => "refused",
            Settled::Unresolved { .. } => "unresolved",
        }
    }

    /// The resource, when the write happened.
    pub fn value(&self) -> Option<&T> {
        match self {
            Settled::Done { value, .. } | Settled::Expired { value, .. } => Some(value),
            Settled::Refused { .. } | Settled::Unresolved { .. } => None,
        }
    }

    /// The same outcome with the value changed by `f`.
    pub fn try_map<U, E>(self, f: impl FnOnce(T) -> Result<U, E>) -> Result<Settled<U>, E> {
        Ok(match self {
            Settled::Done {
                value,
                key,
                replayed,
            } => Settled::Done {
                value: f(value)?,
                key,
                replayed,
            },
            Settled::Expired { value, key } => Settled::Expired {
                value: f(value)?,
                key,
            },
            Settled::Refused { key, problem } => Settled::Refused { key, problem },
            Settled::Unresolved { key, last_seen } => Settled::Unresolved { key, last_seen },
        })
    }
}

/// What the client saw last before it stopped trying: the evidence an
/// [`Settled::Unresolved`] leaves the caller (and a [`Read::Unreachable`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LastSeen {
    /// No answer: the request failed on the way.
    NoAnswer {
        /// Whether it may have reached the service (`false` only when no
        /// connection was made).
        may_have_been_sent: bool,
        /// The transport's words.
        error: String,
    },
    /// An answer that settles nothing: a status the policy retries, or a
    /// body that is not what the contract says.
    Answer {
        /// Its status.
        status: u16,
        /// Its problem document, or one made from its text.
        problem: Problem,
    },
    /// The status lookup (or a `202`): recorded, not settled yet.
    Unsettled {
        /// Its state (`in_progress` or `unknown`).
        state: OperationState,
        /// What the service says about it.
        detail: Option<String>,
    },
    /// The status lookup found nothing recorded, after the one retry that
    /// the policy allows once nothing is recorded.
    NotRecorded,
    /// The status lookup says it happened, but its answer could not be
    /// fetched within the policy's bounds.
    Recorded {
        /// The record.
        status: Box<OperationStatus>,
    },
    /// The status lookup itself was refused (e.g. `401`): nothing can be
    /// learnt with these credentials.
    LookupRefused {
        /// Why.
        problem: Problem,
    },
}

/// How a read ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Read<T> {
    /// What was asked for.
    Found(T),
    /// Nothing there for this tenant (`404`). For a status lookup:
    /// nothing recorded for the key, so a retry with it is safe.
    NotFound(Problem),
    /// Refused (`400`, `401`, …).
    Refused(Problem),
    /// No usable answer after the policy's retries.
    Unreachable(LastSeen),
}

impl<T> Read<T> {
    /// The value, when found.
    pub fn found(self) -> Option<T> {
        match self {
            Read::Found(value) => Some(value),
            Read::NotFound(_) | Read::Refused(_) | Read::Unreachable(_) => None,
        }
    }
}
