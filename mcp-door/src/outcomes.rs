//! The one translation of kitchen outcomes into tool results: what a
//! create's [`Outcome`] becomes (status, `next_step`, error flag, retry
//! advice), and the small builders every tool answers with. The MCP
//! counterpart of the REST door's `error.rs`.

use kitchen::{FieldViolation, KitchenError, NotCreatedReason, OperationKey, Outcome};
use rmcp::ErrorData as McpError;
use rmcp::model::CallToolResult;
use serde::Serialize;

use crate::contract;
use crate::results::{CreateTicketResult, FieldError, OriginalOperation, TicketOut, ToolProblem};

/// The one translation of a create's outcome into a tool result.
pub(crate) fn create_result(key: &OperationKey, outcome: Outcome) -> CallToolResult {
    let base = |status: &str, next_step: &str| CreateTicketResult {
        status: status.into(),
        operation_id: Some(key.as_str().into()),
        ticket: None,
        errors: None,
        original_operation: None,
        reason: None,
        retry_after_seconds: None,
        next_step: next_step.into(),
    };
    match outcome {
        Outcome::Created(receipt) => structured(&CreateTicketResult {
            ticket: Some(TicketOut::from(&receipt.ticket)),
            ..base("created", contract::CREATED)
        }),
        Outcome::Replayed(receipt) => structured(&CreateTicketResult {
            ticket: Some(TicketOut::from(&receipt.ticket)),
            ..base("replayed", contract::REPLAYED)
        }),
        Outcome::Conflict { original } => {
            let original = OriginalOperation::from(&original);
            let next_step = contract::conflict(original.ticket_id.as_deref());
            structured_error(&CreateTicketResult {
                original_operation: Some(original),
                ..base("conflict", &next_step)
            })
        }
        Outcome::Invalid { violations } => invalid_create(Some(key.as_str().into()), violations),
        Outcome::InProgress { retry_after } => structured(&CreateTicketResult {
            retry_after_seconds: Some(retry_after.as_secs().max(1)),
            ..base("in_progress", contract::IN_PROGRESS)
        }),
        Outcome::NotCreated {
            operation: _,
            reason,
        } => {
            let (retry_after_seconds, next_step) = match &reason {
                NotCreatedReason::Rejected(_) => (None, contract::NOT_CREATED_REJECTED),
                NotCreatedReason::Unavailable(_) => (
                    Some(PROVIDER_RETRY_AFTER_SECONDS),
                    contract::NOT_CREATED_UNAVAILABLE,
                ),
            };
            structured_error(&CreateTicketResult {
                reason: Some(reason.detail().into()),
                retry_after_seconds,
                ..base("not_created", next_step)
            })
        }
        Outcome::Unknown {
            operation: _,
            reason,
        } => structured(&CreateTicketResult {
            reason: Some(reason),
            retry_after_seconds: Some(PROVIDER_RETRY_AFTER_SECONDS),
            ..base("unknown", contract::UNKNOWN)
        }),
    }
}

/// Seconds to wait before retrying when the provider is unreachable or its
/// answer was lost: time for the service to reconcile.
const PROVIDER_RETRY_AFTER_SECONDS: u64 = 2;

pub(crate) fn invalid_create(
    operation_id: Option<String>,
    violations: Vec<FieldViolation>,
) -> CallToolResult {
    structured_error(&CreateTicketResult {
        status: "invalid".into(),
        operation_id,
        ticket: None,
        errors: Some(violations.into_iter().map(FieldError::from).collect()),
        original_operation: None,
        reason: None,
        retry_after_seconds: None,
        next_step: contract::INVALID_CREATE.into(),
    })
}

pub(crate) fn problem(
    error: &str,
    violations: Vec<FieldViolation>,
    next_step: &str,
) -> CallToolResult {
    structured_error(&ToolProblem {
        error: error.into(),
        errors: violations.into_iter().map(FieldError::from).collect(),
        next_step: next_step.into(),
    })
}

pub(crate) fn structured<T: Serialize>(value: &T) -> CallToolResult {
    CallToolResult::structured(serde_json::to_value(value).unwrap_or_default())
}

pub(crate) fn structured_error<T: Serialize>(value: &T) -> CallToolResult {
    CallToolResult::structured_error(serde_json::to_value(value).unwrap_or_default())
}

/// An infrastructure failure: logged in full, answered opaquely, with what
/// the caller can still do.
pub(crate) fn unexpected(error: KitchenError) -> McpError {
    let mut chain = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!(error = %chain, "tool call failed");
    McpError::internal_error(contract::INTERNAL, None)
}

#[cfg(test)]
mod tests {
    use kitchen::{Action, OperationRef};
    use rmcp::handler::server::tool::schema_for_output;
    use serde_json::Value;

    use super::*;

    const KEY: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79";

    fn key() -> OperationKey {
        OperationKey::parse(KEY).expect("a key")
    }

