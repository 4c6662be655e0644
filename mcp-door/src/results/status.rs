//! What `get_operation_status` answers: an operation's state, what it
//! made, how its effect was reconciled and settled, and what to do next.

use kitchen::{
    Action, EffectAttempt, EffectLedger, KeyPhase, OperationState, OperationStatus, Settlement,
    rfc3339,
};
use schemars::JsonSchema;
use serde::Serialize;

use super::{CommentOut, TicketOut, action_names, phase_names, plain_integer};
use crate::result_text;

/// What `get_operation_status` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OperationStatusResult {
    /// succeeded (it happened), in_progress (being sent to the ticket provider), unknown
    /// (being reconciled with the provider), failed_before_effect (nothing happened) or
    /// not_found (nothing recorded under this operation_id).
    #[schemars(extend("enum" = [
        "succeeded",
        "in_progress",
        "unknown",
        "failed_before_effect",
        "not_found"
    ]))]
    pub state: String,
    /// The tool the operation_id was looked up for.
    #[schemars(extend("enum" = action_names()))]
    pub action: String,
    /// The operation_id looked up.
    pub operation_id: String,
    /// replayable, or expired (past replayable_until: a retry makes nothing new).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = phase_names()))]
    pub phase: Option<String>,
    /// The ticket made or changed (add_comment: the comment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_id: Option<String>,
    /// When the operation_id was first used (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Until when a retry returns the first answer (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayable_until: Option<String>,
    /// When succeeded and replayable: the ticket as the call left it (null for add_comment).
    pub ticket: Option<TicketOut>,
    /// For add_comment, when succeeded and replayable: the comment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<CommentOut>,
    /// Until when the operation_id is remembered (RFC 3339); after it, it is free again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retained_until: Option<String>,
    /// Whether calling the same tool again with this operation_id and the same arguments is safe.
    pub retry_safe: bool,
    /// For a write done in a provider: why nothing happened, or why the outcome is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// For a write done in a provider: how many calls were made to the provider for it (sends
    /// and lookups).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = plain_integer)]
    pub attempts: Option<u32>,
    /// For a write done in a provider: the latest lookup of it at the provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_reconciliation: Option<Reconciliation>,
    /// For a write done in a provider: the provider's ids of copies found besides the original
    /// (the provider holds it more than once; an operator must resolve them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicates_at_provider: Option<Vec<String>>,
    /// For a write done in a provider whose outcome the service could not learn: every time an
    /// operator settled it by hand, oldest first (who, when, why, what they decided).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settled_by_hand: Option<Vec<SettledByHand>>,
    /// What to do next, in one sentence.
    pub next_step: String,
}

/// An operator's decision about a write whose outcome the service could not learn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct SettledByHand {
    /// When it was settled (RFC 3339).
    pub at: String,
    /// made (the provider holds it as provider_reference: the write succeeded), not_made (the
    /// provider never made it: calling the tool again with the same operation_id sends it) or
    /// kept (the provider held it more than once; the copies were removed, keeping
    /// provider_reference).
    pub decision: String,
    /// For made and kept: the provider's id of the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider_reference: Option<String>,
    /// Who decided.
    pub by: String,
    /// Why.
    pub reason: String,
}

impl From<&Settlement> for SettledByHand {
    fn from(s: &Settlement) -> Self {
        Self {
            at: rfc3339(s.settled_at),
            decision: s.decision.as_str().into(),
            provider_reference: s.decision.reference().map(|r| r.as_str().into()),
            by: s.by.as_str().into(),
            reason: s.reason.as_str().into(),
        }
    }
}

/// One lookup of a write at the provider by the service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Reconciliation {
    /// found, absent, absent_too_soon or lookup_failed; null if it has not finished.
    pub result: Option<String>,
    /// When it started (RFC 3339).
    pub at: String,
    /// What caused it: request, retry, status, background or startup.
    pub trigger: String,
}

impl From<&EffectAttempt> for Reconciliation {
    fn from(a: &EffectAttempt) -> Self {
        Self {
            result: a.result.map(|r| r.as_str().into()),
            at: rfc3339(a.started_at),
            trigger: a.trigger.as_str().into(),
        }
    }
}

/// What the status shows of an effect ledger (remote backend only).
#[derive(Debug, Clone)]
pub(crate) struct EffectSummary<'a> {
    pub(crate) detail: Option<&'a str>,
    pub(crate) attempts: usize,
    pub(crate) last_reconciliation: Option<&'a EffectAttempt>,
    pub(crate) duplicates_at_provider: &'a [String],
    pub(crate) given_up: bool,
    pub(crate) settled_by_hand: &'a [Settlement],
}

