//! `update_ticket`: edit a ticket's title, description, priority or
//! assignee, optionally only if it is still at the version the caller saw.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::patch::{CanonicalEditV1, TicketEdit, TicketUpdate};
use crate::domain::ticket::Ticket;
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::store::{self, write::WriteTx};
use crate::write::{Applied, WriteAction, WriteContext};

/// Edits a ticket. A patch that changes nothing is still a valid command:
/// it takes the key and replays, but writes no new version or history.
pub(crate) struct UpdateTicket;

impl WriteAction for UpdateTicket {
    const ACTION: Action = Action::UpdateTicket;
    type Request = TicketUpdate;
    type Command = TicketEdit;
    type Result = Ticket;
    type Canonical<'c> = CanonicalEditV1<'c>;

    fn validate(request: &TicketUpdate) -> Result<TicketEdit, Vec<FieldViolation>> {
        request.validate()
    }

    fn canonical(command: &TicketEdit) -> CanonicalEditV1<'_> {
        command.canonical()
    }

    async fn apply(
        command: &TicketEdit,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Ticket>, Refusal>, KitchenError> {
        let Some(current) = store::tickets::lock(tx, write.tenant(), command.ticket_id).await?
        else {
            return Ok(Err(Refusal::TicketNotFound {
                ticket_id: command.ticket_id,
            }));
        };
        if let Some(expected) = command.expected_version
            && expected != current.version
        {
            return Ok(Err(Refusal::VersionMismatch {
                expected,
                current: current.version,
            }));
        }
        let (mut edited, changes) = command.apply_to(&current);
        if !changes.is_empty() {
            edited.version = current.version.next();
            edited.updated_at = Some(write.now);
            store::tickets::save(tx, write.tenant(), &edited).await?;
            let entry = write.history(edited.id, changes, edited.version);
            store::history::append(tx, write.tenant(), &entry).await?;
        }
        Ok(Ok(Applied {
            ticket: edited.id,
            result: edited,
        }))
    }
}
