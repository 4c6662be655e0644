//! The write actions, one file each. Each is a [`WriteAction`]: a type that
//! says how its request is validated, what its fingerprint covers, what it
//! does inside the one transaction, and whether a provider can do it. The
//! generic path in `crate::write` does the rest. A door names an action by
//! its type: `kitchen.write::<AddComment>(…)` ([`Kitchen::write`]).
//!
//! This file is the list of actions: a new one is a `mod` line, its type's
//! `pub use`, and one arm in [`with_type`], the one place an action's name
//! (as stored on a record) becomes its type.
//!
//! [`WriteAction`]: crate::write::WriteAction
//! [`Kitchen::write`]: crate::Kitchen::write

mod add_comment;
mod add_label;
#[cfg(test)]
mod archive_project;
mod create_ticket;
mod mirror;
mod precondition;
mod remove_label;
mod transition_ticket;
mod update_ticket;

pub use add_comment::AddComment;
pub use add_label::AddLabel;
pub use create_ticket::CreateTicket;
pub use remove_label::RemoveLabel;
pub use transition_ticket::TransitionTicket;
pub use update_ticket::UpdateTicket;

use uuid::Uuid;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::comment::{Comment, CommentId};
use crate::domain::operation::OperationRecord;
use crate::domain::ticket::{Ticket, TicketId};
use crate::store::{self, Db};
use crate::write::{ForAction, WriteAction, WriteResult};

/// Does `what` with the type of `action`: the one place an action's name
/// becomes its type (the reconciler knows an effect only by its record;
/// `crate::reaches_provider` asks by name).
pub(crate) fn with_type<F: ForAction>(action: Action, what: F) -> F::Out {
    match action {
        Action::CreateTicket => what.with::<CreateTicket>(),
        Action::UpdateTicket => what.with::<UpdateTicket>(),
        Action::TransitionTicket => what.with::<TransitionTicket>(),
        Action::AddComment => what.with::<AddComment>(),
        Action::AddLabel => what.with::<AddLabel>(),
        Action::RemoveLabel => what.with::<RemoveLabel>(),
        #[cfg(test)]
        Action::ArchiveProject => what.with::<archive_project::ArchiveProject>(),
    }
}

/// Whether the likely-duplicate guard looks at `action`: a repeat of it
/// under a new key is a new thing (a create, a comment), so a caller
/// may say `confirm_new` for it.
pub fn guarded(action: Action) -> bool {
    struct Guarded;
    impl ForAction for Guarded {
        type Out = bool;
        fn with<A: WriteAction>(self) -> bool {
            A::GUARDED
        }
    }
    with_type(action, Guarded)
}

/// Create, update, transition and the label changes answer with the
/// ticket.
impl WriteResult for Ticket {
    fn resource_id(&self) -> Uuid {
        self.id.as_uuid()
    }

    async fn current(
        db: &Db,
        record: &OperationRecord,
        resource: Uuid,
    ) -> Result<Option<Self>, KitchenError> {
        store::tickets::find(db, record.tenant_id, TicketId::from_uuid(resource)).await
    }
}

/// `add_comment` answers with the comment; the record's ticket is the one
/// it was added to.
impl WriteResult for Comment {
    fn resource_id(&self) -> Uuid {
        self.id.as_uuid()
    }

    async fn current(
        db: &Db,
        record: &OperationRecord,
        resource: Uuid,
    ) -> Result<Option<Self>, KitchenError> {
        let Some(ticket) = record.ticket_id else {
            return Ok(None);
        };
        store::comments::find(db, record.tenant_id, ticket, CommentId::from_uuid(resource)).await
    }
}
