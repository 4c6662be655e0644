//! The likely-duplicate guard: what it does with a write whose content
//! matches a recent one under another key, and what it points at.
//!
//! The guard exists for callers that mint a fresh key for what is really a
//! retry (an agent that invents a new `operation_id` after a timeout): key
//! dedup cannot see those. It looks only at writes where a repeat is a new
//! thing (a create, a comment), only at keys used for the first time, and
//! only within one tenant and one action.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

use super::action::Action;
use super::operation::{OperationKey, OperationState};
use super::ticket::TicketId;

/// How long after a write another with the same content under a new key
/// counts as a likely duplicate, by default: 10 minutes.
pub const DEFAULT_DUPLICATE_WINDOW: Duration = Duration::from_secs(600);

/// What the guard does with a likely duplicate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GuardMode {
    /// Nothing: every new key is a new write.
    Off,
    /// The write goes ahead, and its answer points at the earlier one
    /// (`possible_duplicate_of`). The default.
    Warn,
    /// The write is refused ([`Refusal::PossibleDuplicate`](crate::Refusal)),
    /// nothing written and the key unused, unless the caller says it means
    /// a new one (`confirm_new`).
    Confirm,
}

impl GuardMode {
    /// Every mode, as settings and the admin command name them.
    pub const ALL: [GuardMode; 3] = [GuardMode::Off, GuardMode::Warn, GuardMode::Confirm];

    /// `off`, `warn` or `confirm`: as stored and as set.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Warn => "warn",
            Self::Confirm => "confirm",
        }
    }
}

impl FromStr for GuardMode {
    type Err = String;

    fn from_str(raw: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|mode| mode.as_str() == raw)
            .ok_or_else(|| format!("{raw:?} is not a guard mode (off, warn or confirm)"))
    }
}

impl fmt::Display for GuardMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The deployment's guard: its mode (a tenant may have its own) and its
/// window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DuplicateGuard {
    /// What it does, for tenants without a mode of their own.
    pub mode: GuardMode,
    /// How far back it looks.
    pub window: Duration,
}

impl Default for DuplicateGuard {
    fn default() -> Self {
        Self {
            mode: GuardMode::Warn,
            window: DEFAULT_DUPLICATE_WINDOW,
        }
    }
}

/// The earlier write a new one looks like a duplicate of: same tenant,
/// same action, same content, another key, within the window, and made or
/// still possibly being made (succeeded, in progress or unknown).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierWrite {
    /// Its action.
    pub action: Action,
    /// Its key: a retry of that write should have used it.
    pub key: OperationKey,
    /// How far it got.
    pub state: OperationState,
    /// The ticket it made or acted on, once there is one.
    pub ticket_id: Option<TicketId>,
    /// What it made (for a comment, the comment), once it did.
    pub resource_id: Option<Uuid>,
    /// When it was first tried.
    pub created_at: OffsetDateTime,
}

/// Whether a caller says a write that looks like a repeat is meant as a
/// new one (`confirm_new`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// The caller means a new effect even if its content matches a recent
    /// one: the guard lets it through without a word.
    pub confirm_new: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_back_and_unknown_ones_are_refused_by_name() {
        for mode in GuardMode::ALL {
            assert_eq!(mode.as_str().parse::<GuardMode>(), Ok(mode));
        }
        let refused = "strict".parse::<GuardMode>().expect_err("unknown");
        assert!(refused.contains("strict") && refused.contains("confirm"));
    }
}
