//! `remove_label`: a label taken off a ticket. Its arguments are read as
//! `add_label` reads them (`add_label.rs`).

use kitchen::Action;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use super::add_label::{LabelArgs, Relabel, relabel};
use crate::args::Arguments;
use crate::contract;
use crate::outcomes::Answered;
use crate::results::TicketWriteResult;
use crate::tools::TicketTools;
use crate::writes::{WriteCall, WriteTool};

/// The remove_label tool.
pub(crate) struct RemoveLabel;

impl WriteTool for RemoveLabel {
    const ACTION: Action = Action::RemoveLabel;
    type Args = Arguments<LabelArgs>;

    async fn perform(
        tools: &TicketTools,
        call: &WriteCall,
        args: Self::Args,
    ) -> Result<Answered, McpError> {
        relabel(tools, call, args, Relabel::Remove).await
    }
}

#[tool_router(router = remove_label_tool, vis = "pub(crate)")]
impl TicketTools {
    // Not destructive in MCP's sense: the label can be put back, and the
    // change is recorded. Idempotent given the same operation_id (and a
    // label the ticket lacks changes nothing).
    #[tool(
        name = "remove_label",
        description = contract::REMOVE_LABEL,
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
