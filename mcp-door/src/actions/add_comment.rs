//! `add_comment`: a comment on a ticket.

use kitchen::actions::AddComment;
use kitchen::{
    Comment, CommentDraft, FieldViolation, MAX_COMMENT_CHARS, MAX_KEY_LEN, MIN_KEY_LEN,
    OperationKey, Outcome, TicketAt, WriteOptions,
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
use crate::outcomes::comment_write_result;
use crate::results::CommentWriteResult;
use crate::tools::TicketTools;
use crate::writes::{ToolRequest, WriteTool};

impl WriteTool for AddComment {
    type Args = AddCommentArgs;

    fn operation_id(args: &mut AddCommentArgs) -> Option<String> {
        args.operation_id.take()
    }

    fn options(args: &AddCommentArgs) -> WriteOptions {
        WriteOptions {
            confirm_new: args.confirm_new.unwrap_or(false),
        }
    }

    fn request(
        args: AddCommentArgs,
        problems: &mut Vec<FieldViolation>,
    ) -> ToolRequest<(TicketAt, CommentDraft)> {
        let (at, names_a_ticket) = target(args.ticket_id, args.expected_version, problems);
        ToolRequest {
            request: (at, CommentDraft { body: args.body }),
            names_a_ticket,
        }
    }

    fn result(key: &OperationKey, outcome: Outcome<Comment>) -> Result<CallToolResult, McpError> {
        comment_write_result(key, outcome)
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
    /// A second comment with the same text as a recent one is meant.
    #[schemars(description = contract::CONFIRM_NEW_ARG)]
    pub(crate) confirm_new: Option<bool>,
}

impl ToolArgs for AddCommentArgs {}

/// The tool's description, as a model reads it (hashed into the contract,
/// and linted with every other: `mcp-door/tests/contract.rs`).
const DESCRIPTION: &str = "Add a comment to a ticket. operation_id works as in \
create_ticket.";

#[tool_router(router = add_comment_tool, vis = "pub(crate)")]
impl TicketTools {
    // Not destructive: purely additive. Idempotent given the same
    // operation_id.
    #[tool(
        name = "add_comment",
        description = DESCRIPTION,
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
