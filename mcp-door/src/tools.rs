//! The tools, and their one translation of kitchen outcomes into results.

use std::sync::OnceLock;

use kitchen::{
    Action, Cursor, FieldViolation, Kitchen, KitchenError, NotCreatedReason, OperationKey, Outcome,
    PageSize, ProjectId, Tenant, TicketId,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde::Serialize;
use telemetry::{Attempt, Door, Metrics};
use tracing::Instrument;

use crate::args::{
    CreateTicketArgs, GetTicketArgs, ListTicketsArgs, OperationStatusArgs, PreviewTicketArgs,
};
use crate::contract;
use crate::results::{
    CreateTicketResult, FieldError, OperationStatusResult, PreviewResult, TicketListResult,
    TicketOut, TicketPreview, TicketResult, ToolProblem,
};

/// Where a call's tenant comes from. Never from a tool argument.
#[derive(Debug, Clone)]
pub enum TenantSource {
    /// Over HTTP: the bearer-token middleware put the tenant into the
    /// request's extensions.
    Http,
    /// Over stdio: the tenant of the token given at start-up.
    Fixed(Tenant),
}

/// The MCP server: five tools over one kitchen.
#[derive(Clone)]
pub struct TicketTools {
    kitchen: Kitchen,
    tenants: TenantSource,
    metrics: Metrics,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TicketTools {
    /// Tools over `kitchen`, with tenants from `tenants`, measured into
    /// `metrics`.
    pub fn new(kitchen: Kitchen, tenants: TenantSource, metrics: Metrics) -> Self {
        Self {
            kitchen,
            tenants,
            metrics,
            tool_router: Self::router_with_contract_hashes(),
        }
    }

    /// The tool definitions, each with its contract hash in `_meta`. Built
    /// once: the stateless transport makes a server per request.
    fn router_with_contract_hashes() -> ToolRouter<Self> {
        static ROUTER: OnceLock<ToolRouter<TicketTools>> = OnceLock::new();
        ROUTER
            .get_or_init(|| {
                let mut router = Self::tool_router();
                for route in router.map.values_mut() {
                    let hash = contract::contract_hash(&route.attr);
                    let mut meta = route.attr.meta.clone().unwrap_or_default();
                    meta.insert(contract::CONTRACT_HASH_META.into(), hash.into());
                    route.attr.meta = Some(meta);
                }
                router
            })
            .clone()
    }

    /// Every tool definition as `tools/list` shows it, contract hashes
    /// included.
    pub fn definitions() -> Vec<rmcp::model::Tool> {
        Self::router_with_contract_hashes().list_all()
    }

    /// The contract hash `tool` publishes.
    fn contract(&self, tool: &str) -> String {
        self.tool_router
            .map
            .get(tool)
            .and_then(|route| route.attr.meta.as_ref())
            .and_then(|meta| meta.get(contract::CONTRACT_HASH_META))
            .and_then(|hash| hash.as_str())
            .unwrap_or_default()
            .to_owned()
    }

    /// Counts a read tool's call (`ok`, `tool_error` or `error`) with its
    /// contract hash, and passes the result on.
    fn counted(
        &self,
        tool: &str,
        result: Result<CallToolResult, McpError>,
    ) -> Result<CallToolResult, McpError> {
        let outcome = match &result {
            Ok(r) if r.is_error == Some(true) => "tool_error",
            Ok(_) => "ok",
            Err(_) => "error",
        };
        self.metrics.tool_call(tool, &self.contract(tool), outcome);
        result
    }

    #[tool(
        name = "create_ticket",
        description = contract::CREATE_TICKET,
        output_schema = schema_for_output::<CreateTicketResult>(),
        annotations(
            title = "Create ticket",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn create_ticket(
        &self,
        Parameters(args): Parameters<CreateTicketArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let tenant = self.tenant(&ctx)?;
        let contract = self.contract("create_ticket");
        // Three identities: the operation key (recorded once parsed), the
        // attempt id (made by Attempt), and the JSON-RPC id of this request.
        let attempt = Attempt::start(
            &self.metrics,
            Door::Mcp,
            Action::CreateTicket.as_str(),
            &tenant,
            &ctx.id.to_string(),
            Some(&contract),
        );
        let answer = self
            .place(&tenant, args, &attempt)
            .instrument(attempt.span().clone())
            .await;
        let (outcome, failure) = match &answer {
            Ok((_, outcome, failure)) => (*outcome, *failure),
            Err(_) => ("error", None),
        };
        attempt.finish(outcome, failure);
        self.metrics.tool_call("create_ticket", &contract, outcome);
        answer.map(|(result, _, _)| result)
    }

    #[tool(
        name = "get_operation_status",
        description = contract::GET_OPERATION_STATUS,
        output_schema = schema_for_output::<OperationStatusResult>(),
        annotations(title = "Get operation status", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_operation_status(
        &self,
        Parameters(args): Parameters<OperationStatusArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let tenant = self.tenant(&ctx)?;
            let raw = args.operation_id.clone().unwrap_or_default();
            let key = match parse_key(args.operation_id) {
                Ok(key) => key,
                // A string that is not a valid key was never recorded.
                Err(_) if !raw.is_empty() => {
                    return Ok(structured(&OperationStatusResult::not_found(raw)));
                }
                Err(violation) => {
                    return Ok(problem(
                        "invalid",
                        vec![violation],
                        "Pass the operation_id of the create_ticket call you want to check.",
                    ));
                }
            };
            // Reconciles an unknown outcome with the provider before answering.
            let status = self
                .kitchen
                .operation_status(tenant.id, Action::CreateTicket, &key)
                .await
                .map_err(unexpected)?;
            let status = match status {
                None => OperationStatusResult::not_found(key.as_str().into()),
                Some(status) => {
                    let ticket = status
                        .record
                        .result
                        .as_ref()
                        .map(|snapshot| snapshot.ticket())
                        .transpose()
                        .map_err(|e| unexpected(KitchenError::CorruptRecord(e.to_string())))?;
                    OperationStatusResult::recorded(&status, ticket.as_ref().map(TicketOut::from))
                }
            };
            Ok(structured(&status))
        }
        .await;
        self.counted("get_operation_status", result)
    }

    #[tool(
        name = "preview_ticket",
        description = contract::PREVIEW_TICKET,
        output_schema = schema_for_output::<PreviewResult>(),
        annotations(title = "Preview ticket", read_only_hint = true, open_world_hint = false)
    )]
    async fn preview_ticket(
        &self,
        Parameters(args): Parameters<PreviewTicketArgs>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let checked = args.ticket.into_draft().and_then(|draft| draft.validate());
            let result = match checked {
                Ok(command) => PreviewResult {
                    valid: true,
                    preview: Some(TicketPreview {
                        project_id: command.project_id.as_str().into(),
                        title: command.title.as_str().into(),
                        description: command.description.as_ref().map(|d| d.as_str().into()),
                        priority: command.priority.as_str().into(),
                    }),
                    errors: Vec::new(),
                    next_step: "To create it, call create_ticket with these arguments and a new \
                                operation_id you invent (a UUID)."
                        .into(),
                },
                Err(violations) => PreviewResult {
                    valid: false,
                    preview: None,
                    errors: violations.into_iter().map(FieldError::from).collect(),
                    next_step:
                        "Correct the arguments listed in errors, then preview or create again."
                            .into(),
                },
            };
            Ok(structured(&result))
        }
        .await;
        self.counted("preview_ticket", result)
    }

    #[tool(
        name = "get_ticket",
        description = contract::GET_TICKET,
        output_schema = schema_for_output::<TicketResult>(),
        annotations(title = "Get ticket", read_only_hint = true, open_world_hint = false)
    )]
    async fn get_ticket(
        &self,
        Parameters(args): Parameters<GetTicketArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let tenant = self.tenant(&ctx)?;
            let not_found = || {
                problem(
                    "not_found",
                    Vec::new(),
                    "No ticket has this id; take ticket ids from create_ticket, \
                     get_operation_status or list_tickets results.",
                )
            };
            let Some(id) = args
                .ticket_id
                .as_deref()
                .and_then(|id| id.parse::<TicketId>().ok())
            else {
                return Ok(not_found());
            };
            match self
                .kitchen
                .ticket(tenant.id, id)
                .await
                .map_err(unexpected)?
            {
                Some(ticket) => Ok(structured(&TicketResult {
                    ticket: TicketOut::from(&ticket),
                })),
                None => Ok(not_found()),
            }
        }
        .await;
        self.counted("get_ticket", result)
    }

    #[tool(
        name = "list_tickets",
        description = contract::LIST_TICKETS,
        output_schema = schema_for_output::<TicketListResult>(),
        annotations(title = "List tickets", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_tickets(
        &self,
        Parameters(args): Parameters<ListTicketsArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let tenant = self.tenant(&ctx)?;
            let mut violations = Vec::new();
            let project = args
                .project_id
                .map(ProjectId::parse)
                .transpose()
                .unwrap_or_else(|v| {
                    violations.push(v);
                    None
                });
            let size = args
                .limit
                .map_or(Ok(PageSize::DEFAULT), PageSize::parse)
                .unwrap_or_else(|v| {
                    violations.push(v);
                    PageSize::DEFAULT
                });
            let cursor = args
                .cursor
                .map(|c| Cursor::parse(&c))
                .transpose()
                .unwrap_or_else(|v| {
                    violations.push(v);
                    None
                });
            if !violations.is_empty() {
                return Ok(problem(
                    "invalid",
                    violations,
                    "Correct the arguments listed in errors and call again.",
                ));
            }
            let page = self
                .kitchen
                .list_tickets(tenant.id, project.as_ref(), size, cursor)
                .await
                .map_err(unexpected)?;
            Ok(structured(&TicketListResult {
                tickets: page.tickets.iter().map(TicketOut::from).collect(),
                next_cursor: page.next_cursor.map(|c| c.to_string()),
            }))
        }
        .await;
        self.counted("list_tickets", result)
    }
}

