//! Tool results: structured content, described by each tool's output schema.

use kitchen::{
    Action, Comment, EffectAttempt, EffectLedger, FieldViolation, KeyPhase, OperationRef,
    OperationState, OperationStatus, Priority, Settlement, Ticket, TicketStatus, rfc3339,
};
use schemars::{JsonSchema, Schema};
use serde::Serialize;

use crate::result_text;

/// Drops schemars' `format` (`uint32`, `uint64`) from an integer field:
/// those are not JSON Schema formats, and validators such as Ajv warn about
/// them on every call. `minimum` stays.
fn plain_integer(schema: &mut Schema) {
    schema.remove("format");
}

/// The names of every priority, for the schemas' enums.
pub(crate) fn priority_names() -> Vec<&'static str> {
    Priority::ALL.map(Priority::as_str).to_vec()
}

/// The names of every status, for the schemas' enums.
pub(crate) fn status_names() -> Vec<&'static str> {
    TicketStatus::ALL.map(TicketStatus::as_str).to_vec()
}

/// The phases a recorded key can be shown in (a forgotten key has no
/// status), for the schemas' enums.
pub(crate) fn phase_names() -> Vec<&'static str> {
    [KeyPhase::Replayable, KeyPhase::Expired]
        .map(KeyPhase::as_str)
        .to_vec()
}

/// The names of every write action, for the schemas' enums.
pub(crate) fn action_names() -> Vec<&'static str> {
    Action::ALL.map(Action::as_str).to_vec()
}

/// A ticket as tools show it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TicketOut {
    /// The ticket's id (a UUID).
    pub id: String,
    /// Project slug.
    pub project_id: String,
    /// One-line summary.
    pub title: String,
    /// Longer text, or null.
    pub description: Option<String>,
    /// How urgent.
    #[schemars(extend("enum" = priority_names()))]
    pub priority: String,
    /// Where it is in its life.
    #[schemars(extend("enum" = status_names()))]
    pub status: String,
    /// Who works on it, or null.
    pub assignee: Option<String>,
    /// 1 at creation, +1 for every change: pass it as expected_version.
    #[schemars(transform = plain_integer)]
    pub version: i64,
    /// When it was created (RFC 3339).
    pub created_at: String,
    /// When it last changed (RFC 3339), or null if it never did.
    pub updated_at: Option<String>,
    /// Its labels, alphabetical; empty when it has none.
    pub labels: Vec<String>,
}

impl From<&Ticket> for TicketOut {
    fn from(t: &Ticket) -> Self {
        Self {
            id: t.id.to_string(),
            project_id: t.project_id.as_str().into(),
            title: t.title.as_str().into(),
            description: t.description.as_ref().map(|d| d.as_str().into()),
            priority: t.priority.as_str().into(),
            status: t.status.as_str().into(),
            assignee: t.assignee.as_ref().map(|a| a.as_str().into()),
            version: t.version.get(),
            created_at: rfc3339(t.created_at),
            updated_at: t.updated_at.map(rfc3339),
            labels: t
                .labels
                .as_slice()
                .iter()
                .map(|l| l.as_str().into())
                .collect(),
        }
    }
}

/// A comment as tools show it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CommentOut {
    /// The comment's id (a UUID).
    pub id: String,
    /// The ticket it is on.
    pub ticket_id: String,
    /// The text.
    pub body: String,
    /// When it was added (RFC 3339).
    pub created_at: String,
}

impl From<&Comment> for CommentOut {
    fn from(c: &Comment) -> Self {
        Self {
            id: c.id.to_string(),
            ticket_id: c.ticket_id.to_string(),
            body: c.body.as_str().into(),
            created_at: rfc3339(c.created_at),
        }
    }
}

/// A field's problem.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FieldError {
    /// The argument.
    pub field: String,
    /// Stable reason, e.g. too_long.
    pub code: String,
    /// What is wrong and what a valid value looks like.
    pub message: String,
}

impl From<FieldViolation> for FieldError {
    fn from(v: FieldViolation) -> Self {
        Self {
            field: v.field,
            code: v.code.into(),
            message: v.message,
        }
    }
}

/// What `create_ticket` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CreateTicketResult {
    /// created, replayed, expired, conflict, invalid, in_progress, not_created or unknown.
    #[schemars(extend("enum" = [
        "created",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "in_progress",
        "not_created",
        "unknown"
    ]))]
    pub status: String,
    /// The operation_id of this call.
    pub operation_id: Option<String>,
    /// The ticket, when created or replayed; when expired, as it is now.
    pub ticket: Option<TicketOut>,
    /// For invalid: each argument and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// For conflict: what this operation_id already did (never its arguments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_operation: Option<OriginalOperation>,
    /// For not_created and unknown: what the ticket provider said, or what is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For in_progress, unknown and an unreachable provider: seconds to wait before retrying.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = plain_integer)]
    pub retry_after_seconds: Option<u64>,
    /// Until when a retry returns the first answer (RFC 3339); after it, expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayable_until: Option<String>,
    /// What to do next, in one sentence.
    pub next_step: String,
}

