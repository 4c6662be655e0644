//! Actions: what an operation does, and so part of an operation key's scope.

use std::fmt;

use serde::Serialize;

/// What an operation does. Part of the key's scope: the same key may name
/// one effect per action. The same action whichever door the call came in by,
/// which is what makes REST and MCP share one key namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Create one ticket.
    CreateTicket,
}

impl Action {
    /// The action's stable name, as stored and as shown in URLs.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CreateTicket => "create_ticket",
        }
    }

    /// Parses an action name such as `create_ticket`.
    pub fn parse(raw: &str) -> Option<Self> {
        (raw == "create_ticket").then_some(Self::CreateTicket)
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
