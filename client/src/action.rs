//! The writes, by the names the contract gives them: each key is
//! scoped to one of them, and the status lookup is addressed by it.
//! [`Action`] itself is derived from [`WriteRequest`]'s kinds
//! (`requests.rs`); here is what the client knows of each.
//!
//! [`WriteRequest`]: crate::WriteRequest

use std::fmt;
use std::str::FromStr;

use strum::VariantArray;

pub use crate::requests::Action;

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

impl Action {
    /// Every action, in the order [`WriteRequest`](crate::WriteRequest)'s
    /// kinds are declared.
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

    /// The contract's name, e.g. `create_ticket`.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// The action named `name`, if there is one.
    pub fn parse(name: &str) -> Option<Action> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
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
