//! `add_label`: a label put on a ticket; and what `remove_label` shares
//! with it (the same arguments, read the same way).

use kitchen::{Action, LABEL_PATTERN, LabelDraft, MAX_KEY_LEN, MIN_KEY_LEN, TicketAt};
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
use crate::results::TicketWriteResult;
use crate::tools::TicketTools;
use crate::writes::{WriteCall, WriteTool, answered, keyed, refused_arguments, unknown_ticket};

/// The add_label tool.
pub(crate) struct AddLabel;

impl WriteTool for AddLabel {
    const ACTION: Action = Action::AddLabel;
    type Args = Arguments<LabelArgs>;

    async fn perform(
        tools: &TicketTools,
        call: &WriteCall,
        args: Self::Args,
    ) -> Result<Answered, McpError> {
        relabel(tools, call, args, Relabel::Add).await
    }
}

/// Which way a label write goes.
#[derive(Debug, Clone, Copy)]
pub(super) enum Relabel {
    /// `add_label`.
    Add,
    /// `remove_label`.
    Remove,
}

/// `add_label` or `remove_label`: the arguments read, then the kitchen's
/// write, then its result.
pub(super) async fn relabel(
    tools: &TicketTools,
    call: &WriteCall,
    args: Arguments<LabelArgs>,
    way: Relabel,
) -> Result<Answered, McpError> {
    let Read { args, problems } = args.read()?;
    let (key, mut problems) = match keyed(call.action, args.operation_id, problems) {
        Ok(keyed) => keyed,
        Err(answer) => return Ok(*answer),
    };
    call.keyed(&key);
    let ticket = named_ticket(args.ticket_id, &mut problems);
    let expected_version = expected_version(args.expected_version, &mut problems);
    let draft = LabelDraft { label: args.label };
    if !problems.is_empty() {
        let checked = draft
            .validate(ticket.unwrap_or_else(no_ticket))
            .err()
            .unwrap_or_default();
        return Ok(refused_arguments(call.action, &key, problems, checked));
    }
    let outcome = match ticket {
        Some(id) => {
            let (kitchen, actor) = (&tools.kitchen, call.who.actor);
            let at = TicketAt::new(id, expected_version);
            match way {
                Relabel::Add => kitchen.add_label(actor, &key, at, &draft).await,
                Relabel::Remove => kitchen.remove_label(actor, &key, at, &draft).await,
            }
            .map_err(unexpected)?
        }
        None => unknown_ticket(),
    };
    answered(call.action, outcome, |o| {
        ticket_write_result(call.action, &key, o)
    })
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

#[tool_router(router = add_label_tool, vis = "pub(crate)")]
impl TicketTools {
    // Not destructive: a label can be taken off again, and the change is
    // recorded. Idempotent given the same operation_id, as every write
    // (and a label the ticket has changes nothing).
    #[tool(
        name = "add_label",
        description = contract::ADD_LABEL,
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
