//! `remove_label`: take a label off a ticket. Local only, like
//! `add_label`.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::label_change::{CanonicalLabelV1, LabelChange, LabelDraft};
use crate::domain::precondition::TicketAt;
use crate::domain::ticket::Ticket;
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::store::write::WriteTx;
use crate::write::{Applied, Reach, RetrySafeWrite, WriteAction, WriteContext};

use super::add_label::relabel;

/// Removes a label from a ticket. A label the ticket does not carry
/// changes nothing, and is still a write: the key is used and replays.
pub struct RemoveLabel;

impl RetrySafeWrite for RemoveLabel {
    const ACTION: Action = Action::RemoveLabel;
    type Request = (TicketAt, LabelDraft);
    type Result = Ticket;
}

impl WriteAction for RemoveLabel {
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
            Ok(ticket.labels.without(&command.label))
        })
        .await
    }
}