impl<'a> From<&'a EffectLedger> for EffectSummary<'a> {
    fn from(ledger: &'a EffectLedger) -> Self {
        Self {
            detail: ledger.state_detail.as_deref(),
            attempts: ledger.attempts.len(),
            last_reconciliation: ledger.last_reconciliation(),
            duplicates_at_provider: &ledger.duplicates_at_provider,
            given_up: ledger.given_up,
            settled_by_hand: &ledger.settled_by_hand,
        }
    }
}

/// What a recorded operation made, as its status shows it.
#[derive(Debug, Clone)]
pub(crate) enum Made {
    /// A ticket (create, update, transition).
    Ticket(TicketOut),
    /// A comment (add_comment).
    Comment(CommentOut),
}

impl OperationStatusResult {
    /// The status of a recorded operation; `made` is its result, if any
    /// (an expired one has none: only its tombstone is kept).
    pub(crate) fn recorded(status: &OperationStatus, made: Option<Made>) -> Self {
        let record = &status.record;
        let created_at = rfc3339(record.created_at);
        let retained_until = rfc3339(record.retained_until);
        let mut result = Self::in_state(
            record.state,
            record.action,
            record.key.as_str().into(),
            Some(retained_until.clone()),
            made,
            status.effect.as_ref().map(EffectSummary::from),
        );
        let phase = match status.phase {
            KeyPhase::Replayable => KeyPhase::Replayable,
            // The kitchen has no status for a forgotten key; were it to
            // show one, its key is past its window all the same.
            KeyPhase::Expired | KeyPhase::Forgotten => {
                let ticket_id = record.ticket_id.map(|id| id.to_string());
                result.next_step = result_text::status_expired(
                    record.action,
                    ticket_id.as_deref(),
                    &created_at,
                    &retained_until,
                );
                KeyPhase::Expired
            }
        };
        result.phase = Some(phase.as_str().into());
        result.resource_id = record.resource_id.map(|id| id.to_string());
        result.created_at = Some(created_at);
        result.replayable_until = Some(rfc3339(record.replayable_until));
        result
    }

    pub(crate) fn in_state(
        state: OperationState,
        action: Action,
        operation_id: String,
        retained_until: Option<String>,
        made: Option<Made>,
        effect: Option<EffectSummary<'_>>,
    ) -> Self {
        let (ticket, comment) = match made {
            Some(Made::Ticket(ticket)) => (Some(ticket), None),
            Some(Made::Comment(comment)) => (None, Some(comment)),
            None => (None, None),
        };
        Self {
            state: state.as_str().into(),
            action: action.as_str().into(),
            operation_id,
            phase: None,
            resource_id: None,
            created_at: None,
            replayable_until: None,
            ticket,
            comment,
            retained_until,
            retry_safe: true,
            detail: effect.as_ref().and_then(|e| e.detail).map(Into::into),
            attempts: effect
                .as_ref()
                .map(|e| u32::try_from(e.attempts).unwrap_or(u32::MAX)),
            last_reconciliation: effect
                .as_ref()
                .and_then(|e| e.last_reconciliation)
                .map(Reconciliation::from),
            duplicates_at_provider: effect
                .as_ref()
                .map(|e| e.duplicates_at_provider.to_vec())
                .filter(|ids| !ids.is_empty()),
            settled_by_hand: effect
                .as_ref()
                .map(|e| {
                    e.settled_by_hand
                        .iter()
                        .map(SettledByHand::from)
                        .collect::<Vec<_>>()
                })
                .filter(|entries| !entries.is_empty()),
            next_step: if effect.as_ref().is_some_and(|e| e.given_up) {
                result_text::gave_up(action)
            } else {
                result_text::status_next_step(action, Some(state))
            },
        }
    }

    /// The status of a key nothing was recorded for under `action`.
    pub(crate) fn not_found(action: Action, operation_id: String) -> Self {
        Self {
            state: "not_found".into(),
            action: action.as_str().into(),
            operation_id,
            phase: None,
            resource_id: None,
            created_at: None,
            replayable_until: None,
            ticket: None,
            comment: None,
            retained_until: None,
            retry_safe: true,
            detail: None,
            attempts: None,
            last_reconciliation: None,
            duplicates_at_provider: None,
            settled_by_hand: None,
            next_step: result_text::status_next_step(action, None),
        }
    }
}
