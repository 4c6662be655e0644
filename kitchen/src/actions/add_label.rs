//! `add_label`: put a label on a ticket. Local only: no provider keeps
//! labels, so the remote backend refuses it (no `RemoteAction`).

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::label::{Labels, MAX_LABELS_PER_TICKET};
use crate::domain::label_change::{CanonicalLabelV1, LabelChange, LabelDraft};
use crate::domain::precondition::TicketAt;
use crate::domain::ticket::Ticket;
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::store::{self, write::WriteTx};
use crate::write::{Applied, Reach, RetrySafeWrite, WriteAction, WriteContext};

use super::precondition::at_expected_version;

/// Adds a label to a ticket. A label the ticket already carries changes
/// nothing, and is still a write: the key is used and replays.
pub struct AddLabel;

impl RetrySafeWrite for AddLabel {
    const ACTION: Action = Action::AddLabel;
    type Request = (TicketAt, LabelDraft);
    type Result = Ticket;
}

impl WriteAction for AddLabel {
    type Command = LabelChange;
    type Canonical<'c> = CanonicalLabelV1<'c>;

    /// No provider keeps labels: the remote backend refuses it.
    fn reach<R: Reach<Self>>(at: R) -> R::Out {
        at.here_only()
    }

    fn validate((at, draft): &Self::Request) -> Result<LabelChange, Vec<FieldViolation>> {
        draft.validate(*at)
    }

    fn canonical(command: &LabelChange) -> CanonicalLabelV1<'_> {
        command.canonical()
    }

    async fn apply(
        command: &LabelChange,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Ticket>, Refusal>, KitchenError> {
        relabel(command, tx, write, |ticket: &Ticket| {
            ticket
                .labels
                .with(&command.label)
                .ok_or(Refusal::LabelLimitReached {
                    ticket_id: ticket.id,
                    limit: MAX_LABELS_PER_TICKET,
                })
        })
        .await
    }
}

/// What `add_label` and `remove_label` share (`remove_label` borrows it
/// from here): locks the ticket, checks the version the caller expected, and sets its
/// labels to `labelled(ticket)`. A change that changes nothing leaves the
/// ticket (version, history) as it was: the operation is still recorded.
pub(super) async fn relabel(
    command: &LabelChange,
    tx: &mut WriteTx,
    write: &WriteContext,
    labelled: impl FnOnce(&Ticket) -> Result<Labels, Refusal>,
) -> Result<Result<Applied<Ticket>, Refusal>, KitchenError> {
    let Some(was) = store::tickets::lock(tx, write.tenant(), command.ticket_id).await? else {
        return Ok(Err(Refusal::TicketNotFound {
            ticket_id: command.ticket_id,
        }));
    };
    let mut ticket = was.clone();
    if let Err(refusal) = at_expected_version(command.expected_version, &ticket) {
        return Ok(Err(refusal));
    }
    let labels = match labelled(&ticket) {
        Ok(labels) => labels,
        Err(refusal) => return Ok(Err(refusal)),
    };
    if labels != ticket.labels {
        let mut changes = Changes::default();
        changes.note("labels", &ticket.labels, &labels);
        ticket.labels = labels;
        ticket.version = ticket.version.next();
        ticket.updated_at = Some(write.now);
        store::tickets::save(tx, write.tenant(), &was, &ticket).await?;
        let entry = write.history(ticket.id, changes, ticket.version);
        store::history::append(tx, write.tenant(), &entry).await?;
    }
    Ok(Ok(Applied {
        ticket: Some(ticket.id),
        result: ticket,
    }))
}
