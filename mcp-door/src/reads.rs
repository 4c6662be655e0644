//! The five read tools: an operation's status, a ticket's preview, a
//! ticket, a page of tickets and a page of comments. A read never writes,
//! and never takes an operation_id.

use kitchen::{
    Action, Comment, FieldViolation, KeyPhase, KitchenError, OperationKey, Ticket, TicketDraft,
    TicketFilter, TicketId,
};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use crate::args::{
    Arguments, GetTicketArgs, ListCommentsArgs, ListTicketsArgs, OperationStatusArgs,
    PreviewTicketArgs, Read, merge,
};
use crate::contract;
use crate::fields::{named_ticket, page, required};
use crate::outcomes::{problem, structured, unexpected};
use crate::result_text;
use crate::results::{
    CommentListResult, CommentOut, FieldError, Made, OperationStatusResult, PreviewResult,
    TicketListResult, TicketOut, TicketPreview, TicketResult,
};
use crate::tools::{TicketTools, tool_needs};
use crate::vocabulary::{ResultShape, words};

#[tool_router(router = read_tools, vis = "pub(crate)")]
impl TicketTools {
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
                        message: result_text::unknown_action(raw),
                    });
                    Action::CreateTicket
                }
            };
            if !problems.is_empty() {
                return Ok(problem(
                    "get_operation_status",
                    "invalid",
                    problems,
                    result_text::READ_INVALID,
                ));
            }
            let key = match args.operation_id.map(OperationKey::parse) {
                Some(Ok(key)) => key,
                // Nothing can be recorded under a string that is not a key,
                // and every write would refuse it: no retry advice.
                Some(Err(_)) => {
                    return Ok(problem(
                        "get_operation_status",
                        "invalid",
                        vec![FieldViolation {
                            field: "operation_id".into(),
                            code: "malformed",
                            message: result_text::not_an_operation_id(),
                        }],
                        result_text::STATUS_NOT_AN_OPERATION_ID,
                    ));
                }
                None => {
                    return Ok(problem(
                        "get_operation_status",
                        "invalid",
                        vec![required(
                            "operation_id",
                            result_text::STATUS_OPERATION_ID_REQUIRED,
                        )],
                        result_text::STATUS_MISSING,
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
                            match words(action).result {
                                ResultShape::NewTicket | ResultShape::ChangedTicket => snapshot
                                    .parse::<Ticket>()
                                    .map(|t| Made::Ticket(TicketOut::from(&t))),
                                ResultShape::Comment => snapshot
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
                    next_step: result_text::PREVIEW_VALID.into(),
                },
                checked => PreviewResult {
                    valid: false,
                    preview: None,
                    errors: merge(problems, checked.err().unwrap_or_default())
                        .into_iter()
                        .map(FieldError::from)
                        .collect(),
                    next_step: result_text::PREVIEW_INVALID.into(),
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
                return Ok(problem(
                    "get_ticket",
                    "invalid",
                    problems,
                    result_text::READ_INVALID,
                ));
            }
            let not_found = || {
                problem(
                    "get_ticket",
                    "not_found",
                    Vec::new(),
                    result_text::TICKET_NOT_FOUND,
                )
            };
            let Some(raw) = args.ticket_id else {
                return Ok(problem(
                    "get_ticket",
                    "invalid",
                    vec![required("ticket_id", result_text::TICKET_ID_REQUIRED)],
                    result_text::READ_INVALID,
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
            let filter = TicketFilter::parse(args.project_id, args.label, &mut violations);
            let (size, cursor) = page(args.limit, args.cursor, &mut violations);
            let violations = merge(problems, violations);
            if !violations.is_empty() {
                return Ok(problem(
                    "list_tickets",
                    "invalid",
                    violations,
                    result_text::READ_INVALID,
                ));
            }
            let page = self
                .kitchen
                .list_tickets(who.tenant.id, &filter, size, cursor)
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
                return Ok(problem(
                    "list_comments",
                    "invalid",
                    violations,
                    result_text::READ_INVALID,
                ));
            }
            let not_found = || {
                problem(
                    "list_comments",
                    "not_found",
                    Vec::new(),
                    result_text::TICKET_NOT_FOUND,
                )
            };
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
