//! `transition_ticket`: a move to another status.

use kitchen::actions::TransitionTicket;
use kitchen::{
    FieldViolation, MAX_KEY_LEN, MAX_REASON_CHARS, MIN_KEY_LEN, OperationKey, Outcome,
    RetrySafeWrite, TicketAt, TransitionDraft,
};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::args::{Arguments, ToolArgs};
use crate::contract;
use crate::fields::target;
use crate::outcomes::ticket_write_result;
use crate::results::{TicketWriteResult, status_names};
use crate::tools::TicketTools;
use crate::writes::{ToolRequest, WriteTool};

impl WriteTool for TransitionTicket {
    type Args = TransitionTicketArgs;

    fn operation_id(args: &mut TransitionTicketArgs) -> Option<String> {
        args.operation_id.take()
    }

    fn request(
        args: TransitionTicketArgs,
        problems: &mut Vec<FieldViolation>,
    ) -> ToolRequest<(TicketAt, TransitionDraft)> {
        let (at, names_a_ticket) = target(args.ticket_id, args.expected_version, problems);
        let draft = TransitionDraft {
            to: args.to,
            reason: args.reason,
        };
        ToolRequest {
            request: (at, draft),
            names_a_ticket,
        }
    }

    fn result(key: &OperationKey, outcome: Outcome) -> Result<CallToolResult, McpError> {
        ticket_write_result(Self::ACTION, key, outcome)
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

/// The tool's description, as a model reads it (hashed into the contract,
/// and linted with every other: `mcp-door/tests/contract.rs`).
const DESCRIPTION: &str = "Move a ticket to another status. Only some moves are \
allowed; a refused move lists allowed_moves. operation_id works as in create_ticket.";

#[tool_router(router = transition_ticket_tool, vis = "pub(crate)")]
impl TicketTools {
    // Not destructive: a status move loses nothing. Every status can be
    // reached again (closed reopens), and the move is recorded.
    // Idempotent given the same operation_id, as every write.
    #[tool(
        name = "transition_ticket",
        description = DESCRIPTION,
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
