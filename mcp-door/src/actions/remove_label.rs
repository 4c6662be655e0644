//! `remove_label`: a label taken off a ticket. Its arguments are read as
//! `add_label` reads them (`add_label.rs`).

use kitchen::actions::RemoveLabel;
use kitchen::{FieldViolation, LabelDraft, OperationKey, Outcome, RetrySafeWrite, TicketAt};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use super::add_label::{LabelArgs, label_request};
use crate::args::Arguments;
use crate::outcomes::ticket_write_result;
use crate::results::TicketWriteResult;
use crate::tools::TicketTools;
use crate::writes::{ToolRequest, WriteTool};

impl WriteTool for RemoveLabel {
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

/// The tool's description, as a model reads it (hashed into the contract,
/// and linted with every other: `mcp-door/tests/contract.rs`).
const DESCRIPTION: &str = "Take a label off a ticket; one it lacks changes nothing. \
operation_id works as in create_ticket.";

#[tool_router(router = remove_label_tool, vis = "pub(crate)")]
impl TicketTools {
    // Not destructive in MCP's sense: the label can be put back, and the
    // change is recorded. Idempotent given the same operation_id (and a
    // label the ticket lacks changes nothing).
    #[tool(
        name = "remove_label",
        description = DESCRIPTION,
        output_schema = schema_for_output::<TicketWriteResult>(),
        annotations(
            title = "Remove label from ticket",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn remove_label(
        &self,
        Parameters(args): Parameters<Arguments<LabelArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.write::<RemoveLabel>(args, &ctx).await
    }
}
