//! `add_comment`: add a comment to a ticket. A create under a parent: the
//! key names the comment, and the ticket must exist for the tenant.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::comment::{CanonicalCommentV1, Comment, CommentDraft, CommentId, NewComment};
use crate::domain::precondition::TicketAt;
use crate::domain::ticket::{Ticket, TicketId};
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::provider::{EffectKind, ProviderEffect, ProviderWrite};
use crate::store::{self, write::WriteTx};
use crate::write::{Applied, Reach, RetrySafeWrite, WriteAction, WriteContext};
use crate::write::{RemoteAction, wrong_kind};

use super::precondition::at_expected_version;

/// Adds one comment. The ticket's version does not change (a comment is not
/// an edit of the ticket), but its history records the comment. A
/// conditional comment is refused if the ticket moved on from the version
/// the caller expected, as any conditional write is.
pub struct AddComment;

impl RetrySafeWrite for AddComment {
    const ACTION: Action = Action::AddComment;
    type Request = (TicketAt, CommentDraft);
    type Result = Comment;
}

impl WriteAction for AddComment {
    /// A second one with the same content is a new thing: the
    /// likely-duplicate guard looks at it.
    const GUARDED: bool = true;
    type Command = NewComment;
    type Canonical<'c> = CanonicalCommentV1<'c>;

    /// A provider can do it: see its `RemoteAction` below.
    fn reach<R: Reach<Self>>(at: R) -> R::Out {
        at.provider()
    }

    fn validate((at, draft): &Self::Request) -> Result<NewComment, Vec<FieldViolation>> {
        draft.validate(*at)
    }

    fn canonical(command: &NewComment) -> CanonicalCommentV1<'_> {
        command.canonical()
    }

    async fn apply(
        command: &NewComment,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Comment>, Refusal>, KitchenError> {
        let Some(ticket) = store::tickets::lock(tx, write.tenant(), command.ticket_id).await?
        else {
            return Ok(Err(Refusal::TicketNotFound {
                ticket_id: command.ticket_id,
            }));
        };
        if let Err(refusal) = at_expected_version(command.expected_version, &ticket) {
            return Ok(Err(refusal));
        }
        let applied = add(command, &ticket, None, tx, write).await?;
        Ok(Ok(applied))
    }
}

/// On the remote backend the provider adds the comment; the local copy
/// carries the provider's id.
impl RemoteAction for AddComment {
    const KIND: EffectKind = EffectKind::Comment;

    fn target(command: &NewComment) -> Option<TicketId> {
        Some(command.ticket_id)
    }

    fn allowed(command: &NewComment, ticket: &Ticket) -> Result<(), Refusal> {
        at_expected_version(command.expected_version, ticket)
    }

    fn provider_write(command: &NewComment, ticket: Option<&str>) -> ProviderWrite {
        ProviderWrite::AddComment {
            ticket: ticket.unwrap_or_default().into(),
            body: command.body.as_str().into(),
        }
    }

    async fn mirror(
        command: &NewComment,
        receipt: &ProviderEffect,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> Result<Result<Applied<Comment>, String>, KitchenError> {
        let ProviderEffect::Comment { id } = receipt else {
            return Ok(Err(wrong_kind(EffectKind::Comment, receipt)));
        };
        let Some(ticket) = store::tickets::lock(tx, write.tenant(), command.ticket_id).await?
        else {
            return Err(KitchenError::CorruptRecord(format!(
                "ticket {} vanished while a comment on it was being settled",
                command.ticket_id
            )));
        };
        add(command, &ticket, Some(id), tx, write).await.map(Ok)
    }
}

/// Inserts the comment (with the provider's id, when a provider made it)
/// and its history entry; the ticket's version does not change.
async fn add(
    command: &NewComment,
    ticket: &Ticket,
    provider_id: Option<&str>,
    tx: &mut WriteTx,
    write: &WriteContext,
) -> Result<Applied<Comment>, KitchenError> {
    let comment = Comment {
        id: CommentId::new_v7(),
        ticket_id: ticket.id,
        body: command.body.clone(),
        created_at: write.now,
        provider_comment_id: provider_id.map(str::to_owned),
    };
    store::comments::insert(tx, write.tenant(), &comment).await?;
    let mut changes = Changes::default();
    changes.added("comment_id", comment.id);
    let entry = write.history(ticket.id, changes, ticket.version);
    store::history::append(tx, write.tenant(), &entry).await?;
    Ok(Applied {
        ticket: Some(ticket.id),
        result: comment,
    })
}
