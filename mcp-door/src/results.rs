//! Tool results: structured content, described by each tool's output schema.

use kitchen::{
    Action, Comment, EarlierWrite, FieldViolation, KeyPhase, OperationRef, Priority, Ticket,
    TicketStatus, rfc3339,
};
use schemars::{JsonSchema, Schema};
use serde::Serialize;

mod status;

pub(crate) use status::{Made, OperationStatusResult};

/// Drops schemars' `format` (`uint32`, `uint64`) from an integer field:
/// those are not JSON Schema formats, and validators such as Ajv warn about
/// them on every call. `minimum` stays.
pub(crate) fn plain_integer(schema: &mut Schema) {
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
    /// created, replayed, expired, conflict, invalid, possible_duplicate, in_progress,
    /// not_created or unknown.
    #[schemars(extend("enum" = [
        "created",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "possible_duplicate",
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
    /// For possible_duplicate, and created when the server warns: an earlier call with the
    /// same arguments under another operation_id, within the last minutes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub possible_duplicate_of: Option<PossibleDuplicateOf>,
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

/// The earlier write a new operation_id's call looks like a retry of.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PossibleDuplicateOf {
    /// The operation_id that write used.
    pub operation_id: String,
    /// The ticket it made or acted on, once it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket_id: Option<String>,
    /// The comment it added, once it did (add_comment).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment_id: Option<String>,
    /// When it was made (RFC 3339).
    pub created_at: String,
}

impl From<&EarlierWrite> for PossibleDuplicateOf {
    fn from(earlier: &EarlierWrite) -> Self {
        Self {
            operation_id: earlier.key.as_str().to_owned(),
            ticket_id: earlier.ticket_id.map(|id| id.to_string()),
            comment_id: (earlier.action == Action::AddComment)
                .then_some(earlier.resource_id)
                .flatten()
                .map(|id| id.to_string()),
            created_at: rfc3339(earlier.created_at),
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
    /// possible_duplicate, in_progress, and where tickets are kept in a provider
    /// not_at_provider, not_created or unknown.
    #[schemars(extend("enum" = [
        "created",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "not_found",
        "version_mismatch",
        "possible_duplicate",
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
    /// For possible_duplicate, and created when the server warns: an earlier call with the
    /// same arguments under another operation_id, within the last minutes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub possible_duplicate_of: Option<PossibleDuplicateOf>,
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
