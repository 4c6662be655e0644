//! What the service answers with, as this client reads it: tickets,
//! comments, history and their pages. The client's own types, read from
//! the JSON the contract documents; unknown fields are ignored, so a
//! server that adds a field does not break a client.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

/// A ticket's id (a UUID the server made). Only a UUID can name a ticket,
/// so a path built from one never needs escaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct TicketId(Uuid);

impl TicketId {
    /// The id as a UUID.
    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl From<Uuid> for TicketId {
    fn from(id: Uuid) -> Self {
        Self(id)
    }
}

impl FromStr for TicketId {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self)
    }
}

impl fmt::Display for TicketId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// How urgent a ticket is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// `low`.
    Low,
    /// `normal`, the default.
    Normal,
    /// `high`.
    High,
    /// `urgent`.
    Urgent,
}

impl Priority {
    /// The contract's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Urgent => "urgent",
        }
    }
}

impl FromStr for Priority {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Priority::Low,
            Priority::Normal,
            Priority::High,
            Priority::Urgent,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
        .ok_or_else(|| format!("{s:?} is not a priority (low, normal, high, urgent)"))
    }
}

/// Where a ticket is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TicketStatus {
    /// `open`, where every ticket starts.
    Open,
    /// `in_progress`.
    InProgress,
    /// `resolved`.
    Resolved,
    /// `closed`.
    Closed,
}

impl TicketStatus {
    /// The contract's name.
    pub fn as_str(self) -> &'static str {
        match self {
            TicketStatus::Open => "open",
            TicketStatus::InProgress => "in_progress",
            TicketStatus::Resolved => "resolved",
            TicketStatus::Closed => "closed",
        }
    }
}

impl FromStr for TicketStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            TicketStatus::Open,
            TicketStatus::InProgress,
            TicketStatus::Resolved,
            TicketStatus::Closed,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
        .ok_or_else(|| format!("{s:?} is not a status (open, in_progress, resolved, closed)"))
    }
}

/// A ticket, as the service shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ticket {
    /// Its id.
    pub id: TicketId,
    /// Its project's slug.
    pub project_id: String,
    /// One-line summary.
    pub title: String,
    /// Longer text, if any.
    pub description: Option<String>,
    /// How urgent.
    pub priority: Priority,
    /// Where it is in its life.
    pub status: TicketStatus,
    /// When it was made.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The ticket provider's id for it (remote backend only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_ticket_id: Option<String>,
    /// Who works on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// 1 at creation, +1 per change: what `If-Match` takes.
    pub version: u64,
    /// When it last changed.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub updated_at: Option<OffsetDateTime>,
    /// Its labels, in order (none on a service older than labels).
    #[serde(default)]
    pub labels: Vec<String>,
}

/// A comment on a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    /// Its id (a UUID the server made).
    pub id: Uuid,
    /// The ticket it is on.
    pub ticket_id: TicketId,
    /// The text.
    pub body: String,
    /// When it was added.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The ticket provider's id for it (remote backend only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_comment_id: Option<String>,
}

/// A page of tickets, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TicketPage {
    /// The tickets.
    pub tickets: Vec<Ticket>,
    /// Pass as the next page's cursor; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// A page of a ticket's comments, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentPage {
    /// The comments.
    pub comments: Vec<Comment>,
    /// Pass as the next page's cursor; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// One field's change in a history entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldChange {
    /// Before the write (`null` for none).
    pub from: serde_json::Value,
    /// After it.
    pub to: serde_json::Value,
}

/// One write that changed a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// Its id.
    pub id: Uuid,
    /// The ticket changed.
    pub ticket_id: TicketId,
    /// The write's action name (e.g. `update_ticket`).
    pub action: String,
    /// The write's operation key.
    pub operation_key: String,
    /// The id of the API token it was made with, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_token_id: Option<Uuid>,
    /// Every field it changed.
    pub changes: BTreeMap<String, FieldChange>,
    /// The ticket's version after it.
    pub version: u64,
    /// When it committed.
    #[serde(with = "time::serde::rfc3339")]
    pub recorded_at: OffsetDateTime,
}

/// A page of a ticket's history, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryPage {
    /// The entries.
    pub entries: Vec<HistoryEntry>,
    /// Pass as the next page's cursor; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// Which page of a list to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRequest {
    /// Page size (the server's default when `None`).
    pub limit: Option<u32>,
    /// The previous page's `next_cursor`.
    pub cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract's own examples (the server's snapshot tests use the
    /// same two shapes) read into the client's types.
    #[test]
    fn tickets_and_comments_read_from_the_contracts_json() {
        for json in [
            r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk","description":null,"priority":"normal","status":"open","created_at":"2026-11-30T12:00:00.123456Z","version":1}"#,
            r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","project_id":"ops","title":"Disk","description":"d","priority":"high","status":"in_progress","created_at":"2026-11-30T12:00:00Z","provider_ticket_id":"SIM-1","assignee":"Ada","version":3,"updated_at":"2026-11-30T12:00:01.5Z","a_field_added_later":true}"#,
        ] {
            let ticket: Ticket = serde_json::from_str(json).expect("a ticket");
            assert_eq!(ticket.project_id, "ops");
        }
        let comment: Comment = serde_json::from_str(
            r#"{"id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79","ticket_id":"0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a","body":"hi","created_at":"2026-11-30T12:00:00Z"}"#,
        )
        .expect("a comment");
        assert_eq!(comment.body, "hi");
        assert!(
            serde_json::from_str::<Ticket>(r#"{"id":"not-a-uuid"}"#).is_err(),
            "a ticket without its fields is not a ticket"
        );
    }

    #[test]
    fn names_parse_back() {
        for s in ["open", "in_progress", "resolved", "closed"] {
            assert_eq!(s.parse::<TicketStatus>().map(TicketStatus::as_str), Ok(s));
        }
        for p in ["low", "normal", "high", "urgent"] {
            assert_eq!(p.parse::<Priority>().map(Priority::as_str), Ok(p));
        }
        assert!("done".parse::<TicketStatus>().is_err());
    }
}
