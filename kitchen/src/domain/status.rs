//! The ticket status machine: where a ticket can be, and where it may go
//! from there.
//!
//! ```text
//! open → in_progress → resolved → closed
//!            ↑____________|          |
//! open ←_____________________________|   (reopen)
//! ```

use serde::{Deserialize, Serialize};

use super::violation::FieldViolation;

/// Where a ticket is in its life. Every ticket starts `open`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TicketStatus {
    /// Just created, not yet worked on.
    Open,
    /// Somebody is working on it.
    InProgress,
    /// The work is done; waiting to be confirmed and closed.
    Resolved,
    /// Finished. Reopening moves it back to `open`.
    Closed,
}

impl TicketStatus {
    /// Every status, in lifecycle order.
    pub const ALL: [TicketStatus; 4] = [Self::Open, Self::InProgress, Self::Resolved, Self::Closed];

    /// The status as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::InProgress => "in_progress",
            Self::Resolved => "resolved",
            Self::Closed => "closed",
        }
    }

    /// Parses a status a caller sent, naming `field` when it is not one.
    pub fn parse_field(raw: &str, field: &str) -> Result<Self, FieldViolation> {
        Self::parse(raw).ok_or_else(|| {
            FieldViolation::new(
                field,
                "unknown_value",
                format!(
                    "{field} must be one of {}; got {raw:?}",
                    Self::ALL.map(Self::as_str).join(", ")
                ),
            )
        })
    }

    pub(crate) fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }

    /// The statuses a ticket may move to from this one. Staying put is not a
    /// move: a transition to the current status is refused like any other
    /// move not listed here.
    pub fn allowed_moves(self) -> &'static [TicketStatus] {
        match self {
            Self::Open => &[Self::InProgress],
            Self::InProgress => &[Self::Resolved],
            Self::Resolved => &[Self::Closed, Self::InProgress],
            Self::Closed => &[Self::Open],
        }
    }

    /// Whether a ticket may move from this status to `to`.
    pub fn may_move_to(self, to: TicketStatus) -> bool {
        self.allowed_moves().contains(&to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_the_documented_one() {
        let moves: Vec<(&str, &str)> = TicketStatus::ALL
            .into_iter()
            .flat_map(|from| {
                TicketStatus::ALL
                    .into_iter()
                    .filter(move |to| from.may_move_to(*to))
                    .map(move |to| (from.as_str(), to.as_str()))
            })
            .collect();
        assert_eq!(
            moves,
            [
                ("open", "in_progress"),
                ("in_progress", "resolved"),
                ("resolved", "in_progress"),
                ("resolved", "closed"),
                ("closed", "open"),
            ]
        );
    }

    #[test]
    fn every_status_round_trips_its_name() {
        for status in TicketStatus::ALL {
            assert_eq!(TicketStatus::parse(status.as_str()), Some(status));
        }
        let violation = TicketStatus::parse_field("done", "to").expect_err("unknown");
        assert!(
            violation
                .message
                .contains("open, in_progress, resolved, closed")
        );
    }
}
