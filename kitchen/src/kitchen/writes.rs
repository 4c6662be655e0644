//! The facade's writes: one method per action, each handing its request
//! to the one write path (`perform`), locally or through the remote
//! backend's effect ledger.

use crate::KitchenError;
use crate::actions::add_comment::AddComment;
use crate::actions::add_label::AddLabel;
use crate::actions::create_ticket::CreateTicket;
use crate::actions::remove_label::RemoveLabel;
use crate::actions::transition_ticket::TransitionTicket;
use crate::actions::update_ticket::UpdateTicket;
use crate::backend::Backend;
use crate::domain::comment::{Comment, CommentDraft};
use crate::domain::label_change::LabelDraft;
use crate::domain::operation::OperationKey;
use crate::domain::patch::TicketUpdate;
use crate::domain::precondition::TicketAt;
use crate::domain::tenant::Actor;
use crate::domain::ticket::TicketDraft;
use crate::domain::transition::TransitionDraft;
use crate::outcome::{Outcome, Refusal};
use crate::remote::Remote;
use crate::store::group_commit::BoxFuture;
use crate::write::WriteAction;
use crate::write::remote::RemoteAction;

use super::Kitchen;

impl Kitchen {
    /// Creates a ticket at most once per (tenant, `create_ticket`, key).
    ///
    /// The first attempt with a key commits the ticket and the operation
    /// record in one transaction and answers [`Outcome::Created`]. Any later
    /// attempt with the same key and the same meaning answers
    /// [`Outcome::Replayed`] with the original snapshot; with a different
    /// meaning, [`Outcome::Conflict`]. An attempt racing the first waits for
    /// it up to the wait bound, then replays, or answers
    /// [`Outcome::InProgress`]. Invalid input answers [`Outcome::Invalid`]
    /// without touching the database or the key. Every other write below
    /// follows the same rules.
    pub async fn create_ticket(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        draft: &TicketDraft,
    ) -> Result<Outcome, KitchenError> {
        self.write::<CreateTicket>(actor.into(), key, draft).await
    }

    /// Edits a ticket's title, description, priority or assignee, at most
    /// once per (tenant, `update_ticket`, key). With an expected version,
    /// refuses ([`Refusal::VersionMismatch`]) unless the ticket is still
    /// at it. A replay answers the ticket as the first attempt left it,
    /// even if it changed since.
    pub async fn update_ticket(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        update: &TicketUpdate,
    ) -> Result<Outcome, KitchenError> {
        self.write::<UpdateTicket>(actor.into(), key, update).await
    }

    /// Moves a ticket to another status, at most once per (tenant,
    /// `transition_ticket`, key). A move the status machine does not allow
    /// from where the ticket is answers [`Refusal::TransitionNotAllowed`].
    /// `ticket` is a [`TicketId`](crate::TicketId) or, for a conditional move, a
    /// [`TicketAt`] with the version expected: as for
    /// [`Kitchen::update_ticket`], another version answers
    /// [`Refusal::VersionMismatch`].
    pub async fn transition_ticket(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &TransitionDraft,
    ) -> Result<Outcome, KitchenError> {
        self.write::<TransitionTicket>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Adds a comment to a ticket, at most once per (tenant, `add_comment`,
    /// key). `ticket` is a [`TicketId`](crate::TicketId) or, for a conditional comment, a
    /// [`TicketAt`]: another version answers [`Refusal::VersionMismatch`]
    /// (a comment does not change the ticket's version itself).
    pub async fn add_comment(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &CommentDraft,
    ) -> Result<Outcome<Comment>, KitchenError> {
        self.write::<AddComment>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Puts a label on a ticket, at most once per (tenant, `add_label`,
    /// key). A label the ticket carries already changes nothing and still
    /// uses the key; a ticket carrying as many labels as it may answers
    /// [`Refusal::LabelLimitReached`]. `ticket` is a [`TicketId`](crate::TicketId) or a
    /// [`TicketAt`], as for [`Kitchen::transition_ticket`]. Local only: the
    /// remote backend answers [`Refusal::NotSupportedByProvider`].
    pub async fn add_label(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &LabelDraft,
    ) -> Result<Outcome, KitchenError> {
        self.local_write::<AddLabel>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Takes a label off a ticket, at most once per (tenant,
    /// `remove_label`, key). A label the ticket does not carry changes
    /// nothing and still uses the key. Otherwise as [`Kitchen::add_label`].
    pub async fn remove_label(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        ticket: impl Into<TicketAt>,
        draft: &LabelDraft,
    ) -> Result<Outcome, KitchenError> {
        self.local_write::<RemoveLabel>(actor.into(), key, &(ticket.into(), draft.clone()))
            .await
    }

    /// Validates, then runs action `A` through the generic write path, or
    /// on the remote backend through the effect ledger: for an action that
    /// reaches a provider.
    async fn write<A: RemoteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
    ) -> Result<Outcome<A::Result>, KitchenError>
    where
        A::Request: Clone,
    {
        self.perform::<A>(actor, key, request, Some(send_remotely::<A>))
            .await
    }

    /// Validates, then runs action `A` through the generic write path: for
    /// an action with no counterpart at a provider (no [`RemoteAction`]),
    /// which the remote backend refuses before anything is read or written.
    async fn local_write<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
    ) -> Result<Outcome<A::Result>, KitchenError>
    where
        A::Request: Clone,
    {
        self.perform::<A>(actor, key, request, None).await
    }

    /// [`Kitchen::write`] and [`Kitchen::local_write`]: `remote` is how the
    /// remote backend sends `A`, `None` when it cannot.
    async fn perform<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
        remote: Option<SendRemotely<A>>,
    ) -> Result<Outcome<A::Result>, KitchenError>
    where
        A::Request: Clone,
    {
        if let (Backend::Remote(_), None) = (&self.backend, remote) {
            return Ok(Outcome::Refused(Refusal::NotSupportedByProvider {
                action: A::ACTION,
            }));
        }
        let command = match A::validate(request) {
            Ok(command) => command,
            Err(violations) => return Ok(Outcome::Invalid { violations }),
        };
        let outcome = self
            .guarded(async {
                match (&self.backend, remote) {
                    (Backend::Remote(backend), Some(send)) => {
                        // On its own task for the same reason as the local
                        // path: the write-ahead record, the dispatch and its
                        // settlement run to their end even if the caller
                        // goes away.
                        let sent = send(
                            (**backend).clone(),
                            actor,
                            key.clone(),
                            request.clone(),
                            command,
                        );
                        tokio::spawn(sent)
                            .await
                            .map_err(|e| KitchenError::Interrupted(e.to_string()))?
                    }
                    _ => self.engine.perform::<A>(actor, key, command).await,
                }
            })
            .await?;
        if let Outcome::Created(_) = &outcome {
            self.health.committed();
        }
        Ok(outcome)
    }
}

/// How the remote backend sends a write of action `A`: its write-ahead
/// record, dispatch and settlement, as one task's work.
type SendRemotely<A> =
    fn(
        Remote,
        Actor,
        OperationKey,
        <A as WriteAction>::Request,
        <A as WriteAction>::Command,
    ) -> BoxFuture<'static, Result<Outcome<<A as WriteAction>::Result>, KitchenError>>;

/// [`SendRemotely`] for an action that reaches a provider.
fn send_remotely<A: RemoteAction>(
    remote: Remote,
    actor: Actor,
    key: OperationKey,
    request: A::Request,
    command: A::Command,
) -> BoxFuture<'static, Result<Outcome<A::Result>, KitchenError>> {
    Box::pin(async move { remote.write::<A>(actor, &key, &request, command).await })
}
