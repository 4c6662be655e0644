//! What an action is handed besides its command ([`WriteContext`]), and
//! what its `apply` answers ([`Applied`], or [`Planned`] for a write known
//! before anything is read).

use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::history::HistoryEntry;
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::tenant::{Actor, TenantId};
use crate::domain::ticket::{TicketId, Version};
use crate::store::planned::NewRow;

/// What an action's `apply` made.
#[derive(Debug)]
pub(crate) struct Applied<R> {
    /// The result, frozen as the operation's snapshot.
    pub(crate) result: R,
    /// The ticket made or acted on, recorded on the operation; `None` for
    /// an effect that is not on a ticket (the record then names only the
    /// result's `WriteResult::resource_id`).
    pub(crate) ticket: Option<TicketId>,
}

/// A write known before anything is read: see `WriteAction::planned`.
#[derive(Debug, Clone)]
pub(crate) struct Planned<R> {
    /// The result, frozen as the operation's snapshot.
    pub(crate) result: R,
    /// The ticket made, recorded on the operation (`None`: not a ticket).
    pub(crate) ticket: Option<TicketId>,
    /// The rows to insert once the key is claimed.
    pub(crate) rows: Vec<NewRow>,
}

/// What an action is handed besides its command.
#[derive(Debug, Clone)]
pub(crate) struct WriteContext {
    /// Who is writing.
    pub(crate) actor: Actor,
    /// The action.
    pub(crate) action: Action,
    /// The caller's key.
    pub(crate) key: OperationKey,
    /// The write's one timestamp, cut to microseconds.
    pub(crate) now: OffsetDateTime,
}

impl WriteContext {
    /// The context of `actor`'s write that `record` is the claim of.
    pub(crate) fn of(actor: Actor, record: &OperationRecord) -> Self {
        Self {
            actor,
            action: record.action,
            key: record.key.clone(),
            now: record.created_at,
        }
    }

    /// The tenant everything is scoped to.
    pub(crate) fn tenant(&self) -> TenantId {
        self.actor.tenant
    }

    /// A history entry for this write.
    pub(crate) fn history(
        &self,
        ticket: TicketId,
        changes: Changes,
        version: Version,
    ) -> HistoryEntry {
        HistoryEntry {
            id: Uuid::now_v7(),
            ticket_id: ticket,
            action: self.action,
            operation_key: self.key.clone(),
            actor_token_id: self.actor.token,
            changes,
            version,
            recorded_at: self.now,
        }
    }
}
