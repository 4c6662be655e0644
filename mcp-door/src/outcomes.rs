//! The one translation of kitchen outcomes into tool results: what a
//! write's [`Outcome`] becomes (status, `next_step`, error flag, retry
//! advice), and the small builders every tool answers with. The MCP
//! counterpart of the REST door's `error.rs`.
//!
//! Two policies are not decided here but taken from the kitchen, so that
//! both doors agree: whether an outcome is a tool error
//! ([`Outcome::is_caller_mistake`]) and how long to wait before a retry
//! ([`Outcome::retry_after`]). Every answer that shows no effect also
//! carries the failure record in its `_meta` ([`Failure`], built in
//! `failure.rs`): the builders below say which.

use kitchen::{
    Action, Comment, FieldViolation, KitchenError, NotCreatedReason, OperationKey, Outcome,
    Refusal, StorageFault, Ticket, Written,
};
use kitchen::{error_chain, whole_seconds};
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use serde::Serialize;
use telemetry::ContractFailure;

use crate::contract;
use crate::failure::Failure;
use crate::result_text;
use crate::results::{
    CommentOut, CommentWriteResult, CreateTicketResult, FieldError, OriginalOperation,
    PossibleDuplicateOf, TicketOut, TicketWriteResult, ToolProblem,
};
use crate::vocabulary::{ResultShape, words};

/// What one write's outcome says, whatever the write made (`T`): the one
/// outcome table, read by each write tool's result builder below.
struct Said<T> {
    /// The result's `status`.
    status: &'static str,
    /// What the write made, when it happened (now or before).
    made: Option<T>,
    /// For `invalid`.
    errors: Option<Vec<FieldError>>,
    /// For `conflict`.
    original_operation: Option<OriginalOperation>,
    /// For `possible_duplicate`, and a write the guard warned about.
    possible_duplicate_of: Option<PossibleDuplicateOf>,
    /// For `not_created` and `unknown`.
    reason: Option<String>,
    /// The refusal, for the fields only the ticket writes show.
    refusal: Option<Refusal>,
    /// From the kitchen's policy.
    retry_after_seconds: Option<u64>,
    /// The operation's replay horizon, when the outcome has an operation.
    replayable_until: Option<String>,
    /// What to do next.
    next_step: String,
    /// From the kitchen's policy: the caller must change something first.
    is_error: bool,
}

impl<T> Said<T> {
    /// The failure record of a write that shows no effect (nothing made,
    /// now or before): every tool error, and `in_progress`, `unknown` and
    /// a `not_created` worth retrying.
    fn failure<'a>(&self, action: Action, key: &'a OperationKey) -> Option<Failure<'a>> {
        self.made.is_none().then(|| Failure {
            tool: action.as_str(),
            code: self.status,
            operation_id: Some(key.as_str()),
            retry_after_seconds: self.retry_after_seconds,
        })
    }
}

