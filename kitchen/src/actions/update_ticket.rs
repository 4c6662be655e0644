//! `update_ticket`: edit a ticket's title, description, priority or
//! assignee, optionally only if it is still at the version the caller saw.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::patch::{CanonicalEditV1, TicketEdit, TicketUpdate};
use crate::domain::ticket::{Ticket, TicketId};
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::provider::{EffectKind, ProviderEffect, ProviderWrite};
use crate::store::{self, write::WriteTx};
use crate::write::RemoteAction;
use crate::write::{Applied, Reach, RetrySafeWrite, WriteAction, WriteContext};

use super::mirror::mirror_change;
use super::precondition::at_expected_version;

/// Edits a ticket. A patch that changes nothing is still a valid command:
/// it takes the key and replays, but writes no new version or history.
pub struct UpdateTicket;

impl RetrySafeWrite for UpdateTicket {
    const ACTION: Action = Action::UpdateTicket;
    type Request = TicketUpdate;
    type Result = Ticket;
}

impl WriteAction for UpdateTicket {
    type Command = TicketEdit;
    type Canonical<'c> = CanonicalEditV1<'c>;

    /// A provider can do it: see its `RemoteAction` below.
    fn reach<R: Reach<Self>>(at: R) -> R::Out {
        at.provider()
    }

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
        if let Err(refusal) = at_expected_version(command.expected_version, &current) {
            return Ok(Err(refusal));
        }
        let (mut edited, changes) = command.apply_to(&current);
        if !changes.is_empty() {
            edited.version = current.version.next();
            edited.updated_at = Some(write.now);
            store::tickets::save(tx, write.tenant(), &current, &edited).await?;
            let entry = write.history(edited.id, changes, edited.version);
            store::history::append(tx, write.tenant(), &entry).await?;
        }
        Ok(Ok(Applied {
            ticket: Some(edited.id),
            result: edited,
        }))
    }
}

/// On the remote backend the provider edits the ticket; `If-Match` goes
/// along as its precondition.
impl RemoteAction for UpdateTicket {
    const KIND: EffectKind = EffectKind::Change;

    fn target(command: &TicketEdit) -> Option<TicketId> {
        Some(command.ticket_id)
    }

    fn allowed(command: &TicketEdit, ticket: &Ticket) -> Result<(), Refusal> {
        at_expected_version(command.expected_version, ticket)
    }

    fn provider_write(command: &TicketEdit, ticket: Option<&str>) -> ProviderWrite {
        ProviderWrite::UpdateTicket {
            ticket: ticket.unwrap_or_default().into(),
            expected_version: command.expected_version.map(|v| v.get()),
            title: command.title.map(|t| t.as_str().into()),
            description: command
                .description
                .map(|d| d.as_ref().map(|d| d.as_str().into())),
            priority: command.priority.map(|p| p.as_str().into()),
            assignee: command
                .assignee
                .map(|a| a.as_ref().map(|a| a.as_str().into())),
        }
    }

    async fn mirror(
        command: &TicketEdit,
        receipt: &ProviderEffect,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Ticket>, String>, KitchenError> {
        mirror_change(command.ticket_id, receipt, tx, write).await
    }
}