    fn operation() -> OperationRef {
        OperationRef {
            action: Action::CreateTicket,
            key: key(),
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            resource: None,
        }
    }

    fn content(result: &CallToolResult) -> &Value {
        result
            .structured_content
            .as_ref()
            .expect("structured content")
    }

    fn next_step(result: &CallToolResult) -> &str {
        content(result)["next_step"].as_str().expect("a next_step")
    }

    #[test]
    fn an_unknown_outcome_is_not_an_error_and_keeps_the_operation_id() {
        let result = create_result(
            &key(),
            Outcome::Unknown {
                operation: operation(),
                reason: "The provider's answer was lost.".into(),
            },
        );
        assert_ne!(result.is_error, Some(true));
        let body = content(&result);
        assert_eq!(body["status"], "unknown");
        assert_eq!(body["operation_id"], KEY);
        assert_eq!(body["ticket"], Value::Null);
        assert_eq!(body["reason"], "The provider's answer was lost.");
        let wait = body["retry_after_seconds"].as_u64().expect("a wait");
        assert!((1..=2).contains(&wait), "{wait}");
        let step = next_step(&result);
        assert!(step.contains("same operation_id"), "{step}");
        assert!(step.contains("get_operation_status"), "{step}");
        assert!(step.contains("do not invent a new operation_id"), "{step}");
    }

    #[test]
    fn a_refused_ticket_is_an_error_that_keeps_the_operation_id() {
        let result = create_result(
            &key(),
            Outcome::NotCreated {
                operation: operation(),
                reason: NotCreatedReason::Rejected("title: too short".into()),
            },
        );
        assert_eq!(result.is_error, Some(true));
        let body = content(&result);
        assert_eq!(body["status"], "not_created");
        assert_eq!(body["operation_id"], KEY);
        assert_eq!(body["ticket"], Value::Null);
        assert_eq!(body["reason"], "title: too short");
        assert!(body.get("retry_after_seconds").is_none(), "{body}");
        let step = next_step(&result);
        assert!(step.contains("Nothing was created"), "{step}");
        assert!(step.contains("correct the arguments"), "{step}");
        assert!(step.contains("same operation_id"), "{step}");
    }

    #[test]
    fn an_unreachable_provider_is_an_error_that_says_retry_later() {
        let result = create_result(
            &key(),
            Outcome::NotCreated {
                operation: operation(),
                reason: NotCreatedReason::Unavailable("connection refused".into()),
            },
        );
        assert_eq!(result.is_error, Some(true));
        let body = content(&result);
        assert_eq!(body["status"], "not_created");
        assert_eq!(body["operation_id"], KEY);
        assert_eq!(body["reason"], "connection refused");
        assert!(body["retry_after_seconds"].as_u64().is_some(), "{body}");
        let step = next_step(&result);
        assert!(step.contains("Nothing was created"), "{step}");
        assert!(step.contains("later"), "{step}");
        assert!(step.contains("same operation_id and arguments"), "{step}");
    }

    #[test]
    fn a_conflict_leads_with_the_ticket_the_operation_id_already_made() {
        const TICKET: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a";
        let made = OperationRef {
            resource: Some(TICKET.parse().expect("a ticket id")),
            ..operation()
        };
        let result = create_result(&key(), Outcome::Conflict { original: made });
        assert_eq!(result.is_error, Some(true));
        let body = content(&result);
        assert_eq!(body["status"], "conflict");
        assert_eq!(
            body["original_operation"],
            serde_json::json!({"first_used_at": "1970-01-01T00:00:00Z", "ticket_id": TICKET})
        );
        let step = next_step(&result);
        assert!(
            step.starts_with(&format!(
                "If you meant the same ticket, it already exists (ticket_id {TICKET}): read it \
                 with get_operation_status using this same operation_id; only for a genuinely \
                 different ticket invent a new operation_id"
            )),
            "{step}"
        );

        // Not made yet (a provider's ticket still in flight): no id to give.
        let result = create_result(
            &key(),
            Outcome::Conflict {
                original: operation(),
            },
        );
        let body = content(&result);
        assert_eq!(
            body["original_operation"],
            serde_json::json!({"first_used_at": "1970-01-01T00:00:00Z"})
        );
        let step = next_step(&result);
        assert!(
            step.starts_with("If you meant the same ticket, it was already requested"),
            "{step}"
        );
        assert!(step.contains("get_operation_status"), "{step}");
    }

    #[test]
    fn the_output_schema_lists_every_status() {
        let schema = serde_json::to_value(schema_for_output::<CreateTicketResult>().as_ref())
            .expect("a schema");
        let statuses = &schema["properties"]["status"]["enum"];
        for status in [
            "created",
            "replayed",
            "conflict",
            "invalid",
            "in_progress",
            "not_created",
            "unknown",
        ] {
            assert!(
                statuses
                    .as_array()
                    .is_some_and(|s| s.contains(&status.into())),
                "{status} in {statuses}"
            );
        }
    }
}
