//! Which door a call came through: the one label every measurement shares.
//! A leaf, so that attempts, metrics and stats can all name it without
//! importing each other.

use std::fmt;

/// Which door an attempt came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Door {
    /// HTTP with `Idempotency-Key`.
    Rest,
    /// MCP with `operation_id`.
    Mcp,
}

impl Door {
    /// `rest` or `mcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Rest => "rest",
            Door::Mcp => "mcp",
        }
    }
}

impl fmt::Display for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
