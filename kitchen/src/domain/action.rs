//! Actions: what an operation does, and so part of an operation key's scope.

use std::fmt;

use serde::Serialize;
use strum::VariantArray;

/// What an operation does. Part of the key's scope: the same key may name
/// one effect per action. The same action whichever door the call came in by,
/// which is what makes REST and MCP share one key namespace.
///
/// Each variant is one write action; a new action is a new variant here
/// (see `docs/adding-an-action.md`). Its stable name, stored on every
/// operation record and shown in URLs, is the variant's name in snake case
/// (`AddComment` is `add_comment`), for serde and [`Action::as_str`] alike;
/// so never rename a variant (a test pins every name).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, strum::IntoStaticStr, strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
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
    /// The guide's example of an effect that is not a ticket
    /// (`actions/archive_project.rs`): it exists only in the kitchen's own
    /// tests, so no door or stored record ever names it.
    #[cfg(test)]
    ArchiveProject,
}

impl Action {
    /// Every action, in the order they are declared (the order the docs
    /// list them): derived, so a new variant is in it.
    pub const ALL: [Action; <Action as VariantArray>::VARIANTS.len()] = {
        let variants = <Action as VariantArray>::VARIANTS;
        let mut all = [Action::CreateTicket; <Action as VariantArray>::VARIANTS.len()];
        let mut i = 0;
        while i < all.len() {
            all[i] = variants[i];
            i += 1;
        }
        all
    };

    /// The action's stable name, as stored and as shown in URLs. Never
    /// rename one: stored operation records carry it.
    pub fn as_str(self) -> &'static str {
        self.into()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Stored operation records and URLs carry these names: a renamed
    /// variant would orphan every record of it. A new action adds its name
    /// here, before the guide's example (the compiler asks: the list is one
    /// name short).
    #[test]
    fn every_action_keeps_its_stable_name() {
        let names = Action::ALL.map(Action::as_str);
        assert_eq!(
            names,
            [
                "create_ticket",
                "update_ticket",
                "transition_ticket",
                "add_comment",
                "add_label",
                "remove_label",
                // The guide's example, which exists only in these tests.
                "archive_project",
            ]
        );
        for action in Action::ALL {
            assert_eq!(Action::parse(action.as_str()), Some(action));
            assert_eq!(
                serde_json::to_value(action).expect("JSON"),
                action.as_str(),
                "serde and as_str agree"
            );
        }
    }
}