/// The one table: every outcome of every write action, in words.
fn said<T>(action: Action, outcome: Outcome<T>) -> Said<T> {
    // The kitchen's policies, read before the outcome is taken apart.
    let retry_after_seconds = outcome.retry_after().map(whole_seconds);
    let is_error = outcome.is_caller_mistake();
    let replayable_until = replay_horizon(&outcome);
    let base = |status: &'static str, next_step: String| Said {
        status,
        made: None,
        errors: None,
        original_operation: None,
        possible_duplicate_of: None,
        reason: None,
        refusal: None,
        retry_after_seconds,
        replayable_until: replayable_until.clone(),
        next_step,
        is_error,
    };
    // The success status of each action: a ticket write changes a ticket.
    let done = words(action).done;
    match outcome {
        Outcome::Created(receipt) => match receipt.possible_duplicate_of.as_ref() {
            None => Said {
                made: Some(receipt.result),
                ..base(done, result_text::done(action))
            },
            Some(earlier) => {
                let earlier = PossibleDuplicateOf::from(earlier);
                let next_step = result_text::possible_duplicate_made(
                    action,
                    &earlier.operation_id,
                    &earlier.created_at,
                );
                Said {
                    made: Some(receipt.result),
                    possible_duplicate_of: Some(earlier),
                    ..base(done, next_step)
                }
            }
        },
        Outcome::Replayed(receipt) => Said {
            made: Some(receipt.result),
            ..base("replayed", result_text::replayed(action).into_owned())
        },
        Outcome::Expired(expired) => {
            let next_step = result_text::expired(
                action,
                expired
                    .operation
                    .resource
                    .map(|id| id.to_string())
                    .as_deref(),
                &kitchen::rfc3339(expired.operation.created_at),
            );
            Said {
                made: Some(expired.current),
                ..base("expired", next_step)
            }
        }
        Outcome::Conflict { original } => {
            let original = OriginalOperation::from(&original);
            let next_step = result_text::conflict(action, original.ticket_id.as_deref());
            Said {
                original_operation: Some(original),
                ..base("conflict", next_step)
            }
        }
        Outcome::Invalid { violations } => Said {
            errors: Some(violations.into_iter().map(FieldError::from).collect()),
            ..base("invalid", result_text::invalid(action))
        },
        Outcome::Refused(refusal) => {
            let (status, next_step) = match &refusal {
                Refusal::TicketNotFound { ticket_id: _ } => {
                    ("not_found", result_text::ticket_not_found(action))
                }
                Refusal::VersionMismatch { expected, current } => (
                    "version_mismatch",
                    result_text::version_mismatch(action, *expected, *current),
                ),
                Refusal::TransitionNotAllowed {
                    from,
                    to: _,
                    allowed,
                } => (
                    "transition_not_allowed",
                    result_text::transition_not_allowed(*from, allowed),
                ),
                Refusal::LabelLimitReached {
                    ticket_id: _,
                    limit,
                } => (
                    "label_limit_reached",
                    result_text::label_limit_reached(*limit),
                ),
                Refusal::NotAtProvider { ticket_id: _ } => {
                    ("not_at_provider", result_text::not_at_provider(action))
                }
                Refusal::NotSupportedByProvider { action: _ } => (
                    "not_supported_by_provider",
                    result_text::not_supported_by_provider(action),
                ),
                Refusal::PossibleDuplicate { of } => (
                    "possible_duplicate",
                    result_text::possible_duplicate_refused(
                        action,
                        of.key.as_str(),
                        &kitchen::rfc3339(of.created_at),
                    ),
                ),
            };
            let possible_duplicate_of = if let Refusal::PossibleDuplicate { of } = &refusal {
                Some(PossibleDuplicateOf::from(of))
            } else {
                None
            };
            Said {
                refusal: Some(refusal),
                possible_duplicate_of,
                ..base(status, next_step)
            }
        }
        Outcome::InProgress { retry_after: _ } => {
            base("in_progress", result_text::in_progress(action))
        }
        Outcome::NotCreated {
            operation: _,
            reason,
        } => {
            let next_step = match &reason {
                NotCreatedReason::Rejected(_) => result_text::not_created_rejected(action),
                NotCreatedReason::Unavailable(_) => result_text::not_created_unavailable(action),
            };
            Said {
                reason: Some(reason.detail().into()),
                ..base("not_created", next_step)
            }
        }
        Outcome::Unknown {
            operation: _,
            reason,
            gave_up,
        } => {
            let next_step = if gave_up {
                result_text::gave_up(action)
            } else {
                result_text::unknown(action)
            };
            Said {
                reason: Some(reason),
                ..base("unknown", next_step)
            }
        }
    }
}

/// Until when a retry with the outcome's operation_id replays the first
/// answer: the horizon of the operation the outcome knows (for a conflict,
/// the original's, which owns the key). An outcome that did not touch the
/// key, or holds no operation, has none to advertise. RFC 3339.
fn replay_horizon<T>(outcome: &Outcome<T>) -> Option<String> {
    let until = match outcome {
        Outcome::Created(receipt) | Outcome::Replayed(receipt) => {
            Some(receipt.operation.replayable_until)
        }
        Outcome::Expired(expired) => Some(expired.operation.replayable_until),
        Outcome::Conflict {
            original: operation,
        }
        | Outcome::NotCreated { operation, .. }
        | Outcome::Unknown { operation, .. } => Some(operation.replayable_until),
        Outcome::Invalid { .. } | Outcome::Refused(_) | Outcome::InProgress { .. } => None,
    };
    until.map(kitchen::rfc3339)
}

/// A statement that a write answered with a status its tool does not
/// publish: the kitchen and this door disagree on what an action can
/// answer. Logged, and answered opaquely.
fn unpublished(action: Action, status: &str) -> McpError {
    tracing::error!(
        action = action.as_str(),
        status,
        "a write answered a status its tool does not publish"
    );
    McpError::internal_error(result_text::INTERNAL, None)
}

/// The tool result of a create. A create is never refused: the kitchen has
/// no ticket to refuse it for.
pub(crate) fn create_result(
    key: &OperationKey,
    outcome: Outcome,
) -> Result<CallToolResult, McpError> {
    let said = said(Action::CreateTicket, outcome);
    // A create is refused only by the likely-duplicate guard: the kitchen
    // has no ticket to refuse it for.
    if said
        .refusal
        .as_ref()
        .is_some_and(|r| !matches!(r, Refusal::PossibleDuplicate { .. }))
    {
        return Err(unpublished(Action::CreateTicket, said.status));
    }
    Ok(answer(
        said.is_error,
        said.failure(Action::CreateTicket, key),
        &CreateTicketResult {
            status: said.status.into(),
            operation_id: Some(key.as_str().into()),
            ticket: said.made.as_ref().map(TicketOut::from),
            errors: said.errors,
            original_operation: said.original_operation,
            possible_duplicate_of: said.possible_duplicate_of,
            reason: said.reason,
            retry_after_seconds: said.retry_after_seconds,
            replayable_until: said.replayable_until,
            next_step: said.next_step,
        },
    ))
}

