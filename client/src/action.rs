//! The four writes, by the names the contract gives them: each key is
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
}

impl Action {
    /// Every action.
    pub const ALL: [Action; 4] = [
        Action::CreateTicket,
        Action::UpdateTicket,
        Action::TransitionTicket,
        Action::AddComment,
    ];

    /// The contract's name, e.g. `create_ticket`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::CreateTicket => "create_ticket",
            Action::UpdateTicket => "update_ticket",
            Action::TransitionTicket => "transition_ticket",
            Action::AddComment => "add_comment",
        }
    }

    /// The action named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Action> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// What a successful answer carries: a ticket for the three ticket
    /// writes, a comment for `add_comment`.
    pub fn result_name(self) -> &'static str {
        match self {
            Action::CreateTicket | Action::UpdateTicket | Action::TransitionTicket => "ticket",
            Action::AddComment => "comment",
        }
    }
}

impl FromStr for Action {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| {
            format!(
                "{s:?} is not an action (create_ticket, update_ticket, transition_ticket, \
                 add_comment)"
            )
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
