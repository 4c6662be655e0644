//! The writes, by the names the contract gives them: each key is
//! scoped to one of them, and the status lookup is addressed by it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A write action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// `POST /v1/tickets`.
    CreateTicket,
    /// `PATCH /v1/tickets/{id}`.
    UpdateTicket,
    /// `POST /v1/tickets/{id}/transitions`.
    TransitionTicket,
    /// `POST /v1/tickets/{id}/comments`.
    AddComment,
    /// `POST /v1/tickets/{id}/labels`.
    AddLabel,
    /// `DELETE /v1/tickets/{id}/labels/{label}`.
    RemoveLabel,
}

/// What a write's success answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// The ticket (made, or as the change left it).
    Ticket,
    /// The comment added.
    Comment,
}

impl Made {
    /// `ticket` or `comment`.
    pub fn as_str(self) -> &'static str {
        match self {
            Made::Ticket => "ticket",
            Made::Comment => "comment",
        }
    }
}

/// The client's one table of actions, in `Action` order: each one's
/// contract name and what it answers with. A test checks the names
/// against the server's OpenAPI document.
const TABLE: [(Action, &str, Made); 6] = [
    (Action::CreateTicket, "create_ticket", Made::Ticket),
    (Action::UpdateTicket, "update_ticket", Made::Ticket),
    (Action::TransitionTicket, "transition_ticket", Made::Ticket),
    (Action::AddComment, "add_comment", Made::Comment),
    (Action::AddLabel, "add_label", Made::Ticket),
    (Action::RemoveLabel, "remove_label", Made::Ticket),
];

impl Action {
    /// Every action.
    pub const ALL: [Action; 6] = [
        TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0, TABLE[4].0, TABLE[5].0,
    ];

    /// The contract's name, e.g. `create_ticket`.
    pub fn as_str(self) -> &'static str {
        TABLE[self as usize].1
    }

    /// The action named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Action> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// What a successful answer carries: a ticket for the ticket writes, a
    /// comment for `add_comment`.
    pub fn made(self) -> Made {
        TABLE[self as usize].2
    }

    /// [`Action::made`], by name: `ticket` or `comment`.
    pub fn result_name(self) -> &'static str {
        self.made().as_str()
    }
}

impl FromStr for Action {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|a| a.as_str()).collect();
            format!("{s:?} is not an action ({})", names.join(", "))
        })
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_action_order() {
        for (i, (action, _, _)) in TABLE.iter().enumerate() {
            assert_eq!(*action as usize, i, "{action:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()), Some(action));
            let json = serde_json::to_value(action).expect("JSON");
            assert_eq!(json, action.as_str());
        }
        assert_eq!(Action::parse("delete_ticket"), None);
        assert!("delete_ticket".parse::<Action>().is_err());
    }
}