/// The tool result of `update_ticket` or `transition_ticket`.
pub(crate) fn ticket_write_result(
    action: Action,
    key: &OperationKey,
    outcome: Outcome<Ticket>,
) -> Result<CallToolResult, McpError> {
    let said = said(action, outcome);
    let (current_version, current_status, allowed_moves) = match &said.refusal {
        Some(Refusal::VersionMismatch {
            expected: _,
            current,
        }) => (Some(current.get()), None, None),
        Some(Refusal::TransitionNotAllowed {
            from,
            to: _,
            allowed,
        }) => (
            None,
            Some(from.as_str().into()),
            Some(allowed.iter().map(|s| s.as_str().into()).collect()),
        ),
        // Only creates and comments meet the likely-duplicate guard.
        Some(Refusal::PossibleDuplicate { .. }) => {
            return Err(unpublished(action, said.status));
        }
        Some(
            Refusal::TicketNotFound { .. }
            | Refusal::LabelLimitReached { .. }
            | Refusal::NotAtProvider { .. }
            | Refusal::NotSupportedByProvider { .. },
        )
        | None => (None, None, None),
    };
    Ok(answer(
        said.is_error,
        said.failure(action, key),
        &TicketWriteResult {
            status: said.status.into(),
            operation_id: Some(key.as_str().into()),
            ticket: said.made.as_ref().map(TicketOut::from),
            errors: said.errors,
            original_operation: said.original_operation,
            current_version,
            current_status,
            allowed_moves,
            reason: said.reason,
            retry_after_seconds: said.retry_after_seconds,
            replayable_until: said.replayable_until,
            next_step: said.next_step,
        },
    ))
}

/// The tool result of `add_comment`.
pub(crate) fn comment_write_result(
    key: &OperationKey,
    outcome: Outcome<Comment>,
) -> Result<CallToolResult, McpError> {
    let said = said(Action::AddComment, outcome);
    // A comment write is refused for its ticket or the ticket's version;
    // the status refusal belongs to transition_ticket.
    let current_version = match &said.refusal {
        Some(Refusal::TransitionNotAllowed { .. }) => {
            return Err(unpublished(Action::AddComment, said.status));
        }
        Some(Refusal::VersionMismatch {
            expected: _,
            current,
        }) => Some(current.get()),
        Some(
            Refusal::TicketNotFound { .. }
            | Refusal::LabelLimitReached { .. }
            | Refusal::NotAtProvider { .. }
            | Refusal::NotSupportedByProvider { .. }
            | Refusal::PossibleDuplicate { .. },
        )
        | None => None,
    };
    Ok(answer(
        said.is_error,
        said.failure(Action::AddComment, key),
        &CommentWriteResult {
            status: said.status.into(),
            operation_id: Some(key.as_str().into()),
            comment: said.made.as_ref().map(CommentOut::from),
            errors: said.errors,
            original_operation: said.original_operation,
            possible_duplicate_of: said.possible_duplicate_of,
            current_version,
            reason: said.reason,
            retry_after_seconds: said.retry_after_seconds,
            replayable_until: said.replayable_until,
            next_step: said.next_step,
        },
    ))
}

/// The `invalid` answer of a write whose arguments the door refused before
/// the kitchen saw them (so the key was not touched), in the result shape
/// of `action`'s tool. `operation_id` is the caller's, as sent, if any.
pub(crate) fn invalid_write(
    action: Action,
    operation_id: Option<String>,
    violations: Vec<FieldViolation>,
) -> CallToolResult {
    let errors = Some(violations.into_iter().map(FieldError::from).collect());
    let next_step = result_text::invalid(action);
    let failure = Failure {
        tool: action.as_str(),
        code: "invalid",
        // Only an operation_id that is one names an operation.
        operation_id: operation_id
            .as_deref()
            .filter(|raw| OperationKey::parse(*raw).is_ok()),
        retry_after_seconds: None,
    };
    let result = match words(action).result {
        ResultShape::NewTicket => structured_error(&CreateTicketResult {
            status: "invalid".into(),
            operation_id: operation_id.clone(),
            ticket: None,
            errors,
            original_operation: None,
            possible_duplicate_of: None,
            reason: None,
            retry_after_seconds: None,
            replayable_until: None,
            next_step,
        }),
        ResultShape::ChangedTicket => structured_error(&TicketWriteResult {
            status: "invalid".into(),
            operation_id: operation_id.clone(),
            ticket: None,
            errors,
            original_operation: None,
            current_version: None,
            current_status: None,
            allowed_moves: None,
            reason: None,
            retry_after_seconds: None,
            replayable_until: None,
            next_step,
        }),
        ResultShape::Comment => structured_error(&CommentWriteResult {
            status: "invalid".into(),
            operation_id: operation_id.clone(),
            comment: None,
            errors,
            original_operation: None,
            possible_duplicate_of: None,
            current_version: None,
            reason: None,
            retry_after_seconds: None,
            replayable_until: None,
            next_step,
        }),
    };
    failure.attach(result)
}

