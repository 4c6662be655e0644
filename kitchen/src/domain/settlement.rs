//! Settling an effect by hand: what a person decides about an operation
//! whose outcome reconciliation could not learn, and the audit entry that
//! keeps who decided it, when and why.

use std::fmt;

use time::OffsetDateTime;

use super::operation::OperationState;
use super::text::refuse_nul;
use super::violation::FieldViolation;

/// Longest name of the person who settles an effect.
pub const MAX_OPERATOR_CHARS: usize = 100;
/// Longest reason given for a settlement.
pub const MAX_SETTLE_REASON_CHARS: usize = 2000;
/// Longest provider reference an operator may name.
pub const MAX_PROVIDER_REFERENCE_CHARS: usize = 200;

/// Text an operator gave: trimmed, not empty, at most `max` characters,
/// without NUL.
fn operator_text(field: &str, raw: &str, max: usize) -> Result<String, FieldViolation> {
    refuse_nul(field, raw)?;
    let text = raw.trim();
    let chars = text.chars().count();
    if text.is_empty() {
        return Err(FieldViolation::new(
            field,
            "missing",
            format!("{field} must not be empty: say it, for the audit trail"),
        ));
    }
    if chars > max {
        return Err(FieldViolation::new(
            field,
            "too_long",
            format!("{field} must be at most {max} characters; it has {chars}"),
        ));
    }
    Ok(text.to_owned())
}

/// Who settles an effect, as the audit trail names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorName(String);

impl OperatorName {
    /// Parses a name (`--by`).
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        operator_text("by", raw, MAX_OPERATOR_CHARS).map(Self)
    }

    pub(crate) fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OperatorName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a person settled an effect the way they did (`--reason`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettleReason(String);

impl SettleReason {
    /// Parses a reason.
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        operator_text("reason", raw, MAX_SETTLE_REASON_CHARS).map(Self)
    }

    pub(crate) fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    /// The reason as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The provider's id of the object a person says an effect made there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderReference(String);

impl ProviderReference {
    /// Parses a reference (`--made`).
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        Self::parse_as("made", raw)
    }

    /// Parses a reference given as `field` (`--keep`, say).
    pub fn parse_as(field: &str, raw: &str) -> Result<Self, FieldViolation> {
        operator_text(field, raw, MAX_PROVIDER_REFERENCE_CHARS).map(Self)
    }

    /// The reference as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProviderReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a person decided about an effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The provider holds the effect as this object: the operation
    /// succeeded with it, and a retry answers it.
    Made(ProviderReference),
    /// The provider never made it: the operation failed before its effect,
    /// and a retry with the same key sends it.
    NotMade,
    /// The provider held the effect more than once, and a person removed
    /// the copies there, keeping this object: the operation (which
    /// succeeded already) no longer needs an operator.
    Kept(ProviderReference),
}

impl Decision {
    /// The decision's stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Made(_) => "made",
            Self::NotMade => "not_made",
            Self::Kept(_) => "kept",
        }
    }

    /// The provider's object the decision names, if it names one.
    pub fn reference(&self) -> Option<&ProviderReference> {
        match self {
            Self::Made(reference) | Self::Kept(reference) => Some(reference),
            Self::NotMade => None,
        }
    }

    /// The state the decision leaves its operation in.
    pub fn state_after(&self) -> OperationState {
        match self {
            Self::Made(_) | Self::Kept(_) => OperationState::Succeeded,
            Self::NotMade => OperationState::FailedBeforeEffect,
        }
    }
}

/// A settlement as a person orders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettleOrder {
    /// What they decided.
    pub decision: Decision,
    /// Who they are.
    pub by: OperatorName,
    /// Why.
    pub reason: SettleReason,
    /// Settle even where a search of the provider says otherwise (the
    /// object carries no reference, the provider cannot be searched).
    pub force: bool,
}

