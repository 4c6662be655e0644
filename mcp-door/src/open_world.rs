//! Which tools reach a system the service does not own: MCP's
//! `openWorldHint`.
//!
//! Hosts read a tool's annotations to decide what to run without asking,
//! so the annotations must say what the tool does on *this* deployment, not
//! on the default one. On the local backend nothing leaves the database;
//! on the remote backend a write the kitchen sends to the provider reaches
//! an open world, and so does a status read, which may search the provider
//! (it never sends anything there). The kitchen decides which is which;
//! this module only reads its answers once, when the tools are built.

use kitchen::{Action, Kitchen};

/// The tool that reads an operation's status.
const STATUS_TOOL: &str = "get_operation_status";

/// The tools whose calls reach a provider, as the kitchen's backend says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenWorld {
    /// Write actions the kitchen sends to a provider.
    sending: Vec<Action>,
    /// Whether a status read may search a provider.
    searching_status: bool,
}

impl OpenWorld {
    /// Nothing reaches outside the service's own database: the local
    /// backend.
    pub const CLOSED: Self = Self {
        sending: Vec::new(),
        searching_status: false,
    };

    /// What reaches a provider on `kitchen`'s backend.
    pub fn of(kitchen: &Kitchen) -> Self {
        Self {
            sending: Action::ALL
                .into_iter()
                .filter(|action| kitchen.action_reaches_a_provider(*action))
                .collect(),
            searching_status: kitchen.status_reads_reach_a_provider(),
        }
    }

    /// Whether a call of `tool` reaches a provider. Write tools are named
    /// after their action.
    pub(crate) fn reaches(&self, tool: &str) -> bool {
        match Action::parse(tool) {
            Some(action) => self.sending.contains(&action),
            None => tool == STATUS_TOOL && self.searching_status,
        }
    }
}
