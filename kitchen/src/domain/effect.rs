//! The effect ledger: what the kitchen knows about a write done in a
//! provider (the remote backend), beyond the operation record itself.
//!
//! The effect is the one ticket, change or comment a key intends. Attempts are the calls made
//! to the provider for it: dispatches, and lookups by external reference
//! (reconciliation). A caller's retry may add attempts; it never adds an
//! effect.

use std::fmt;

use serde::Serialize;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use super::action::Action;
use super::lifecycle::KeyPhase;
use super::operation::{OperationKey, OperationRecord};
use super::settlement::Settlement;
use super::tenant::TenantId;

/// The name of one intended effect in the provider: sent as its idempotency
/// key and stored on its ticket as the searchable external reference.
///
/// Derived from (tenant, action, key), so every instance, every retry and
/// every reconciliation computes the same value, and a key of one tenant can
/// never name another tenant's effect. It is a digest: the caller's key and
/// the tenant id are not disclosed to the provider.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct ExternalRef(String);

impl ExternalRef {
    /// The reference of (tenant, action, key).
    pub fn derive(tenant: TenantId, action: Action, key: &OperationKey) -> Self {
        let mut hasher = Sha256::new();
        // Each part is length-prefixed so that no two scopes hash alike.
        for part in [
            tenant.as_uuid().as_bytes().as_slice(),
            action.as_str().as_bytes(),
            key.as_str().as_bytes(),
        ] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part);
        }
        let digest = hex::encode(hasher.finalize());
        Self(format!("rst1-{}", &digest[..40]))
    }

    pub(crate) fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    /// The reference as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExternalRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptKind {
    /// Asked the provider to make the ticket.
    Dispatch,
    /// Searched the provider by external reference (reconciliation).
    Lookup,
}

impl AttemptKind {
    /// As stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dispatch => "dispatch",
            Self::Lookup => "lookup",
        }
    }

    pub(crate) fn parse(raw: &str) -> Option<Self> {
        match raw {
            "dispatch" => Some(Self::Dispatch),
            "lookup" => Some(Self::Lookup),
            _ => None,
        }
    }
}

/// What made the kitchen call the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The first request with the key.
    Request,
    /// A caller retried the key.
    Retry,
    /// A caller asked for the operation's status.
    Status,
    /// The background reconciler.
    Background,
    /// The reconciler's first pass after the server started.
    Startup,
}

impl Trigger {
    /// As stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Retry => "retry",
            Self::Status => "status",
            Self::Background => "background",
            Self::Startup => "startup",
        }
    }

    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "request" => Self::Request,
            "retry" => Self::Retry,
            "status" => Self::Status,
            "background" => Self::Background,
            "startup" => Self::Startup,
            _ => return None,
        })
    }

    /// Whether a worker with this trigger may send the effect to the
    /// provider. A status read only looks (it may search the provider to
    /// settle what it finds): a read never causes a write, also where a
    /// resend would be harmless, because hosts run read-only tools without
    /// asking. Sending again is for a caller's write and for the reconciler.
    pub(crate) fn may_send(self) -> bool {
        match self {
            Self::Request | Self::Retry | Self::Background | Self::Startup => true,
            Self::Status => false,
        }
    }
}

/// How one call to the provider ended, as recorded on its attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptResult {
    /// Dispatch: the provider made the ticket.
    Created,
    /// Dispatch: the provider had already made it under this key.
    ReplayedByProvider,
    /// Dispatch: the provider refused it and made nothing.
    Rejected,
    /// Dispatch: the provider could not be reached; nothing was sent.
    NotSent,
    /// Dispatch: the answer was lost; the ticket may or may not exist.
    Ambiguous,
    /// Lookup: the provider has it.
    Found,
    /// Lookup: the provider could not be searched.
    LookupFailed,
    /// Lookup: not there yet, but a request may still land.
    AbsentTooSoon,
    /// Lookup: provably never made.
    Absent,
}

impl AttemptResult {
    /// Every result.
    pub const ALL: [AttemptResult; 9] = [
        Self::Created,
        Self::ReplayedByProvider,
        Self::Rejected,
        Self::NotSent,
        Self::Ambiguous,
        Self::Found,
        Self::LookupFailed,
        Self::AbsentTooSoon,
        Self::Absent,
    ];

    /// As stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::ReplayedByProvider => "replayed_by_provider",
            Self::Rejected => "rejected",
            Self::NotSent => "not_sent",
            Self::Ambiguous => "ambiguous",
            Self::Found => "found",
            Self::LookupFailed => "lookup_failed",
            Self::AbsentTooSoon => "absent_too_soon",
            Self::Absent => "absent",
        }
    }

    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == raw)
    }
}

/// An attempt's end, as the ledger records it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FinishedAttempt<'a> {
    /// The attempt's number.
    pub(crate) number: i32,
    /// How it ended.
    pub(crate) result: AttemptResult,
    /// The provider's words, or ours.
    pub(crate) detail: Option<&'a str>,
}

