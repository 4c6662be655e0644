//! `transition_ticket`: a move to another status.

use kitchen::{Action, MAX_KEY_LEN, MAX_REASON_CHARS, MIN_KEY_LEN, TicketAt, TransitionDraft};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::args::{Arguments, Read, ToolArgs};
use crate::contract;
use crate::fields::{expected_version, named_ticket, no_ticket};
use crate::outcomes::{Answered, ticket_write_result, unexpected};
use crate::results::{TicketWriteResult, status_names};
use crate::tools::TicketTools;
use crate::writes::{WriteCall, WriteTool, answered, keyed, refused_arguments, unknown_ticket};

/// The transition_ticket tool.
pub(crate) struct TransitionTicket;

impl WriteTool for TransitionTicket {
    const ACTION: Action = Action::TransitionTicket;
    type Args = Arguments<TransitionTicketArgs>;

    async fn perform(
        tools: &TicketTools,
        call: &WriteCall,
        args: Self::Args,
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
            Some(id) => tools
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
}

/// `transition_ticket` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TransitionTicketArgs {
    /// The ticket.
    #[schemars(required, description = contract::TICKET_ID_ARG)]
    pub(crate) ticket_id: Option<String>,
    /// The status to move to.
    #[schemars(required, extend("enum" = status_names()))]
    pub(crate) to: Option<String>,
    /// Why, kept in the ticket's history.
    #[schemars(length(max = MAX_REASON_CHARS))]
    pub(crate) reason: Option<String>,
    /// The version the caller expects, as in `update_ticket`.
    #[schemars(description = contract::EXPECTED_VERSION_ARG, range(min = 1))]
    pub(crate) expected_version: Option<i64>,
    /// The operation id.
    #[schemars(required, description = contract::OPERATION_ID_ARG, length(min = MIN_KEY_LEN, max = MAX_KEY_LEN))]
    pub(crate) operation_id: Option<String>,
}

impl ToolArgs for TransitionTicketArgs {}

#[tool_router(router = transition_ticket_tool, vis = "pub(crate)")]
impl TicketTools {
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
        self.write::<TransitionTicket>(args, &ctx).await
    }
}
