//! `add_comment`: add a comment to a ticket. A create under a parent: the
//! key names the comment, and the ticket must exist for the tenant.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::comment::{CanonicalCommentV1, Comment, CommentDraft, CommentId, NewComment};
use crate::domain::ticket::TicketId;
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::store::{self, write::WriteTx};
use crate::write::{Applied, WriteAction, WriteContext};

/// Adds one comment. The ticket's version does not change (a comment is not
/// an edit of the ticket), but its history records the comment.
pub(crate) struct AddComment;

impl WriteAction for AddComment {
    const ACTION: Action = Action::AddComment;
    type Request = (TicketId, CommentDraft);
    type Command = NewComment;
    type Result = Comment;
    type Canonical<'c> = CanonicalCommentV1<'c>;

    fn validate((ticket_id, draft): &Self::Request) -> Result<NewComment, Vec<FieldViolation>> {
        draft.validate(*ticket_id)
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
        let comment = Comment {
            id: CommentId::new_v7(),
            ticket_id: ticket.id,
            body: command.body.clone(),
            created_at: write.now,
        };
        store::comments::insert(tx, write.tenant(), &comment).await?;
        let mut changes = Changes::default();
        changes.added("comment_id", comment.id);
        let entry = write.history(ticket.id, changes, ticket.version);
        store::history::append(tx, write.tenant(), &entry).await?;
        Ok(Ok(Applied {
            ticket: ticket.id,
            result: comment,
        }))
    }
}
