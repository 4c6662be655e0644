//! `create_ticket`: a new ticket, made once per operation_id.

use kitchen::{Action, TicketDraft};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use crate::args::{Arguments, CreateTicketArgs, Read};
use crate::contract;
use crate::outcomes::{Answered, create_result, unexpected};
use crate::results::CreateTicketResult;
use crate::tools::TicketTools;
use crate::writes::{WriteCall, WriteTool, answered, keyed, refused_arguments};

/// The create_ticket tool.
pub(crate) struct CreateTicket;

impl WriteTool for CreateTicket {
    const ACTION: Action = Action::CreateTicket;
    type Args = Arguments<CreateTicketArgs>;

    async fn perform(
        tools: &TicketTools,
        call: &WriteCall,
        args: Self::Args,
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
        let outcome = tools
            .kitchen
            .create_ticket(call.who.actor, &key, &draft)
            .await
            .map_err(unexpected)?;
        answered(call.action, outcome, |o| create_result(&key, o))
    }
}

#[tool_router(router = create_ticket_tool, vis = "pub(crate)")]
impl TicketTools {
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
        self.write::<CreateTicket>(args, &ctx).await
    }
}
