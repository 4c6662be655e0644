//! Actions: what an operation does, and so part of an operation key's scope.

use std::fmt;

use serde::Serialize;

/// What an operation does. Part of the key's scope: the same key may name
/// one effect per action. The same action whichever door the call came in by,
/// which is what makes REST and MCP share one key namespace.
///
/// Each variant is one write action; a new action adds a variant here and
/// to [`Action::ALL`] (see `docs/adding-an-action.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Create one ticket.
    CreateTicket,
    /// Edit a ticket's title, description, priority or assignee.
    UpdateTicket,
    /// Move a ticket to another status.
    TransitionTicket,
    /// Add a comment to a ticket.
    AddComment,
    /// Put a label on a ticket.
    AddLabel,
    /// Take a label off a ticket.
    RemoveLabel,
}

impl Action {
    /// Every action, in the order the docs list them.
    pub const ALL: [Action; 6] = [
        Self::CreateTicket,
        Self::UpdateTicket,
        Self::TransitionTicket,
        Self::AddComment,
        Self::AddLabel,
        Self::RemoveLabel,
    ];

    /// The action's stable name, as stored and as shown in URLs. Never
    /// rename one: stored operation records carry it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CreateTicket => "create_ticket",
            Self::UpdateTicket => "update_ticket",
            Self::TransitionTicket => "transition_ticket",
            Self::AddComment => "add_comment",
            Self::AddLabel => "add_label",
            Self::RemoveLabel => "remove_label",
        }
    }

    /// Parses an action name such as `create_ticket`.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == raw)
    }

    /// Every action's name, comma separated, for messages.
    pub fn names() -> String {
        Self::ALL.map(Self::as_str).join(", ")
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