impl<'a> FinishedAttempt<'a> {
    pub(crate) fn new(number: i32, result: AttemptResult, detail: Option<&'a str>) -> Self {
        Self {
            number,
            result,
            detail,
        }
    }
}

/// One call to the provider for an effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectAttempt {
    /// 1, 2, … in the order they started.
    pub number: i32,
    /// Dispatch or lookup.
    pub kind: AttemptKind,
    /// What caused it.
    pub trigger: Trigger,
    /// When it started.
    pub started_at: OffsetDateTime,
    /// When its answer was recorded; `None` while it runs, and for ever if
    /// the server stopped during it.
    pub finished_at: Option<OffsetDateTime>,
    /// How it ended; `None` while it runs, and for ever if the server
    /// stopped during it.
    pub result: Option<AttemptResult>,
    /// The provider's words, or ours, about it.
    pub detail: Option<String>,
}

/// A call to the provider that went wrong, with the operation it was for:
/// what an operator looks at when the provider is in trouble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCall {
    /// The operation's tenant.
    pub tenant: TenantId,
    /// The operation's action.
    pub action: Action,
    /// The operation's key.
    pub key: OperationKey,
    /// The call.
    pub attempt: EffectAttempt,
}

/// How the work behind the promises stands, for an operator: the
/// reconciler's backlog and the records the retention sweep keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Upkeep {
    /// Unsettled effects the reconciler will look at again (not given up).
    pub reconciling: u64,
    /// Operation records kept, tombstones included.
    pub records: u64,
    /// Of those, tombstones: past their replay window, the first answer
    /// dropped.
    pub tombstones: u64,
}

/// Everything known about an effect made in a provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EffectLedger {
    /// The effect's name at the provider.
    pub external_ref: ExternalRef,
    /// Why it failed before happening, or why its outcome is unknown.
    pub state_detail: Option<String>,
    /// Until when the provider deduplicates a re-dispatch with the same key
    /// (its dedup window from the first dispatch); `None` when it does not.
    pub key_trusted_until: Option<OffsetDateTime>,
    /// When the ticket was first sent to the provider.
    pub first_dispatched_at: Option<OffsetDateTime>,
    /// When it was last sent.
    pub last_dispatched_at: Option<OffsetDateTime>,
    /// The provider's ids of objects carrying the effect's reference besides
    /// the original, as a search found them: the effect was made more than
    /// once there, for an operator to resolve. Empty normally.
    pub duplicates_at_provider: Vec<String>,
    /// Every call made for it, oldest first.
    pub attempts: Vec<EffectAttempt>,
    /// Whether reconciliation gave up on it: its outcome is `unknown`, its
    /// attempts reached the cap, and no worker will call the provider for
    /// it again until an operator resolves it. Its outcome is final in the
    /// sense that only a person changes it.
    pub given_up: bool,
    /// Every time a person settled it by hand (`tickets ops settle`), oldest
    /// first: who, when, why, and what they decided. Empty normally.
    pub settled_by_hand: Vec<Settlement>,
}

impl EffectLedger {
    /// The latest lookup: the last reconciliation and what it found.
    pub fn last_reconciliation(&self) -> Option<&EffectAttempt> {
        self.attempts
            .iter()
            .rev()
            .find(|a| a.kind == AttemptKind::Lookup)
    }
}

/// An operation as the status resource shows it: the record, and for the
/// remote backend its effect ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationStatus {
    /// The operation record (a tombstone once its replay window is over).
    pub record: OperationRecord,
    /// Where its key is now: replayable, or expired (never forgotten: a
    /// forgotten key has no status).
    pub phase: KeyPhase,
    /// The effect ledger; `None` for a ticket made locally.
    pub effect: Option<EffectLedger>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_refs_differ_by_tenant_and_key_and_are_stable() {
        let key = OperationKey::parse("0193a4f2-7c1e").expect("a key");
        let other = OperationKey::parse("0193a4f2-7c1f").expect("a key");
        let a = TenantId::from_uuid(uuid::Uuid::from_u128(1));
        let b = TenantId::from_uuid(uuid::Uuid::from_u128(2));
        let r = ExternalRef::derive(a, Action::CreateTicket, &key);
        assert_eq!(r, ExternalRef::derive(a, Action::CreateTicket, &key));
        assert_ne!(r, ExternalRef::derive(b, Action::CreateTicket, &key));
        assert_ne!(r, ExternalRef::derive(a, Action::CreateTicket, &other));
        assert!(r.as_str().starts_with("rst1-") && r.as_str().len() == 45);
        assert!(!r.as_str().contains("0193a4f2"));
    }

    #[test]
    fn attempt_results_round_trip_their_stored_names() {
        for result in AttemptResult::ALL {
            assert_eq!(AttemptResult::parse(result.as_str()), Some(result));
        }
        assert_eq!(AttemptResult::parse("maybe"), None);
    }
}
