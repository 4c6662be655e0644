//! `update_ticket`: a merge patch of a ticket's fields, where a null
//! description or assignee removes it.

use kitchen::{Action, TicketPatch, TicketUpdate};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResponse;
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use crate::args::{Arguments, Read, UpdateTicketArgs};
use crate::contract;
use crate::fields::{expected_version, named_ticket, no_ticket};
use crate::outcomes::{Answered, ticket_write_result, unexpected};
use crate::results::TicketWriteResult;
use crate::tools::TicketTools;
use crate::writes::{WriteCall, WriteTool, answered, keyed, refused_arguments, unknown_ticket};

/// The update_ticket tool.
pub(crate) struct UpdateTicket;

impl WriteTool for UpdateTicket {
    const ACTION: Action = Action::UpdateTicket;
    type Args = Arguments<UpdateTicketArgs>;

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
            Some(_) => tools
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
}

#[tool_router(router = update_ticket_tool, vis = "pub(crate)")]
impl TicketTools {
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
        self.write::<UpdateTicket>(args, &ctx).await
    }
}
