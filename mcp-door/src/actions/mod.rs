//! One file per write tool, as the kitchen has one file per action: the
//! tool's definition (its name, description, output schema and hints), its
//! arguments (read through `args::Arguments`), and its
//! [`WriteTool`](crate::writes::WriteTool), how its arguments become the
//! kitchen's command and its outcome the tool's result. What every write
//! shares is in `writes`; the tool's words are in `contract`, where they
//! are hashed and linted together.
//!
//! Each file adds its tool to the server with a router of its own
//! (`#[tool_router(router = …)]`); [`TicketTools::write_tools`] joins them,
//! and `tools.rs` joins those with the read tools'.

pub(crate) mod add_comment;
pub(crate) mod add_label;
pub(crate) mod create_ticket;
pub(crate) mod remove_label;
pub(crate) mod transition_ticket;
pub(crate) mod update_ticket;

use rmcp::handler::server::router::tool::ToolRouter;

use crate::tools::TicketTools;

impl TicketTools {
    /// Every write tool, each from the router of the file that defines it:
    /// a new action is its file's `mod` line above and one `+` here.
    pub(crate) fn write_tools() -> ToolRouter<Self> {
        Self::create_ticket_tool()
            + Self::update_ticket_tool()
            + Self::transition_ticket_tool()
            + Self::add_comment_tool()
            + Self::add_label_tool()
            + Self::remove_label_tool()
    }
}