/// A read tool's problem (`invalid`, `not_found`) as a tool error: its
/// JSON as text only. A read tool's output schema describes what it reads
/// (a ticket, a page), and the spec says structured content must conform
/// to it, so a problem sent as structured content would break the schema
/// (the MCP Inspector fails the call on it). The write tools' schemas
/// include their problems, so theirs stay structured.
/// It carries the failure record, with no operation: a read names none.
pub(crate) fn problem(
    tool: &str,
    error: &str,
    violations: Vec<FieldViolation>,
    next_step: &str,
) -> CallToolResult {
    let problem = ToolProblem {
        error: error.into(),
        errors: violations.into_iter().map(FieldError::from).collect(),
        next_step: next_step.into(),
    };
    let result = CallToolResult::error(vec![rmcp::model::ContentBlock::text(
        serde_json::to_string(&problem).unwrap_or_default(),
    )]);
    Failure {
        tool,
        code: error,
        operation_id: None,
        retry_after_seconds: None,
    }
    .attach(result)
}

/// A write's tool result, with what its attempt is measured as.
pub(crate) struct Answered {
    /// The tool result.
    pub(crate) result: CallToolResult,
    /// The outcome's name.
    pub(crate) outcome: &'static str,
    /// For a broken contract, its kind.
    pub(crate) failure: Option<ContractFailure>,
    /// For an outcome that is not final (the write still runs, or its
    /// effect is unknown), what a task for it says meanwhile.
    pub(crate) pending: Option<String>,
}

impl Answered {
    /// A final answer.
    pub(crate) fn new(
        result: CallToolResult,
        outcome: &'static str,
        failure: Option<ContractFailure>,
    ) -> Self {
        Self {
            result,
            outcome,
            failure,
            pending: None,
        }
    }
}

/// `value` as a write's tool result: a tool error when `is_error`; with
/// `failure`'s record when the write shows no effect.
fn answer<T: Serialize>(is_error: bool, failure: Option<Failure<'_>>, value: &T) -> CallToolResult {
    let result = if is_error {
        structured_error(value)
    } else {
        structured(value)
    };
    match failure {
        Some(failure) => failure.attach(result),
        None => result,
    }
}

pub(crate) fn structured<T: Serialize>(value: &T) -> CallToolResult {
    CallToolResult::structured(serde_json::to_value(value).unwrap_or_default())
}

pub(crate) fn structured_error<T: Serialize>(value: &T) -> CallToolResult {
    CallToolResult::structured_error(serde_json::to_value(value).unwrap_or_default())
}

/// An infrastructure failure: logged in full, answered opaquely, with what
/// the caller can still do.
///
/// A storage fault (the database cannot be used right now) is no bug: a
/// retryable JSON-RPC error with code
/// [`DATABASE_UNAVAILABLE`](contract::DATABASE_UNAVAILABLE),
/// whose `data` says why, whether anything was written and when to call
/// again, as the REST door's `503 database-unavailable` does.
pub(crate) fn unexpected(error: KitchenError) -> McpError {
    let chain = error_chain(&error);
    if let Some((fault, written)) = error.storage_fault() {
        tracing::warn!(error = %chain, %fault, "tool call failed: the database is unavailable");
        return database_unavailable(fault, written);
    }
    tracing::error!(error = %chain, "tool call failed");
    McpError::internal_error(result_text::INTERNAL, None)
}

/// The JSON-RPC error for a storage fault.
pub(crate) fn database_unavailable(fault: StorageFault, written: Written) -> McpError {
    McpError::new(
        rmcp::model::ErrorCode(contract::DATABASE_UNAVAILABLE as i32),
        contract::database_unavailable(fault, written),
        Some(serde_json::json!({
            "reason": fault.as_str(),
            "retry_after_seconds": whole_seconds(fault.retry_after()),
            "nothing_written": written == Written::Nothing,
        })),
    )
}

#[cfg(test)]
mod tests;