/// The audit entry of one settlement by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settlement {
    /// When it was settled.
    pub settled_at: OffsetDateTime,
    /// What was decided: `made` with the provider's reference, or
    /// `not_made`.
    pub decision: Decision,
    /// Who decided.
    pub by: OperatorName,
    /// Why.
    pub reason: SettleReason,
    /// What a search of the provider found when it was settled.
    pub provider_check: String,
    /// Whether the person overrode what that search found.
    pub forced: bool,
}

/// Why a settlement was refused; nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleRefusal {
    /// Nothing is recorded under this key (or it is forgotten).
    NotFound,
    /// The operation is not unknown, so there is nothing to settle: it was
    /// settled already (by reconciliation or by a person: `settled_by` is
    /// the last person's entry, if one settled it), or it is still being
    /// worked on.
    NotUnknown {
        /// Its state now.
        state: OperationState,
        /// The last settlement by hand, if there was one.
        settled_by: Option<Box<Settlement>>,
    },
    /// `--keep` for an operation the service knows no copies of at the
    /// provider: there is nothing to resolve.
    NoCopies {
        /// Its state now.
        state: OperationState,
    },
    /// A worker (a caller's retry, a status read, the reconciler) is
    /// calling the provider for it right now; ask again in a few seconds.
    Busy,
    /// A search of the provider contradicts the decision (`--force`
    /// overrides it where the decision can be carried out without it).
    Contradicted(String),
    /// The decision cannot be carried out: e.g. a change's new state can
    /// only be copied from what a search of the provider found.
    Impossible(String),
}

impl fmt::Display for SettleRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound => f.write_str(
                "nothing is recorded under this key for this tenant and action (never used, or \
                 forgotten): there is nothing to settle",
            ),
            Self::NotUnknown {
                state,
                settled_by: Some(entry),
            } => write!(
                f,
                "the operation is {} already: {} settled it as {} at {} ({}); a settled \
                 operation never changes again",
                state.as_str(),
                entry.by,
                entry.decision.as_str(),
                crate::rfc3339(entry.settled_at),
                entry.reason.as_str()
            ),
            Self::NotUnknown {
                state: OperationState::Succeeded,
                settled_by: None,
            } => f.write_str(
                "the operation succeeded already (reconciliation found its effect): there is \
                 nothing to settle",
            ),
            Self::NotUnknown {
                state: OperationState::FailedBeforeEffect,
                settled_by: None,
            } => f.write_str(
                "the provider provably made nothing (failed_before_effect): a retry with the same \
                 key sends it; there is nothing to settle",
            ),
            Self::NotUnknown { state, .. } => write!(
                f,
                "the operation is {}, not unknown: it is being worked on; look again once it \
                 is unknown",
                state.as_str()
            ),
            Self::NoCopies { state } => write!(
                f,
                "the service knows of no copies of this operation's effect at the provider (it \
                 is {}): there is nothing to keep; --keep is for an operation whose status lists \
                 duplicates_at_provider",
                state.as_str()
            ),
            Self::Busy => f.write_str(
                "a worker is calling the provider for this operation right now; try again in a \
                 few seconds (it may settle it meanwhile)",
            ),
            Self::Contradicted(why) | Self::Impossible(why) => f.write_str(why),
        }
    }
}

/// What a settlement order came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettleAnswer {
    /// Settled: the operation's new state, and the audit entry written with
    /// it.
    Settled {
        /// `succeeded` (made) or `failed_before_effect` (not made).
        state: OperationState,
        /// The audit entry.
        settlement: Settlement,
    },
    /// Refused; nothing changed.
    Refused(SettleRefusal),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_text_is_trimmed_required_and_bounded() {
        assert_eq!(
            OperatorName::parse("  ana  ").map(|n| n.0),
            Ok("ana".to_owned())
        );
        assert_eq!(
            OperatorName::parse("   ").map_err(|v| v.code),
            Err("missing")
        );
        assert_eq!(
            SettleReason::parse(&"x".repeat(MAX_SETTLE_REASON_CHARS + 1)).map_err(|v| v.code),
            Err("too_long")
        );
        assert_eq!(
            ProviderReference::parse("T-1\0").map_err(|v| v.code),
            Err("nul_character")
        );
    }
}
