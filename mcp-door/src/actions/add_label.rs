//! `add_label`: a label put on a ticket; and what `remove_label` shares
//! with it (the same arguments, read the same way).

use kitchen::actions::AddLabel;
use kitchen::{
    FieldViolation, LABEL_PATTERN, LabelDraft, MAX_KEY_LEN, MIN_KEY_LEN, OperationKey, Outcome,
    RetrySafeWrite, TicketAt,
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
use crate::results::TicketWriteResult;
use crate::tools::TicketTools;
use crate::writes::{ToolRequest, WriteTool};

impl WriteTool for AddLabel {
    type Args = LabelArgs;

    fn operation_id(args: &mut LabelArgs) -> Option<String> {
        args.operation_id.take()
    }

    fn request(
        args: LabelArgs,
        problems: &mut Vec<FieldViolation>,
    ) -> ToolRequest<(TicketAt, LabelDraft)> {
        label_request(args, problems)
    }

    fn result(key: &OperationKey, outcome: Outcome) -> Result<CallToolResult, McpError> {
        ticket_write_result(Self::ACTION, key, outcome)
    }
}

/// The request of `add_label` or `remove_label`, which read their
/// arguments alike.
pub(super) fn label_request(
    args: LabelArgs,
    problems: &mut Vec<FieldViolation>,
) -> ToolRequest<(TicketAt, LabelDraft)> {
    let (at, names_a_ticket) = target(args.ticket_id, args.expected_version, problems);
    ToolRequest {
        request: (at, LabelDraft { label: args.label }),
        names_a_ticket,
    }
}

/// `add_label` and `remove_label` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct LabelArgs {
    /// The ticket.
    #[schemars(required, description = contract::TICKET_ID_ARG)]
    pub(crate) ticket_id: Option<String>,
    /// The label.
    #[schemars(required, description = contract::LABEL_ARG, regex(pattern = LABEL_PATTERN))]
    pub(crate) label: Option<String>,
    /// The version the caller expects, as in `update_ticket`.
    #[schemars(description = contract::EXPECTED_VERSION_ARG, range(min = 1))]
    pub(crate) expected_version: Option<i64>,
    /// The operation id.
    #[schemars(required, description = contract::OPERATION_ID_ARG, length(min = MIN_KEY_LEN, max = MAX_KEY_LEN))]
    pub(crate) operation_id: Option<String>,
}

impl ToolArgs for LabelArgs {}

/// The tool's description, as a model reads it (hashed into the contract,
/// and linted with every other: `mcp-door/tests/contract.rs`).
const DESCRIPTION: &str = "Put a label on a ticket (at most 20); one it has changes nothing. \
operation_id works as in create_ticket.";

#[tool_router(router = add_label_tool, vis = "pub(crate)")]
impl TicketTools {
    // Not destructive: a label can be taken off again, and the change is
    // recorded. Idempotent given the same operation_id, as every write
    // (and a label the ticket has changes nothing).
    #[tool(
        name = "add_label",
        description = DESCRIPTION,
        output_schema = schema_for_output::<TicketWriteResult>(),
        annotations(
            title = "Add label to ticket",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn add_label(
        &self,
        Parameters(args): Parameters<Arguments<LabelArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.write::<AddLabel>(args, &ctx).await
    }
}
