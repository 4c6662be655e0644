//! A ticket's history: one entry per write that changed it, written in the
//! same transaction as the change. A replay changes nothing, so it adds no
//! entry.

use serde::Serialize;
use time::OffsetDateTime;
use uuid::Uuid;

use super::action::Action;
use super::change::Changes;
use super::operation::OperationKey;
use super::page::{Cursor, PageSize};
use super::tenant::TokenId;
use super::ticket::{TicketId, Version};

/// One change to a ticket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HistoryEntry {
    /// Server-made UUID v7: entries sort by id in the order they happened.
    pub id: Uuid,
    /// The ticket changed.
    pub ticket_id: TicketId,
    /// The write that changed it.
    pub action: Action,
    /// The caller's operation key for that write.
    pub operation_key: OperationKey,
    /// The API token the caller authenticated with, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_token_id: Option<TokenId>,
    /// Every field the write changed, with its value before and after.
    pub changes: Changes,
    /// The ticket's version after the write.
    pub version: Version,
    /// When the write committed (RFC 3339, UTC, microsecond precision).
    #[serde(with = "time::serde::rfc3339")]
    pub recorded_at: OffsetDateTime,
}

/// One page of a ticket's history, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryPage {
    /// The entries.
    pub entries: Vec<HistoryEntry>,
    /// Pass this back for the next page; `None` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl HistoryPage {
    pub(crate) fn from_overfetch(mut entries: Vec<HistoryEntry>, size: PageSize) -> Self {
        let next_cursor = Cursor::after_overfetch(&mut entries, size, |e| e.id);
        Self {
            entries,
            next_cursor,
        }
    }
}
