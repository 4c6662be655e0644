//! The tools: the rmcp plumbing (router with contract hashes, call
//! counting, the caller's tenant) and the five tool bodies. What their
//! outcomes become is in [`crate::outcomes`].

use std::sync::OnceLock;

use kitchen::{
    Action, Cursor, FieldViolation, Kitchen, KitchenError, OperationKey, Outcome, PageSize,
    ProjectId, Tenant, TicketDraft, TicketId,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use telemetry::{Attempt, Door, Metrics};
use tracing::Instrument;

use crate::args::{
    Arguments, CreateTicketArgs, GetTicketArgs, ListTicketsArgs, OperationStatusArgs,
    PreviewTicketArgs, Read, merge,
};
use crate::contract;
use crate::outcomes::{create_result, invalid_create, problem, structured, unexpected};
use crate::results::{
    CreateTicketResult, FieldError, OperationStatusResult, PreviewResult, TicketListResult,
    TicketOut, TicketPreview, TicketResult,
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
        Parameters(args): Parameters<Arguments<CreateTicketArgs>>,
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
        Parameters(args): Parameters<Arguments<OperationStatusArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let tenant = self.tenant(&ctx)?;
            let Read { args, problems } = args.read()?;
            if !problems.is_empty() {
                return Ok(problem("invalid", problems, contract::READ_INVALID));
            }
            let key = match args.operation_id.map(OperationKey::parse) {
                Some(Ok(key)) => key,
                // Nothing can be recorded under a string that is not a key,
                // and create_ticket would refuse it: no retry advice.
                Some(Err(_)) => {
                    return Ok(problem(
                        "invalid",
                        vec![FieldViolation {
                            field: "operation_id".into(),
                            code: "malformed",
                            message: contract::NOT_AN_OPERATION_ID.into(),
                        }],
                        contract::STATUS_NOT_AN_OPERATION_ID,
                    ));
                }
                None => {
                    return Ok(problem(
                        "invalid",
                        vec![required(
                            "operation_id",
                            contract::STATUS_OPERATION_ID_REQUIRED,
                        )],
                        contract::STATUS_MISSING,
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
        Parameters(args): Parameters<Arguments<PreviewTicketArgs>>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let Read { args, problems } = args.read()?;
            let checked = TicketDraft::from(args.ticket).validate();
            let result = match checked {
                Ok(command) if problems.is_empty() => PreviewResult {
                    valid: true,
                    preview: Some(TicketPreview {
                        project_id: command.project_id.as_str().into(),
                        title: command.title.as_str().into(),
                        description: command.description.as_ref().map(|d| d.as_str().into()),
                        priority: command.priority.as_str().into(),
                    }),
                    errors: Vec::new(),
                    next_step: contract::PREVIEW_VALID.into(),
                },
                checked => PreviewResult {
                    valid: false,
                    preview: None,
                    errors: merge(problems, checked.err().unwrap_or_default())
                        .into_iter()
                        .map(FieldError::from)
                        .collect(),
                    next_step: contract::PREVIEW_INVALID.into(),
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
        Parameters(args): Parameters<Arguments<GetTicketArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let tenant = self.tenant(&ctx)?;
            let Read { args, problems } = args.read()?;
            if !problems.is_empty() {
                return Ok(problem("invalid", problems, contract::READ_INVALID));
            }
            let not_found = || problem("not_found", Vec::new(), contract::TICKET_NOT_FOUND);
            let Some(raw) = args.ticket_id else {
                return Ok(problem(
                    "invalid",
                    vec![required("ticket_id", contract::TICKET_ID_REQUIRED)],
                    contract::READ_INVALID,
                ));
            };
            // A string that is not a ticket id names no ticket.
            let Ok(id) = raw.parse::<TicketId>() else {
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
        Parameters(args): Parameters<Arguments<ListTicketsArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let tenant = self.tenant(&ctx)?;
            let Read { args, problems } = args.read()?;
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
                .map_or(Ok(PageSize::DEFAULT), page_size)
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
            let violations = merge(problems, violations);
            if !violations.is_empty() {
                return Ok(problem("invalid", violations, contract::READ_INVALID));
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
    /// The create itself. Arguments are checked in the REST door's order:
    /// the operation_id first and alone (without a usable key there is
    /// nothing to keep), then every other argument at once. Nothing reaches
    /// the kitchen, so nothing touches the key, until all of them are fine.
    async fn place(
        &self,
        tenant: &Tenant,
        args: Arguments<CreateTicketArgs>,
        attempt: &Attempt,
    ) -> Result<Answered, McpError> {
        let Read { args, problems } = args.read()?;
        let (key_problems, problems): (Vec<_>, Vec<_>) = problems
            .into_iter()
            .partition(|p| p.field == "operation_id");
        if !key_problems.is_empty() {
            return Ok((
                invalid_create(None, key_problems),
                "invalid",
                Some("idempotency_key_malformed"),
            ));
        }
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
        let draft = TicketDraft::from(args.ticket);
        if !problems.is_empty() {
            let checked = draft.validate().err().unwrap_or_default();
            return Ok((
                invalid_create(raw_key, merge(problems, checked)),
                "invalid",
                Some("validation_failed"),
            ));
        }
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
    let raw = raw.ok_or_else(|| required("operation_id", contract::OPERATION_ID_REQUIRED))?;
    OperationKey::parse(raw).map_err(|e| FieldViolation {
        field: "operation_id".into(),
        code: "malformed",
        message: e.to_string(),
    })
}

/// A missing required argument.
fn required(field: &str, message: &str) -> FieldViolation {
    FieldViolation {
        field: field.into(),
        code: "required",
        message: message.into(),
    }
}

/// A page size from an integer of any size: beyond `u32` it is out of the
/// page range all the same, and said so in the kitchen's words.
fn page_size(n: i64) -> Result<PageSize, FieldViolation> {
    match u32::try_from(n) {
        Ok(n) => PageSize::parse(n),
        Err(_) => Err(FieldViolation {
            field: "limit".into(),
            code: "out_of_range",
            message: format!("limit must be between 1 and {}; got {n}", PageSize::MAX),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_size_of_any_integer_is_checked_in_range() {
        assert_eq!(page_size(50).map(PageSize::get).ok(), Some(50));
        for n in [0, -1, 201, i64::from(u32::MAX) + 1, i64::MAX] {
            let violation = page_size(n).expect_err("out of range");
            assert_eq!(
                (violation.field.as_str(), violation.code),
                ("limit", "out_of_range")
            );
            assert!(
                violation.message.ends_with(&format!("got {n}")),
                "{}",
                violation.message
            );
        }
    }
}
