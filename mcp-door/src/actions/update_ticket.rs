//! `update_ticket`: a merge patch of a ticket's fields, where a null
//! description or assignee removes it.

use kitchen::actions::UpdateTicket;
use kitchen::{
    FieldViolation, MAX_ASSIGNEE_CHARS, MAX_DESCRIPTION_CHARS, MAX_KEY_LEN, MAX_TITLE_CHARS,
    MIN_KEY_LEN, OperationKey, Outcome, RetrySafeWrite, TicketPatch, TicketUpdate,
};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::args::{Arguments, ToolArgs, present};
use crate::contract;
use crate::fields::target;
use crate::outcomes::ticket_write_result;
use crate::results::{TicketWriteResult, priority_names};
use crate::tools::TicketTools;
use crate::writes::{ToolRequest, WriteTool};

impl WriteTool for UpdateTicket {
    type Args = UpdateTicketArgs;

    fn operation_id(args: &mut UpdateTicketArgs) -> Option<String> {
        args.operation_id.take()
    }

    fn request(
        args: UpdateTicketArgs,
        problems: &mut Vec<FieldViolation>,
    ) -> ToolRequest<TicketUpdate> {
        let (at, names_a_ticket) = target(args.ticket_id, args.expected_version, problems);
        let update = TicketUpdate {
            ticket_id: at.ticket_id,
            expected_version: at.expected_version,
            // Title and priority cannot be removed, so for them a null was
            // read as left out; description and assignee keep theirs.
            patch: TicketPatch {
                title: args.title.map(Some),
                description: args.description,
                priority: args.priority.map(Some),
                assignee: args.assignee,
            },
        };
        ToolRequest {
            request: update,
            names_a_ticket,
        }
    }

    fn result(key: &OperationKey, outcome: Outcome) -> Result<CallToolResult, McpError> {
        ticket_write_result(Self::ACTION, key, outcome)
    }
}

/// `update_ticket` arguments: a merge patch of the ticket's fields.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct UpdateTicketArgs {
    /// The ticket.
    #[schemars(required, description = contract::TICKET_ID_ARG)]
    pub(crate) ticket_id: Option<String>,
    /// New title: one line, not blank.
    #[schemars(length(min = 1, max = MAX_TITLE_CHARS))]
    pub(crate) title: Option<String>,
    /// New description.
    #[serde(default, deserialize_with = "present")]
    #[schemars(description = contract::NEW_DESCRIPTION_ARG, length(max = MAX_DESCRIPTION_CHARS))]
    pub(crate) description: Option<Option<String>>,
    /// New priority.
    #[schemars(extend("enum" = priority_names()))]
    pub(crate) priority: Option<String>,
    /// New assignee.
    #[serde(default, deserialize_with = "present")]
    #[schemars(description = contract::ASSIGNEE_ARG, length(min = 1, max = MAX_ASSIGNEE_CHARS))]
    pub(crate) assignee: Option<Option<String>>,
    /// The version the caller expects.
    #[schemars(description = contract::EXPECTED_VERSION_ARG, range(min = 1))]
    // i64, as a version is: 0, -1 or 1e12 reach the kitchen's range check.
    pub(crate) expected_version: Option<i64>,
    /// The operation id.
    #[schemars(required, description = contract::OPERATION_ID_ARG, length(min = MIN_KEY_LEN, max = MAX_KEY_LEN))]
    pub(crate) operation_id: Option<String>,
}

impl ToolArgs for UpdateTicketArgs {
    const NULL_REMOVES: &'static [&'static str] = &["description", "assignee"];
}

/// The tool's description, as a model reads it (hashed into the contract,
/// and linted with every other: `mcp-door/tests/contract.rs`).
const DESCRIPTION: &str = "Change a ticket's title, description, priority or assignee; \
arguments left out are kept. With expected_version, the change is refused if the ticket changed \
since you read it. operation_id works as in create_ticket.";

#[tool_router(router = update_ticket_tool, vis = "pub(crate)")]
impl TicketTools {
    // Destructive: it replaces or removes a title, description, priority or
    // assignee, and no tool brings the old value back (the ticket's history
    // keeps it, but no tool reads it). A client that confirms destructive
    // calls with its user should confirm this one. Idempotent: given the
    // same operation_id, a repeat changes nothing again.
    #[tool(
        name = "update_ticket",
        description = DESCRIPTION,
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
        self.write::<UpdateTicket>(args, &ctx).await
    }
}
