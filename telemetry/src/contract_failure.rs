//! What a caller broke when a write failed through their own fault: the
//! `kind` label of `tickets_contract_failures_total`. One table for both
//! doors, so a refusal counts the same on REST and MCP.

use kitchen::{Outcome, Refusal};

/// A write the caller must change before it can succeed, by what they must
/// change. Counted once per attempt, next to its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContractFailure {
    /// A write without an operation key.
    IdempotencyKeyMissing,
    /// An operation key that is not a valid key.
    IdempotencyKeyMalformed,
    /// A key already used for a different request: the sentinel of a
    /// caller reusing keys.
    IdempotencyKeyReused,
    /// A request the door or the kitchen could not accept as sent.
    ValidationFailed,
    /// A change to a ticket the tenant does not have.
    TicketNotFound,
    /// A change expecting another version than the ticket's.
    VersionMismatch,
    /// A move the status machine does not allow.
    TransitionNotAllowed,
    /// A label added to a ticket that carries as many as it may.
    LabelLimitReached,
    /// (Remote backend.) A change to a ticket kept only in this database.
    TicketNotAtProvider,
    /// (Remote backend.) An action the provider has no counterpart for.
    NotSupportedByProvider,
    /// A create or comment refused by the likely-duplicate guard
    /// (`confirm`): the same content under a fresh key, as a retry that
    /// minted a new key would send.
    PossibleDuplicate,
    /// No credentials, or credentials that are not valid.
    Unauthenticated,
    /// Valid credentials without the scope the write needs.
    InsufficientScope,
}

impl ContractFailure {
    /// Every kind, in the order the README lists them.
    pub const ALL: [Self; 13] = [
        Self::IdempotencyKeyMissing,
        Self::IdempotencyKeyMalformed,
        Self::IdempotencyKeyReused,
        Self::ValidationFailed,
        Self::TicketNotFound,
        Self::VersionMismatch,
        Self::TransitionNotAllowed,
        Self::LabelLimitReached,
        Self::TicketNotAtProvider,
        Self::NotSupportedByProvider,
        Self::PossibleDuplicate,
        Self::Unauthenticated,
        Self::InsufficientScope,
    ];

    /// The metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::IdempotencyKeyMissing => "idempotency_key_missing",
            Self::IdempotencyKeyMalformed => "idempotency_key_malformed",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::ValidationFailed => "validation_failed",
            Self::TicketNotFound => "ticket_not_found",
            Self::VersionMismatch => "version_mismatch",
            Self::TransitionNotAllowed => "transition_not_allowed",
            Self::LabelLimitReached => "label_limit_reached",
            Self::TicketNotAtProvider => "ticket_not_at_provider",
            Self::NotSupportedByProvider => "not_supported_by_provider",
            Self::PossibleDuplicate => "possible_duplicate",
            Self::Unauthenticated => "unauthenticated",
            Self::InsufficientScope => "insufficient_scope",
        }
    }

    /// What the caller broke, for a kitchen outcome that is their mistake
    /// ([`Outcome::is_caller_mistake`]); `None` for every other outcome.
    pub fn of<T>(outcome: &Outcome<T>) -> Option<Self> {
        match outcome {
            Outcome::Conflict { .. } => Some(Self::IdempotencyKeyReused),
            Outcome::Invalid { .. } => Some(Self::ValidationFailed),
            Outcome::Refused(refusal) => Some(Self::refused(refusal)),
            Outcome::Created(_)
            | Outcome::Replayed(_)
            | Outcome::Expired(_)
            | Outcome::InProgress { .. }
            | Outcome::NotCreated { .. }
            | Outcome::Unknown { .. } => None,
        }
    }

    /// The kind of a kitchen refusal.
    pub fn refused(refusal: &Refusal) -> Self {
        match refusal {
            Refusal::TicketNotFound { .. } => Self::TicketNotFound,
            Refusal::VersionMismatch { .. } => Self::VersionMismatch,
            Refusal::TransitionNotAllowed { .. } => Self::TransitionNotAllowed,
            Refusal::LabelLimitReached { .. } => Self::LabelLimitReached,
            Refusal::NotAtProvider { .. } => Self::TicketNotAtProvider,
            Refusal::NotSupportedByProvider { .. } => Self::NotSupportedByProvider,
            Refusal::PossibleDuplicate { .. } => Self::PossibleDuplicate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_label() {
        let labels: std::collections::BTreeSet<_> =
            ContractFailure::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(labels.len(), ContractFailure::ALL.len());
    }

    #[test]
    fn the_readme_documents_every_kind() {
        let readme = include_str!("../../README.md");
        for kind in ContractFailure::ALL {
            assert!(
                readme.contains(&format!("`{}`", kind.as_str())),
                "README.md does not name the contract failure {}",
                kind.as_str()
            );
        }
    }
}
