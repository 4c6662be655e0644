//! `transition_ticket`: move a ticket through the status machine.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::precondition::TicketAt;
use crate::domain::ticket::{Ticket, TicketId};
use crate::domain::transition::{CanonicalTransitionV1, Transition, TransitionDraft};
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::provider::{EffectKind, ProviderEffect, ProviderWrite};
use crate::store::{self, write::WriteTx};
use crate::write::RemoteAction;
use crate::write::{Applied, Reach, RetrySafeWrite, WriteAction, WriteContext};

use super::mirror::mirror_change;
use super::precondition::at_expected_version;

/// Moves a ticket to another status, if the status machine allows it from
/// where the ticket is when the write runs (and, for a conditional move, if
/// the ticket is still at the version the caller expected).
pub struct TransitionTicket;

impl RetrySafeWrite for TransitionTicket {
    const ACTION: Action = Action::TransitionTicket;
    type Request = (TicketAt, TransitionDraft);
    type Result = Ticket;
}

impl WriteAction for TransitionTicket {
    type Command = Transition;
    type Canonical<'c> = CanonicalTransitionV1<'c>;

    /// A provider can do it: see its `RemoteAction` below.
    fn reach<R: Reach<Self>>(at: R) -> R::Out {
        at.provider()
    }

    fn validate((at, draft): &Self::Request) -> Result<Transition, Vec<FieldViolation>> {
        draft.validate(*at)
    }

    fn canonical(command: &Transition) -> CanonicalTransitionV1<'_> {
        command.canonical()
    }

    async fn apply(
        command: &Transition,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Ticket>, Refusal>, KitchenError> {
        let Some(was) = store::tickets::lock(tx, write.tenant(), command.ticket_id).await? else {
            return Ok(Err(Refusal::TicketNotFound {
                ticket_id: command.ticket_id,
            }));
        };
        let mut ticket = was.clone();
        let from = ticket.status;
        if let Err(refusal) = may_move(command, &ticket) {
            return Ok(Err(refusal));
        }
        ticket.status = command.to;
        ticket.version = ticket.version.next();
        ticket.updated_at = Some(write.now);
        store::tickets::save(tx, write.tenant(), &was, &ticket).await?;
        let mut changes = Changes::default();
        changes.note("status", from, command.to);
        if let Some(reason) = &command.reason {
            changes.added("reason", reason);
        }
        let entry = write.history(ticket.id, changes, ticket.version);
        store::history::append(tx, write.tenant(), &entry).await?;
        Ok(Ok(Applied {
            ticket: Some(ticket.id),
            result: ticket,
        }))
    }
}

/// On the remote backend the provider moves the ticket (its workflow
/// decides again).
impl RemoteAction for TransitionTicket {
    const KIND: EffectKind = EffectKind::Change;

    fn target(command: &Transition) -> Option<TicketId> {
        Some(command.ticket_id)
    }

    fn allowed(command: &Transition, ticket: &Ticket) -> Result<(), Refusal> {
        may_move(command, ticket)
    }

    fn provider_write(command: &Transition, ticket: Option<&str>) -> ProviderWrite {
        ProviderWrite::TransitionTicket {
            ticket: ticket.unwrap_or_default().into(),
            to: command.to.as_str().into(),
            reason: command.reason.as_ref().map(|r| r.as_str().into()),
        }
    }

    async fn mirror(
        command: &Transition,
        receipt: &ProviderEffect,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Ticket>, String>, KitchenError> {
        mirror_change(command.ticket_id, receipt, tx, write).await
    }
}

/// Refuses a move the caller made against another version of `ticket`
/// (first: what the caller saw is out of date, whatever it asked for), or
/// one the status machine does not allow from where `ticket` is.
fn may_move(command: &Transition, ticket: &Ticket) -> Result<(), Refusal> {
    at_expected_version(command.expected_version, ticket)?;
    let from = ticket.status;
    if from.may_move_to(command.to) {
        Ok(())
    } else {
        Err(Refusal::TransitionNotAllowed {
            from,
            to: command.to,
            allowed: from.allowed_moves(),
        })
    }
}
