//! `create_ticket`: make one ticket.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::fingerprint::CanonicalV1;
use crate::domain::ticket::{NewTicket, Ticket, TicketDraft};
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::store::planned::NewRow;
use crate::store::{self, write::WriteTx};
use crate::write::{Applied, Planned, WriteAction, WriteContext};

/// Makes one ticket, `open`, version 1.
pub(crate) struct CreateTicket;

impl WriteAction for CreateTicket {
    const ACTION: Action = Action::CreateTicket;
    type Request = TicketDraft;
    type Command = NewTicket;
    type Result = Ticket;
    type Canonical<'c> = CanonicalV1<'c>;

    fn validate(request: &TicketDraft) -> Result<NewTicket, Vec<FieldViolation>> {
        request.validate()
    }

    fn canonical(command: &NewTicket) -> CanonicalV1<'_> {
        command.canonical()
    }

    async fn apply(
        command: &NewTicket,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Ticket>, Refusal>, KitchenError> {
        let planned = plan(command, write);
        store::planned::insert(tx, write.tenant(), &planned.rows).await?;
        Ok(Ok(Applied {
            ticket: planned.ticket,
            result: planned.result,
        }))
    }

    fn planned(command: &NewTicket, write: &WriteContext) -> Option<Planned<Ticket>> {
        Some(plan(command, write))
    }
}

/// Everything a create writes, known from its command: the ticket and its
/// first history entry.
fn plan(command: &NewTicket, write: &WriteContext) -> Planned<Ticket> {
    let ticket = command.clone().into_ticket(write.now);
    let history = write.history(ticket.id, created(&ticket), ticket.version);
    Planned {
        ticket: ticket.id,
        rows: vec![NewRow::Ticket(ticket.clone()), NewRow::History(history)],
        result: ticket,
    }
}

/// A new ticket's history: every field it was made with.
pub(crate) fn created(ticket: &Ticket) -> Changes {
    let mut changes = Changes::default();
    changes.added("project_id", &ticket.project_id);
    changes.added("title", &ticket.title);
    changes.added("description", &ticket.description);
    changes.added("priority", ticket.priority);
    changes.added("status", ticket.status);
    changes
}
