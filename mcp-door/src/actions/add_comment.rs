//! `add_comment`: a comment on a ticket.

use kitchen::{Action, CommentDraft, MAX_COMMENT_CHARS, MAX_KEY_LEN, MIN_KEY_LEN, TicketAt};
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
use crate::outcomes::{Answered, comment_write_result, unexpected};
use crate::results::CommentWriteResult;
use crate::tools::TicketTools;
use crate::writes::{WriteCall, WriteTool, answered, keyed, refused_arguments, unknown_ticket};

/// The add_comment tool.
pub(crate) struct AddComment;

impl WriteTool for AddComment {
    const ACTION: Action = Action::AddComment;
    type Args = Arguments<AddCommentArgs>;

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
        let draft = CommentDraft { body: args.body };
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
                .add_comment(
                    call.who.actor,
                    &key,
                    TicketAt::new(id, expected_version),
                    &draft,
                )
                .await
                .map_err(unexpected)?,
            None => unknown_ticket(),
        };
        answered(call.action, outcome, |o| comment_write_result(&key, o))
    }
}

/// `add_comment` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct AddCommentArgs {
    /// The ticket.
    #[schemars(required, description = contract::TICKET_ID_ARG)]
    pub(crate) ticket_id: Option<String>,
    /// The comment's text, not blank.
    #[schemars(required, length(min = 1, max = MAX_COMMENT_CHARS))]
    pub(crate) body: Option<String>,
    /// The version the caller expects, as in `update_ticket`.
    #[schemars(description = contract::EXPECTED_VERSION_ARG, range(min = 1))]
    pub(crate) expected_version: Option<i64>,
    /// The operation id.
    #[schemars(required, description = contract::OPERATION_ID_ARG, length(min = MIN_KEY_LEN, max = MAX_KEY_LEN))]
    pub(crate) operation_id: Option<String>,
}

impl ToolArgs for AddCommentArgs {}

#[tool_router(router = add_comment_tool, vis = "pub(crate)")]
impl TicketTools {
    // Not destructive: purely additive. Idempotent given the same
    // operation_id.
    #[tool(
        name = "add_comment",
        description = contract::ADD_COMMENT,
        output_schema = schema_for_output::<CommentWriteResult>(),
        annotations(
            title = "Add comment",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn add_comment(
        &self,
        Parameters(args): Parameters<Arguments<AddCommentArgs>>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.write::<AddComment>(args, &ctx).await
    }
}
