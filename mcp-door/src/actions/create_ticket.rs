//! `create_ticket`: a new ticket, made once per operation_id.

use kitchen::actions::CreateTicket;
use kitchen::{FieldViolation, OperationKey, Outcome, TicketDraft, WriteOptions};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use crate::args::{Arguments, CreateTicketArgs};
use crate::outcomes::create_result;
use crate::results::CreateTicketResult;
use crate::tools::TicketTools;
use crate::writes::{ToolRequest, WriteTool};

/// `create_ticket`: the ticket's fields, as `preview_ticket` reads them.
impl WriteTool for CreateTicket {
    type Args = CreateTicketArgs;

    fn operation_id(args: &mut CreateTicketArgs) -> Option<String> {
        args.operation_id.take()
    }

    fn options(args: &CreateTicketArgs) -> WriteOptions {
        WriteOptions {
            confirm_new: args.confirm_new.unwrap_or(false),
        }
    }

    fn request(args: CreateTicketArgs, _: &mut Vec<FieldViolation>) -> ToolRequest<TicketDraft> {
        ToolRequest {
            request: TicketDraft::from(args.ticket),
            names_a_ticket: true,
        }
    }

    fn result(key: &OperationKey, outcome: Outcome) -> Result<CallToolResult, McpError> {
        create_result(key, outcome)
    }
}

/// The tool's description, as a model reads it (hashed into the contract,
/// and linted with every other: `mcp-door/tests/contract.rs`).
const DESCRIPTION: &str = "Create one ticket. operation_id makes retries safe: invent a fresh \
UUID for each ticket you intend, and reuse it with the same arguments on every retry after an \
error, timeout or lost reply: the retry returns the original ticket. If unsure whether it was \
made, call get_operation_status first.";

#[tool_router(router = create_ticket_tool, vis = "pub(crate)")]
impl TicketTools {
    #[tool(
        name = "create_ticket",
        description = DESCRIPTION,
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
        self.write::<CreateTicket>(args, &ctx).await
    }
}
