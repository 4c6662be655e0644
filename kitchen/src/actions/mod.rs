//! The write actions, one file each. Each is a [`WriteAction`]: a type that
//! says how its request is validated, what its fingerprint covers and what
//! it does inside the one transaction. The generic path in `crate::write`
//! does the rest.
//!
//! [`WriteAction`]: crate::write::WriteAction

pub(crate) mod add_comment;
pub(crate) mod add_label;
pub(crate) mod create_ticket;
mod mirror;
mod precondition;
pub(crate) mod remove_label;
pub(crate) mod transition_ticket;
pub(crate) mod update_ticket;

use uuid::Uuid;

use crate::KitchenError;
use crate::domain::comment::{Comment, CommentId};
use crate::domain::operation::OperationRecord;
use crate::domain::ticket::{Ticket, TicketId};
use crate::store::{self, Db};
use crate::write::WriteResult;

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