// What a conflicting create learns of the operation that owns its key: only
// what the caller does not already have (the key is its own), so that a
// caller that lost the first answer can find its ticket. (The doc comment
// below is the output schema's description, read by models.)
/// The first use of this operation_id: when, and the ticket it concerned.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OriginalOperation {
    /// When this operation_id was first used (RFC 3339).
    pub first_used_at: String,
    /// The ticket it created, changed or commented on, once it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_id: Option<String>,
}

impl From<&OperationRef> for OriginalOperation {
    fn from(operation: &OperationRef) -> Self {
        Self {
            first_used_at: rfc3339(operation.created_at),
            ticket_id: operation.resource.map(|id| id.to_string()),
        }
    }
}

/// What `update_ticket`, `transition_ticket`, `add_label` and
/// `remove_label` answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TicketWriteResult {
    /// updated, replayed, expired, conflict, invalid, not_found, version_mismatch,
    /// transition_not_allowed (transition_ticket), label_limit_reached (add_label), in_progress,
    /// and where tickets are kept in a provider not_at_provider, not_supported_by_provider
    /// (add_label, remove_label), not_created or unknown.
    #[schemars(extend("enum" = [
        "updated",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "not_found",
        "version_mismatch",
        "transition_not_allowed",
        "label_limit_reached",
        "in_progress",
        "not_at_provider",
        "not_supported_by_provider",
        "not_created",
        "unknown"
    ]))]
    pub status: String,
    /// The operation_id of this call.
    pub operation_id: Option<String>,
    /// The ticket as this change left it, when updated or replayed (it may have changed since);
    /// when expired, as it is now.
    pub ticket: Option<TicketOut>,
    /// For invalid: each argument and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// For conflict: what this operation_id already did (never its arguments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_operation: Option<OriginalOperation>,
    /// For version_mismatch: the ticket's version now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = plain_integer)]
    pub current_version: Option<i64>,
    /// For transition_not_allowed: the ticket's status now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_status: Option<String>,
    /// For transition_not_allowed: the statuses it may move to from current_status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_moves: Option<Vec<String>>,
    /// For not_created and unknown: what the ticket provider said, or what is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For in_progress, unknown and an unreachable provider: seconds to wait before retrying.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = plain_integer)]
    pub retry_after_seconds: Option<u64>,
    /// Until when a retry returns the first answer (RFC 3339); after it, expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayable_until: Option<String>,
    /// What to do next, in one sentence.
    pub next_step: String,
}

/// What `add_comment` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CommentWriteResult {
    /// created, replayed, expired, conflict, invalid, not_found, version_mismatch,
    /// in_progress, and where tickets are kept in a provider not_at_provider, not_created
    /// or unknown.
    #[schemars(extend("enum" = [
        "created",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "not_found",
        "version_mismatch",
        "in_progress",
        "not_at_provider",
        "not_created",
        "unknown"
    ]))]
    pub status: String,
    /// The operation_id of this call.
    pub operation_id: Option<String>,
    /// The comment, when created or replayed; when expired, as it is now.
    pub comment: Option<CommentOut>,
    /// For invalid: each argument and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// For conflict: what this operation_id already did (never its arguments).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_operation: Option<OriginalOperation>,
    /// For version_mismatch: the ticket's version now.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = plain_integer)]
    pub current_version: Option<i64>,
    /// For not_created and unknown: what the ticket provider said, or what is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For in_progress, unknown and an unreachable provider: seconds to wait before retrying.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = plain_integer)]
    pub retry_after_seconds: Option<u64>,
    /// Until when a retry returns the first answer (RFC 3339); after it, expired.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replayable_until: Option<String>,
    /// What to do next, in one sentence.
    pub next_step: String,
}

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

/// What `preview_ticket` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PreviewResult {
    /// Whether create_ticket would accept these arguments.
    pub valid: bool,
    /// The ticket it would make (without the id, status and time the server assigns).
    pub preview: Option<TicketPreview>,
    /// Each argument and why, when not valid.
    pub errors: Vec<FieldError>,
    /// What to do next, in one sentence.
    pub next_step: String,
}

/// The ticket `create_ticket` would make, defaults filled in.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TicketPreview {
    /// Project slug.
    pub project_id: String,
    /// One-line summary.
    pub title: String,
    /// Longer text, or null.
    pub description: Option<String>,
    /// low, normal, high or urgent.
    pub priority: String,
}

/// What `get_ticket` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TicketResult {
    /// The ticket.
    pub ticket: TicketOut,
}

/// What `list_tickets` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct TicketListResult {
    /// The tickets, newest first.
    pub tickets: Vec<TicketOut>,
    /// Pass as cursor for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// What `list_comments` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CommentListResult {
    /// The comments, oldest first.
    pub comments: Vec<CommentOut>,
    /// Pass as cursor for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// A tool error that is not about a write: what went wrong and what to do.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ToolProblem {
    /// Stable reason, e.g. not_found or invalid.
    pub error: String,
    /// Each argument and why, when arguments are invalid.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    /// What to do next, in one sentence.
    pub next_step: String,
}

#[cfg(test)]
mod tests;