/// A tool result with the outcome's name and, for a broken contract, its kind.
type Answered = (CallToolResult, &'static str, Option<&'static str>);

impl TicketTools {
    /// The create itself.
    async fn place(
        &self,
        tenant: &Tenant,
        args: CreateTicketArgs,
        attempt: &Attempt,
    ) -> Result<Answered, McpError> {
        let raw_key = args.operation_id.clone();
        let key = match parse_key(args.operation_id) {
            Ok(key) => key,
            Err(violation) => {
                let kind = if raw_key.is_none() {
                    "idempotency_key_missing"
                } else {
                    "idempotency_key_malformed"
                };
                return Ok((
                    invalid_create(raw_key, vec![violation]),
                    "invalid",
                    Some(kind),
                ));
            }
        };
        attempt.record_key(key.as_str());
        let draft = match args.ticket.into_draft() {
            Ok(draft) => draft,
            Err(violations) => {
                return Ok((
                    invalid_create(raw_key, violations),
                    "invalid",
                    Some("validation_failed"),
                ));
            }
        };
        let outcome = self
            .kitchen
            .create_ticket(tenant.id, &key, &draft)
            .await
            .map_err(unexpected)?;
        let name = outcome.name();
        // A broken contract is the caller's doing; a provider's refusal,
        // its absence or a lost answer is not.
        let failure = match &outcome {
            Outcome::Conflict { .. } => Some("idempotency_key_reused"),
            Outcome::Invalid { .. } => Some("validation_failed"),
            Outcome::Created(_)
            | Outcome::Replayed(_)
            | Outcome::InProgress { .. }
            | Outcome::NotCreated { .. }
            | Outcome::Unknown { .. } => None,
        };
        Ok((create_result(&key, outcome), name, failure))
    }

