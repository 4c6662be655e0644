//! The write actions, one file each. Each is a [`WriteAction`]: a type that
//! says how its request is validated, what its fingerprint covers and what
//! it does inside the one transaction. The generic path in `crate::write`
//! does the rest.
//!
//! [`WriteAction`]: crate::write::WriteAction

pub(crate) mod add_comment;
pub(crate) mod create_ticket;
pub(crate) mod transition_ticket;
pub(crate) mod update_ticket;

use uuid::Uuid;

use crate::KitchenError;
use crate::domain::operation::OperationRecord;
use crate::domain::ticket::{Ticket, TicketId};
use crate::store::{self, Db};

/// `current` for the actions whose result is a ticket: the ticket as it is
/// now.
pub(crate) async fn current_ticket(
    db: &Db,
    record: &OperationRecord,
    resource: Uuid,
) -> Result<Option<Ticket>, KitchenError> {
    store::tickets::find(db, record.tenant_id, TicketId::from_uuid(resource)).await
}
