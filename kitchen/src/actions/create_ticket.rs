//! `create_ticket`: make one ticket.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::fingerprint::CanonicalV1;
use crate::domain::ticket::{NewTicket, Ticket, TicketDraft, TicketId};
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::provider::{EffectKind, ProviderEffect, ProviderWrite};
use crate::store::planned::NewRow;
use crate::store::{self, write::WriteTx};
use crate::write::{Applied, Planned, Reach, RetrySafeWrite, WriteAction, WriteContext};
use crate::write::{RemoteAction, wrong_kind};

/// Makes one ticket, `open`, version 1.
pub struct CreateTicket;

impl RetrySafeWrite for CreateTicket {
    const ACTION: Action = Action::CreateTicket;
    type Request = TicketDraft;
    type Result = Ticket;
}

impl WriteAction for CreateTicket {
    /// A second one with the same content is a new thing: the
    /// likely-duplicate guard looks at it.
    const GUARDED: bool = true;
    type Command = NewTicket;
    type Canonical<'c> = CanonicalV1<'c>;

    /// A provider can do it: see its `RemoteAction` below.
    fn reach<R: Reach<Self>>(at: R) -> R::Out {
        at.provider()
    }

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
        let planned = plan(command, write, None);
        store::planned::insert(tx, write.tenant(), &planned.rows).await?;
        Ok(Ok(Applied {
            ticket: planned.ticket,
            result: planned.result,
        }))
    }

    fn planned(command: &NewTicket, write: &WriteContext) -> Option<Planned<Ticket>> {
        Some(plan(command, write, None))
    }
}

/// On the remote backend the provider makes the ticket; the local copy
/// carries the provider's id.
impl RemoteAction for CreateTicket {
    const KIND: EffectKind = EffectKind::Ticket;

    fn target(_: &NewTicket) -> Option<TicketId> {
        None
    }

    fn allowed(_: &NewTicket, _: &Ticket) -> Result<(), Refusal> {
        Ok(())
    }

    fn provider_write(command: &NewTicket, _: Option<&str>) -> ProviderWrite {
        ProviderWrite::CreateTicket {
            project_id: command.project_id.as_str().into(),
            title: command.title.as_str().into(),
            description: command.description.as_ref().map(|d| d.as_str().into()),
            priority: command.priority.as_str().into(),
        }
    }

    async fn mirror(
        command: &NewTicket,
        receipt: &ProviderEffect,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Ticket>, String>, KitchenError> {
        let ProviderEffect::Ticket { id } = receipt else {
            return Ok(Err(wrong_kind(EffectKind::Ticket, receipt)));
        };
        let planned = plan(command, write, Some(id));
        store::planned::insert(tx, write.tenant(), &planned.rows).await?;
        Ok(Ok(Applied {
            ticket: planned.ticket,
            result: planned.result,
        }))
    }
}

/// Everything a create writes, known from its command: the ticket (with the
/// provider's id, when a provider made it) and its first history entry.
fn plan(command: &NewTicket, write: &WriteContext, provider_id: Option<&str>) -> Planned<Ticket> {
    let ticket = Ticket {
        provider_ticket_id: provider_id.map(str::to_owned),
        ..command.clone().into_ticket(write.now)
    };
    let history = write.history(ticket.id, created(&ticket), ticket.version);
    Planned {
        ticket: Some(ticket.id),
        rows: vec![NewRow::Ticket(ticket.clone()), NewRow::History(history)],
        result: ticket,
    }
}

/// A new ticket's history: every field it was made with.
fn created(ticket: &Ticket) -> Changes {
    let mut changes = Changes::default();
    changes.added("project_id", &ticket.project_id);
    changes.added("title", &ticket.title);
    changes.added("description", &ticket.description);
    changes.added("priority", ticket.priority);
    changes.added("status", ticket.status);
    changes
}
