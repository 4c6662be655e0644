//! The tools: the rmcp plumbing (router with contract hashes, call
//! counting, the caller, `tasks/*`) and the nine tool bodies. What their
//! outcomes become is in [`crate::outcomes`]; whether a write answers with a
//! task instead, and what a task says, in [`crate::tasks`].

use std::sync::{Arc, OnceLock};

use kitchen::{
    Action, Actor, Caller, Comment, CommentDraft, Cursor, FieldViolation, KeyPhase, Kitchen,
    KitchenError, OperationKey, Outcome, PageSize, ProjectId, Refusal, Scopes, Tenant, Ticket,
    TicketAt, TicketDraft, TicketId, TicketPatch, TicketUpdate, TransitionDraft, Uuid, Version,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use telemetry::{Attempt, ContractFailure, Door, Metrics};
use tracing::Instrument;

use crate::args::{
    AddCommentArgs, Arguments, CreateTicketArgs, GetTicketArgs, ListCommentsArgs, ListTicketsArgs,
    OperationStatusArgs, PreviewTicketArgs, Read, TransitionTicketArgs, UpdateTicketArgs, merge,
};
use crate::contract;
use crate::open_world::OpenWorld;
use crate::outcomes::{
    Answered, comment_write_result, create_result, invalid_write, problem, structured,
    ticket_write_result, unexpected,
};
use crate::results::{
    CommentListResult, CommentOut, CommentWriteResult, CreateTicketResult, FieldError, Made,
    OperationStatusResult, PreviewResult, TicketListResult, TicketOut, TicketPreview, TicketResult,
    TicketWriteResult,
};
use crate::tasks::{self, TaskSettings, Waited};

/// The scopes a call of `tool` needs (the one policy, `access::policy`).
fn tool_needs(tool: &str) -> Scopes {
    access::policy::mcp("tools/call", Some(tool))
}

/// Where a call's caller comes from. Never from a tool argument.
#[derive(Debug, Clone)]
pub enum TenantSource {
    /// Over HTTP: the bearer-token middleware put the [`Caller`] into the
    /// request's extensions.
    Http,
    /// Over stdio: the caller of the token given at start-up.
    Fixed(Caller),
}

/// Who is calling: the tenant every query is scoped by, and the actor its
/// writes are recorded as (the history shows the token).
#[derive(Debug, Clone)]
struct Who {
    tenant: Tenant,
    actor: Actor,
}

impl From<&Caller> for Who {
    fn from(caller: &Caller) -> Self {
        Self {
            tenant: caller.tenant.clone(),
            actor: Actor::from(caller),
        }
    }
}

/// The MCP server: nine tools over one kitchen.
#[derive(Clone)]
pub struct TicketTools {
    kitchen: Kitchen,
    tenants: TenantSource,
    metrics: Metrics,
    /// Set when a write may answer with a task (over HTTP): see
    /// [`crate::tasks`].
    tasks: Option<TaskSettings>,
    /// Built once per server and shared, never copied: the stateless
    /// transport makes a server per request, and a copy of the router (nine
    /// tool definitions, each with its `_meta` map) was a measurable share
    /// of a replay's cost.
    tool_router: Arc<ToolRouter<Self>>,
}

#[tool_router]
impl TicketTools {
    /// Tools over `kitchen`, with callers from `tenants`, measured into
    /// `metrics`. Builds the tool definitions for `kitchen`'s backend:
    /// make it once per server and clone it per request.
    pub fn new(kitchen: Kitchen, tenants: TenantSource, metrics: Metrics) -> Self {
        let tool_router = Arc::new(Self::router_for(&OpenWorld::of(&kitchen)));
        Self {
            kitchen,
            tenants,
            metrics,
            tasks: None,
            tool_router,
        }
    }

    /// These tools, declaring the tasks extension: a write by a client
    /// that declared it too (at 2026-07-28 or later) answers with a task
    /// when its outcome is not final within [`TaskSettings::bound`].
    pub fn with_tasks(self, settings: TaskSettings) -> Self {
        Self {
            tasks: Some(settings),
            ..self
        }
    }

    /// The tool definitions, with `openWorldHint` as `open` says and each
    /// tool's contract hash in `_meta` (so a deployment whose tools reach a
    /// provider publishes other hashes: its contract is another).
    fn router_for(open: &OpenWorld) -> ToolRouter<Self> {
        let mut router = Self::tool_router();
        for (name, route) in &mut router.map {
            // A model reads every input schema on every turn, and MCP
            // already says a schema without `$schema` is JSON Schema
            // 2020-12: the URL would cost tokens and say nothing.
            Arc::make_mut(&mut route.attr.input_schema).remove("$schema");
            if let Some(annotations) = route.attr.annotations.as_mut() {
                annotations.open_world_hint = Some(open.reaches(name));
            }
            let hash = contract::contract_hash(&route.attr);
            let mut meta = route.attr.meta.clone().unwrap_or_default();
            meta.insert(contract::CONTRACT_HASH_META.into(), hash.into());
            route.attr.meta = Some(meta);
        }
        router
    }

    /// Every tool definition as `tools/list` shows it on the local backend,
    /// contract hashes included.
    pub fn definitions() -> Vec<rmcp::model::Tool> {
        Self::definitions_in(&OpenWorld::CLOSED)
    }

    /// Every tool definition as `tools/list` shows it where `open` reaches
    /// a provider.
    pub fn definitions_in(open: &OpenWorld) -> Vec<rmcp::model::Tool> {
        Self::router_for(open).list_all()
    }

    /// The contract hash `tool` publishes, borrowed from the shared router
    /// (no copy per call).
    fn contract(&self, tool: &str) -> &str {
        self.tool_router
            .map
            .get(tool)
            .and_then(|route| route.attr.meta.as_ref())
            .and_then(|meta| meta.get(contract::CONTRACT_HASH_META))
            .and_then(|hash| hash.as_str())
            .unwrap_or_default()
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
        self.metrics.tool_call(tool, self.contract(tool), outcome);
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
    ) -> Result<CallToolResponse, McpError> {
        let call = self.begin(Action::CreateTicket, &ctx)?;
        let work = self
            .create(&call, args)
            .instrument(call.attempt.span().clone());
        let waited = self.wait(&call, &ctx, work).await;
        self.end(call, waited)
    }

    // Destructive: it replaces or removes a title, description, priority or
    // assignee, and no tool brings the old value back (the ticket's history
    // keeps it, but no tool reads it). A client that confirms destructive
    // calls with its user should confirm this one. Idempotent: given the
    // same operation_id, a repeat changes nothing again.
    #[tool(
        name = "update_ticket",
        description = contract::UPDATE_TICKET,
        output_schema = schema_for_output::<TicketWriteResult>(),
        annotations(
            title = "Update ticket",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn update_ticket(
        &self,
        Parameters(args): Parameters<Arguments<UpdateTicketArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = self.begin(Action::UpdateTicket, &ctx)?;
        let work = self
            .update(&call, args)
            .instrument(call.attempt.span().clone());
        let waited = self.wait(&call, &ctx, work).await;
        self.end(call, waited)
    }

    // Not destructive: a status move loses nothing. Every status can be
    // reached again (closed reopens), and the move is recorded.
    // Idempotent given the same operation_id, as every write.
    #[tool(
        name = "transition_ticket",
        description = contract::TRANSITION_TICKET,
        output_schema = schema_for_output::<TicketWriteResult>(),
        annotations(
            title = "Move ticket to a status",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn transition_ticket(
        &self,
        Parameters(args): Parameters<Arguments<TransitionTicketArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = self.begin(Action::TransitionTicket, &ctx)?;
        let work = self
            .transition(&call, args)
            .instrument(call.attempt.span().clone());
        let waited = self.wait(&call, &ctx, work).await;
        self.end(call, waited)
    }

    // Not destructive: purely additive. Idempotent given the same
    // operation_id.
    #[tool(
        name = "add_comment",
        description = contract::ADD_COMMENT,
        output_schema = schema_for_output::<CommentWriteResult>(),
        annotations(
            title = "Add comment",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn add_comment(
        &self,
        Parameters(args): Parameters<Arguments<AddCommentArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = self.begin(Action::AddComment, &ctx)?;
        let work = self
            .comment(&call, args)
            .instrument(call.attempt.span().clone());
        let waited = self.wait(&call, &ctx, work).await;
        self.end(call, waited)
    }

    #[tool(
        name = "get_operation_status",
        description = contract::GET_OPERATION_STATUS,
        output_schema = schema_for_output::<OperationStatusResult>(),
        annotations(
            title = "Get operation status",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_operation_status(
        &self,
        Parameters(args): Parameters<Arguments<OperationStatusArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = self.caller(tool_needs("get_operation_status"), &ctx)?;
            let Read { args, mut problems } = args.read()?;
            let action = match args.action.as_deref().map(|raw| (raw, Action::parse(raw))) {
                None => Action::CreateTicket,
                Some((_, Some(action))) => action,
                Some((raw, None)) => {
                    problems.push(FieldViolation {
                        field: "action".into(),
                        code: "unknown_value",
                        message: contract::unknown_action(raw),
                    });
                    Action::CreateTicket
                }
            };
            if !problems.is_empty() {
                return Ok(problem("invalid", problems, contract::READ_INVALID));
            }
            let key = match args.operation_id.map(OperationKey::parse) {
                Some(Ok(key)) => key,
                // Nothing can be recorded under a string that is not a key,
                // and every write would refuse it: no retry advice.
                Some(Err(_)) => {
                    return Ok(problem(
                        "invalid",
                        vec![FieldViolation {
                            field: "operation_id".into(),
                            code: "malformed",
                            message: contract::not_an_operation_id(),
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
                .operation_status(who.tenant.id, action, &key)
                .await
                .map_err(unexpected)?;
            let status = match status {
                None => OperationStatusResult::not_found(action, key.as_str().into()),
                Some(status) => {
                    // Past its window a key shows no first answer, whether
                    // or not the sweep has dropped it yet: what is shown
                    // must not depend on when the sweep last ran.
                    let first_answer = match status.phase {
                        KeyPhase::Replayable => status.record.result.as_ref(),
                        KeyPhase::Expired | KeyPhase::Forgotten => None,
                    };
                    let made = first_answer
                        .map(|snapshot| {
                            // What the action makes decides how its snapshot reads.
                            match action {
                                Action::CreateTicket
                                | Action::UpdateTicket
                                | Action::TransitionTicket => snapshot
                                    .parse::<Ticket>()
                                    .map(|t| Made::Ticket(TicketOut::from(&t))),
                                Action::AddComment => snapshot
                                    .parse::<Comment>()
                                    .map(|c| Made::Comment(CommentOut::from(&c))),
                            }
                        })
                        .transpose()
                        .map_err(|e| unexpected(KitchenError::CorruptRecord(e.to_string())))?;
                    OperationStatusResult::recorded(&status, made)
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
        annotations(
            title = "Preview ticket",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
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
        annotations(
            title = "Get ticket",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_ticket(
        &self,
        Parameters(args): Parameters<Arguments<GetTicketArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = self.caller(tool_needs("get_ticket"), &ctx)?;
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
                .ticket(who.tenant.id, id)
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
        annotations(
            title = "List tickets",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_tickets(
        &self,
        Parameters(args): Parameters<Arguments<ListTicketsArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = self.caller(tool_needs("list_tickets"), &ctx)?;
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
            let (size, cursor) = page(args.limit, args.cursor, &mut violations);
            let violations = merge(problems, violations);
            if !violations.is_empty() {
                return Ok(problem("invalid", violations, contract::READ_INVALID));
            }
            let page = self
                .kitchen
                .list_tickets(who.tenant.id, project.as_ref(), size, cursor)
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

    #[tool(
        name = "list_comments",
        description = contract::LIST_COMMENTS,
        output_schema = schema_for_output::<CommentListResult>(),
        annotations(
            title = "List comments",
            read_only_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_comments(
        &self,
        Parameters(args): Parameters<Arguments<ListCommentsArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let result = async {
            let who = self.caller(tool_needs("list_comments"), &ctx)?;
            let Read { args, problems } = args.read()?;
            let mut violations = Vec::new();
            let ticket = named_ticket(args.ticket_id, &mut violations);
            let (size, cursor) = page(args.limit, args.cursor, &mut violations);
            let violations = merge(problems, violations);
            if !violations.is_empty() {
                return Ok(problem("invalid", violations, contract::READ_INVALID));
            }
            let not_found = || problem("not_found", Vec::new(), contract::TICKET_NOT_FOUND);
            let Some(ticket) = ticket else {
                return Ok(not_found());
            };
            let Some(page) = self
                .kitchen
                .list_comments(who.tenant.id, ticket, size, cursor)
                .await
                .map_err(unexpected)?
            else {
                return Ok(not_found());
            };
            Ok(structured(&CommentListResult {
                comments: page.comments.iter().map(CommentOut::from).collect(),
                next_cursor: page.next_cursor.map(|c| c.to_string()),
            }))
        }
        .await;
        self.counted("list_comments", result)
    }
}

/// A write call in flight: who makes it, its attempt (the span and the
/// measurements of one write), and its operation key once parsed.
struct WriteCall {
    action: Action,
    who: Who,
    attempt: Attempt,
    /// Set by the write's body once the key parsed: what a task for the
    /// call is named after.
    key: OnceLock<OperationKey>,
}

impl WriteCall {
    /// Records the call's key, on its attempt and for a task.
    fn keyed(&self, key: &OperationKey) {
        self.attempt.record_key(key.as_str());
        let _ = self.key.set(key.clone());
    }
}

/// A write's key, checked first and alone: without a usable key there is
/// nothing to keep, so no other argument is looked at. Either the key and
/// the other arguments' problems, or the `invalid` answer (boxed: it is the
/// rarer and much larger side).
fn keyed(
    action: Action,
    raw: Option<String>,
    problems: Vec<FieldViolation>,
) -> Result<(OperationKey, Vec<FieldViolation>), Box<Answered>> {
    let (key_problems, problems): (Vec<_>, Vec<_>) = problems
        .into_iter()
        .partition(|p| p.field == "operation_id");
    if !key_problems.is_empty() {
        return Err(Box::new(Answered::new(
            invalid_write(action, None, key_problems),
            "invalid",
            Some(ContractFailure::IdempotencyKeyMalformed),
        )));
    }
    let Some(raw) = raw else {
        let violation = required("operation_id", &contract::operation_id_required(action));
        return Err(Box::new(Answered::new(
            invalid_write(action, None, vec![violation]),
            "invalid",
            Some(ContractFailure::IdempotencyKeyMissing),
        )));
    };
    match OperationKey::parse(raw.as_str()) {
        Ok(key) => Ok((key, problems)),
        Err(e) => {
            let violation = FieldViolation {
                field: "operation_id".into(),
                code: "malformed",
                message: e.to_string(),
            };
            Err(Box::new(Answered::new(
                invalid_write(action, Some(raw), vec![violation]),
                "invalid",
                Some(ContractFailure::IdempotencyKeyMalformed),
            )))
        }
    }
}

/// The `invalid` answer of a write whose arguments the door refused
/// (`problems`, then the kitchen's own findings in `checked` for the
/// arguments without one), before anything touched the key.
fn refused_arguments(
    action: Action,
    key: &OperationKey,
    problems: Vec<FieldViolation>,
    checked: Vec<FieldViolation>,
) -> Answered {
    Answered::new(
        invalid_write(action, Some(key.as_str().into()), merge(problems, checked)),
        "invalid",
        Some(ContractFailure::ValidationFailed),
    )
}

/// The answer to the kitchen's `outcome` of a write `action`, with its
/// name and failure kind for the attempt, and whether it is final.
fn answered<T>(
    action: Action,
    outcome: Outcome<T>,
    result: impl FnOnce(Outcome<T>) -> Result<CallToolResult, McpError>,
) -> Result<Answered, McpError> {
    let name = outcome.name();
    let failure = ContractFailure::of(&outcome);
    let pending = tasks::pending(action, &outcome);
    Ok(Answered {
        pending,
        ..Answered::new(result(outcome)?, name, failure)
    })
}

impl TicketTools {
    /// Starts a write call: its caller, and its attempt with three
    /// identities (the operation key, recorded once parsed; the attempt id
    /// Attempt makes; the JSON-RPC id of this request).
    fn begin(
        &self,
        action: Action,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<WriteCall, McpError> {
        let who = self.caller(tool_needs(action.as_str()), ctx)?;
        // Each write tool is named after its action.
        let contract = self.contract(action.as_str());
        let attempt = Attempt::start(
            &self.metrics,
            Door::Mcp,
            action.as_str(),
            &who.tenant,
            &ctx.id.to_string(),
            Some(contract),
        );
        Ok(WriteCall {
            action,
            who,
            attempt,
            key: OnceLock::new(),
        })
    }

    /// Waits for a write call's `work`: to its end, or for a client that
    /// opted into tasks until it is a task (see [`crate::tasks`]).
    async fn wait(
        &self,
        call: &WriteCall,
        ctx: &RequestContext<RoleServer>,
        work: impl Future<Output = Result<Answered, McpError>>,
    ) -> Waited {
        match self.tasks.filter(|_| tasks::opted_in(ctx)) {
            None => Waited::Answer(work.await),
            Some(settings) => {
                let tenant = call.who.tenant.id;
                tasks::wait(
                    &self.kitchen,
                    settings,
                    tenant,
                    call.action,
                    &call.key,
                    work,
                )
                .await
            }
        }
    }

    /// Ends a write call: measures its outcome and passes the answer on. A
    /// task is measured as the outcome that made it one (`unknown`,
    /// `in_progress`), or as `task` when the bound passed first.
    fn end(&self, call: WriteCall, waited: Waited) -> Result<CallToolResponse, McpError> {
        let (outcome, failure) = match &waited {
            Waited::Answer(Ok(answered)) => (answered.outcome, answered.failure),
            Waited::Answer(Err(_)) => ("error", None),
            Waited::Task { outcome, .. } => (*outcome, None),
        };
        call.attempt.finish(outcome, failure);
        self.metrics.tool_call(
            call.action.as_str(),
            self.contract(call.action.as_str()),
            outcome,
        );
        match waited {
            Waited::Answer(answer) => answer.map(|a| CallToolResponse::Complete(a.result)),
            Waited::Task { task, .. } => Ok(CallToolResponse::Task(task)),
        }
    }

    /// The create itself. Arguments are checked in the REST door's order:
    /// the operation_id first and alone, then every other argument at once.
    /// Nothing reaches the kitchen, so nothing touches the key, until all of
    /// them are fine.
    async fn create(
        &self,
        call: &WriteCall,
        args: Arguments<CreateTicketArgs>,
    ) -> Result<Answered, McpError> {
        let Read { args, problems } = args.read()?;
        let (key, problems) = match keyed(call.action, args.operation_id, problems) {
            Ok(keyed) => keyed,
            Err(answer) => return Ok(*answer),
        };
        call.keyed(&key);
        let draft = TicketDraft::from(args.ticket);
        if !problems.is_empty() {
            let checked = draft.validate().err().unwrap_or_default();
            return Ok(refused_arguments(call.action, &key, problems, checked));
        }
        let outcome = self
            .kitchen
            .create_ticket(call.who.actor, &key, &draft)
            .await
            .map_err(unexpected)?;
        answered(call.action, outcome, |o| create_result(&key, o))
    }

    /// An update: a merge patch, where a null description or assignee
    /// removes it.
    async fn update(
        &self,
        call: &WriteCall,
        args: Arguments<UpdateTicketArgs>,
    ) -> Result<Answered, McpError> {
        let Read { args, problems } = args.read()?;
        let (key, mut problems) = match keyed(call.action, args.operation_id, problems) {
            Ok(keyed) => keyed,
            Err(answer) => return Ok(*answer),
        };
        call.keyed(&key);
        let ticket = named_ticket(args.ticket_id, &mut problems);
        let expected_version = expected_version(args.expected_version, &mut problems);
        let update = TicketUpdate {
            ticket_id: ticket.unwrap_or_else(no_ticket),
            expected_version,
            // Title and priority cannot be removed, so for them a null was
            // read as left out; description and assignee keep theirs.
            patch: TicketPatch {
                title: args.title.map(Some),
                description: args.description,
                priority: args.priority.map(Some),
                assignee: args.assignee,
            },
        };
        if !problems.is_empty() {
            let checked = update.validate().err().unwrap_or_default();
            return Ok(refused_arguments(call.action, &key, problems, checked));
        }
        let outcome = match ticket {
            Some(_) => self
                .kitchen
                .update_ticket(call.who.actor, &key, &update)
                .await
                .map_err(unexpected)?,
            None => unknown_ticket(),
        };
        answered(call.action, outcome, |o| {
            ticket_write_result(call.action, &key, o)
        })
    }

    /// A move to another status.
    async fn transition(
        &self,
        call: &WriteCall,
        args: Arguments<TransitionTicketArgs>,
    ) -> Result<Answered, McpError> {
        let Read { args, problems } = args.read()?;
        let (key, mut problems) = match keyed(call.action, args.operation_id, problems) {
            Ok(keyed) => keyed,
            Err(answer) => return Ok(*answer),
        };
        call.keyed(&key);
        let ticket = named_ticket(args.ticket_id, &mut problems);
        let expected_version = expected_version(args.expected_version, &mut problems);
        let draft = TransitionDraft {
            to: args.to,
            reason: args.reason,
        };
        if !problems.is_empty() {
            let checked = draft
                .validate(ticket.unwrap_or_else(no_ticket))
                .err()
                .unwrap_or_default();
            return Ok(refused_arguments(call.action, &key, problems, checked));
        }
        let outcome = match ticket {
            Some(id) => self
                .kitchen
                .transition_ticket(
                    call.who.actor,
                    &key,
                    TicketAt::new(id, expected_version),
                    &draft,
                )
                .await
                .map_err(unexpected)?,
            None => unknown_ticket(),
        };
        answered(call.action, outcome, |o| {
            ticket_write_result(call.action, &key, o)
        })
    }

    /// A comment.
    async fn comment(
        &self,
        call: &WriteCall,
        args: Arguments<AddCommentArgs>,
    ) -> Result<Answered, McpError> {
        let Read { args, problems } = args.read()?;
        let (key, mut problems) = match keyed(call.action, args.operation_id, problems) {
            Ok(keyed) => keyed,
            Err(answer) => return Ok(*answer),
        };
        call.keyed(&key);
        let ticket = named_ticket(args.ticket_id, &mut problems);
        let expected_version = expected_version(args.expected_version, &mut problems);
        let draft = CommentDraft { body: args.body };
        if !problems.is_empty() {
            let checked = draft
                .validate(ticket.unwrap_or_else(no_ticket))
                .err()
                .unwrap_or_default();
            return Ok(refused_arguments(call.action, &key, problems, checked));
        }
        let outcome = match ticket {
            Some(id) => self
                .kitchen
                .add_comment(
                    call.who.actor,
                    &key,
                    TicketAt::new(id, expected_version),
                    &draft,
                )
                .await
                .map_err(unexpected)?,
            None => unknown_ticket(),
        };
        answered(call.action, outcome, |o| comment_write_result(&key, o))
    }

    /// The caller: from authentication, never from arguments.
    fn caller(&self, needs: Scopes, ctx: &RequestContext<RoleServer>) -> Result<Who, McpError> {
        let caller = match &self.tenants {
            TenantSource::Fixed(caller) => caller,
            TenantSource::Http => ctx
                .extensions
                .get::<http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Caller>())
                .ok_or_else(|| McpError::invalid_request("no authenticated caller", None))?,
        };
        // Over HTTP the edge already answered a missing scope with a 403
        // the client can act on; over stdio this is the only check.
        let missing = caller.scopes.missing_from(needs);
        if !missing.is_empty() {
            return Err(McpError::invalid_request(
                format!(
                    "This call needs the scope {missing}, which the token does not carry; nothing \
                     was done. Use a token issued with it (tickets token issue <tenant> --scope \
                     {missing})."
                ),
                None,
            ));
        }
        Ok(Who::from(caller))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TicketTools {
    /// Built once (with tasks, and without): rmcp asks for it on every
    /// request (the stateless transport configures each request's peer with
    /// it, and gates `tasks/*` on it).
    fn get_info(&self) -> ServerConfig {
        static INFO: OnceLock<ServerConfig> = OnceLock::new();
        static WITH_TASKS: OnceLock<ServerConfig> = OnceLock::new();
        let info = |tasks: bool| {
            let capabilities = if tasks {
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tasks()
                    .build()
            } else {
                ServerCapabilities::builder().enable_tools().build()
            };
            ServerConfig::new(capabilities)
                .with_server_info(
                    Implementation::new("retry-safe-tickets", env!("CARGO_PKG_VERSION"))
                        .with_title("Retry-safe tickets"),
                )
                .with_instructions(contract::INSTRUCTIONS)
        };
        match self.tasks {
            None => INFO.get_or_init(|| info(false)),
            Some(_) => WITH_TASKS.get_or_init(|| info(true)),
        }
        .clone()
    }

    /// `tasks/get`: the task's state, from its operation record.
    async fn get_task(
        &self,
        request: GetTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let who = self.caller(access::policy::mcp("tasks/get", None), &ctx)?;
        let settings = self.tasks.unwrap_or_default();
        tasks::get(&self.kitchen, settings, who.tenant.id, &request.task_id).await
    }

    /// `tasks/cancel`: acknowledged for a known task; the write finishes.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = self.caller(access::policy::mcp("tasks/cancel", None), &ctx)?;
        tasks::cancel(&self.kitchen, who.tenant.id, &request.task_id).await
    }

    /// `tasks/update`: acknowledged for a known task (none asks for input).
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let who = self.caller(access::policy::mcp("tasks/update", None), &ctx)?;
        tasks::update(&self.kitchen, who.tenant.id, &request.task_id).await
    }
}

/// The ticket a write or list names: its id, or `None` for a string that
/// is no ticket id (which names no ticket, and is answered as one that does
/// not exist). A missing ticket_id is a problem, and `None` too.
fn named_ticket(raw: Option<String>, problems: &mut Vec<FieldViolation>) -> Option<TicketId> {
    match raw {
        None => {
            problems.push(required("ticket_id", contract::TICKET_ID_REQUIRED));
            None
        }
        Some(raw) => raw.parse().ok(),
    }
}

/// The `expected_version` of a write to an existing ticket, read the same
/// way for every such tool: a whole number from 1, or left out (any
/// version). Another number is a problem named by the argument.
fn expected_version(raw: Option<i64>, problems: &mut Vec<FieldViolation>) -> Option<Version> {
    let n = raw?;
    Version::parse(n, "expected_version")
        .map_err(|v| problems.push(v))
        .ok()
}

/// The id of no ticket (tickets have UUID v7 ids; this is the nil UUID):
/// what a draft is validated for when the ticket_id itself is missing or
/// no id, so that every other argument's problem is still reported.
fn no_ticket() -> TicketId {
    Uuid::nil()
        .hyphenated()
        .to_string()
        .parse()
        .expect("the nil UUID is a ticket id")
}

/// The outcome for a ticket_id that is no ticket id: the kitchen's own
/// refusal for a ticket that does not exist, so that the two answers are
/// one by construction and reveal nothing.
fn unknown_ticket<T>() -> Outcome<T> {
    Outcome::Refused(Refusal::TicketNotFound {
        ticket_id: no_ticket(),
    })
}

/// A page's size and start, from a list tool's `limit` and `cursor`; each
/// bad one is added to `violations`.
fn page(
    limit: Option<i64>,
    cursor: Option<String>,
    violations: &mut Vec<FieldViolation>,
) -> (PageSize, Option<Cursor>) {
    let size = limit
        .map_or(Ok(PageSize::DEFAULT), page_size)
        .unwrap_or_else(|v| {
            violations.push(v);
            PageSize::DEFAULT
        });
    let cursor = cursor
        .map(|c| Cursor::parse(&c))
        .transpose()
        .unwrap_or_else(|v| {
            violations.push(v);
            None
        });
    (size, cursor)
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