    /// The caller's tenant: from authentication, never from arguments.
    fn tenant(&self, ctx: &RequestContext<RoleServer>) -> Result<Tenant, McpError> {
        match &self.tenants {
            TenantSource::Fixed(tenant) => Ok(tenant.clone()),
            TenantSource::Http => ctx
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Tenant>())
                .cloned()
                .ok_or_else(|| McpError::invalid_request("no authenticated tenant", None)),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TicketTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("retry-safe-tickets", env!("CARGO_PKG_VERSION"))
                    .with_title("Retry-safe tickets"),
            )
            .with_instructions(contract::INSTRUCTIONS)
    }
}

fn parse_key(raw: Option<String>) -> Result<OperationKey, FieldViolation> {
    let raw = raw.ok_or_else(|| FieldViolation {
        field: "operation_id".into(),
        code: "required",
        message: "operation_id is required: invent a fresh UUID for this ticket and reuse it on \
                  every retry"
            .into(),
    })?;
    OperationKey::parse(raw).map_err(|e| FieldViolation {
        field: "operation_id".into(),
        code: "malformed",
        message: e.to_string(),
    })
}

/// The one translation of a create's outcome into a tool result.
fn create_result(key: &OperationKey, outcome: Outcome) -> CallToolResult {
    let base = |status: &str, next_step: &str| CreateTicketResult {
        status: status.into(),
        operation_id: Some(key.as_str().into()),
        ticket: None,
        errors: None,
        original_operation_id: None,
        reason: None,
        retry_after_seconds: None,
        next_step: next_step.into(),
    };
    match outcome {
        Outcome::Created(receipt) => structured(&CreateTicketResult {
            ticket: Some(TicketOut::from(&receipt.ticket)),
            ..base(
                "created",
                "Done. If you retry this call, keep the same operation_id and arguments; for another \
                 ticket, invent a new operation_id.",
            )
        }),
        Outcome::Replayed(receipt) => structured(&CreateTicketResult {
            ticket: Some(TicketOut::from(&receipt.ticket)),
            ..base(
                "replayed",
                "This operation_id had already created this ticket; nothing new was created. For a \
                 different ticket, invent a new operation_id.",
            )
        }),
        Outcome::Conflict { original } => structured_error(&CreateTicketResult {
            original_operation_id: Some(original.key.as_str().into()),
            ..base(
                "conflict",
                "Nothing was created: this operation_id was already used for a ticket with different \
                 arguments. For a new ticket, invent a new operation_id; to see the original, call \
                 get_operation_status with this operation_id.",
            )
        }),
        Outcome::Invalid { violations } => invalid_create(Some(key.as_str().into()), violations),
        Outcome::InProgress { retry_after } => structured(&CreateTicketResult {
            retry_after_seconds: Some(retry_after.as_secs().max(1)),
            ..base(
                "in_progress",
                "Another call with this operation_id is still running and nothing was created by \
                 this one: call again with the same operation_id and arguments after \
                 retry_after_seconds.",
            )
        }),
        Outcome::NotCreated {
            operation: _,
            reason,
        } => {
            let (retry_after_seconds, next_step) = match &reason {
                NotCreatedReason::Rejected(_) => (
                    None,
                    "Nothing was created: the ticket provider refused this ticket (see reason). The \
                     operation_id is not used up: correct the arguments and call create_ticket \
                     again with the same operation_id.",
                ),
                NotCreatedReason::Unavailable(_) => (
                    Some(PROVIDER_RETRY_AFTER_SECONDS),
                    "Nothing was created: the ticket provider could not be reached. The \
                     operation_id is not used up: call create_ticket again later (after \
                     retry_after_seconds) with the same operation_id and arguments.",
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
            ..base(
                "unknown",
                "Whether the ticket was created is not known yet; it is being reconciled with the \
                 ticket provider. After retry_after_seconds, call create_ticket again with the same \
                 operation_id and arguments, or call get_operation_status with it; do not invent a \
                 new operation_id for this ticket (it could create a duplicate).",
            )
        }),
    }
}

/// Seconds to wait before retrying when the provider is unreachable or its
/// answer was lost: time for the service to reconcile.
const PROVIDER_RETRY_AFTER_SECONDS: u64 = 2;

fn invalid_create(operation_id: Option<String>, violations: Vec<FieldViolation>) -> CallToolResult {
    structured_error(&CreateTicketResult {
        status: "invalid".into(),
        operation_id,
        ticket: None,
        errors: Some(violations.into_iter().map(FieldError::from).collect()),
        original_operation_id: None,
        reason: None,
        retry_after_seconds: None,
        next_step:
            "Nothing was created. Correct the arguments listed in errors and call again; you \
                    may keep the same operation_id."
                .into(),
    })
}

fn problem(error: &str, violations: Vec<FieldViolation>, next_step: &str) -> CallToolResult {
    structured_error(&ToolProblem {
        error: error.into(),
        errors: violations.into_iter().map(FieldError::from).collect(),
        next_step: next_step.into(),
    })
}

fn structured<T: Serialize>(value: &T) -> CallToolResult {
    CallToolResult::structured(serde_json::to_value(value).unwrap_or_default())
}

fn structured_error<T: Serialize>(value: &T) -> CallToolResult {
    CallToolResult::structured_error(serde_json::to_value(value).unwrap_or_default())
}

/// An infrastructure failure: logged in full, answered opaquely, with what
/// the caller can still do.
fn unexpected(error: KitchenError) -> McpError {
    let mut chain = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        chain.push_str(": ");
        chain.push_str(&cause.to_string());
        source = cause.source();
    }
    tracing::error!(error = %chain, "tool call failed");
    McpError::internal_error(
        "The server failed and logged why; whether a ticket was created is unknown. Call \
         get_operation_status with the same operation_id, or retry create_ticket with the same \
         operation_id and arguments.",
        None,
    )
}

#[cfg(test)]
mod tests {
    use kitchen::OperationRef;
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
