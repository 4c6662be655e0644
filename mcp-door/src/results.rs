//! Tool results: structured content, described by each tool's output schema.

use kitchen::{FieldViolation, OperationRecord, Ticket, rfc3339};
use schemars::JsonSchema;
use serde::Serialize;

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
    /// low, normal, high or urgent.
    pub priority: String,
    /// open.
    pub status: String,
    /// When it was created (RFC 3339).
    pub created_at: String,
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
            created_at: rfc3339(t.created_at),
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
    /// created, replayed, conflict, invalid or in_progress.
    #[schemars(extend("enum" = ["created", "replayed", "conflict", "invalid", "in_progress"]))]
    pub status: String,
    /// The operation_id of this call.
    pub operation_id: Option<String>,
    /// The ticket, when created or replayed.
    pub ticket: Option<TicketOut>,
    /// For invalid: each argument and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<FieldError>>,
    /// For conflict: the operation_id that already names another ticket request (never its content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_operation_id: Option<String>,
    /// For in_progress: seconds to wait before retrying.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    /// What to do next, in one sentence.
    pub next_step: String,
}

/// What `get_operation_status` answers.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OperationStatusResult {
    /// succeeded (the ticket exists) or not_found (nothing recorded: retrying is safe).
    #[schemars(extend("enum" = ["succeeded", "not_found"]))]
    pub state: String,
    /// The operation_id looked up.
    pub operation_id: String,
    /// The ticket, when created.
    pub ticket: Option<TicketOut>,
    /// Until when the record is kept (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retained_until: Option<String>,
    /// Whether calling create_ticket again with this operation_id and the same arguments is safe.
    pub retry_safe: bool,
    /// What to do next, in one sentence.
    pub next_step: String,
}

impl OperationStatusResult {
    /// The status of a recorded operation.
    pub fn recorded(record: &OperationRecord, ticket: Option<TicketOut>) -> Self {
        Self {
            state: record.state.as_str().into(),
            operation_id: record.key.as_str().into(),
            ticket,
            retained_until: Some(rfc3339(record.retained_until)),
            retry_safe: true,
            next_step:
                "The ticket was created; do not create it again. Retrying create_ticket with \
                        this operation_id and the same arguments returns this ticket."
                    .into(),
        }
    }

    /// The status of a key nothing was recorded for.
    pub fn not_found(operation_id: String) -> Self {
        Self {
            state: "not_found".into(),
            operation_id,
            ticket: None,
            retained_until: None,
            retry_safe: true,
            next_step:
                "Nothing was recorded for this operation_id, so no ticket was created: call \
                        create_ticket again with the same operation_id and arguments."
                    .into(),
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

/// A tool error that is not about a create: what went wrong and what to do.
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
