//! The facade's one write, [`Kitchen::write`], for every action: each hands
//! its request to the one write path (`perform`), locally or through the
//! remote backend's effect ledger.

use crate::KitchenError;
use crate::backend::Backend;
use crate::domain::operation::OperationKey;
use crate::domain::tenant::Actor;
use crate::domain::violation::FieldViolation;
use crate::outcome::{Outcome, Refusal};
use crate::remote::Remote;
use crate::store::group_commit::BoxFuture;
use crate::write::{Reach, RemoteAction, RetrySafeWrite, WriteAction};

use super::Kitchen;

/// What [`Kitchen::write`] takes: every [`RetrySafeWrite`] of the kitchen's
/// (the types in [`actions`](crate::actions)), and nothing else, since a
/// write's rules (its transaction, its fingerprint) are the kitchen's.
pub trait KitchenWrite: RetrySafeWrite + sealed::Sealed {
    /// What is wrong with `request`, by field (empty when nothing is),
    /// without reading or writing anything: the kitchen's own validation,
    /// for a door that reports its own findings and the kitchen's at once.
    fn violations(request: &Self::Request) -> Vec<FieldViolation>;

    /// [`Kitchen::write`] for this action. Hidden: call that instead.
    #[doc(hidden)]
    fn perform<'k>(
        kitchen: &'k Kitchen,
        actor: Actor,
        key: &'k OperationKey,
        request: &'k Self::Request,
    ) -> BoxFuture<'k, Result<Outcome<Self::Result>, KitchenError>>;
}

/// Seals [`KitchenWrite`]: only a `WriteAction` is one.
mod sealed {
    pub trait Sealed {}
}

impl<A: WriteAction> sealed::Sealed for A {}

impl<A: WriteAction> KitchenWrite for A {
    fn violations(request: &A::Request) -> Vec<FieldViolation> {
        A::validate(request).err().unwrap_or_default()
    }

    fn perform<'k>(
        kitchen: &'k Kitchen,
        actor: Actor,
        key: &'k OperationKey,
        request: &'k A::Request,
    ) -> BoxFuture<'k, Result<Outcome<A::Result>, KitchenError>> {
        Box::pin(kitchen.perform::<A>(actor, key, request))
    }
}

impl Kitchen {
    /// Does the write `W` (a type in [`actions`](crate::actions), e.g.
    /// `kitchen.write::<CreateTicket>(actor, &key, &draft)`) at most once per
    /// (tenant, `W::ACTION`, key).
    ///
    /// The first attempt with a key commits the write and the operation
    /// record in one transaction and answers [`Outcome::Created`]. Any later
    /// attempt with the same key and the same meaning answers
    /// [`Outcome::Replayed`] with the original snapshot (even if what it
    /// acted on changed since); with a different meaning,
    /// [`Outcome::Conflict`]. An attempt racing the first waits for it up to
    /// the wait bound, then replays, or answers [`Outcome::InProgress`].
    /// Invalid input answers [`Outcome::Invalid`] and a refusal (a version
    /// that moved on, a move the status machine forbids, a missing ticket)
    /// [`Outcome::Refused`], both without using the key. On the remote
    /// backend the write is done at the provider through the effect ledger,
    /// and an action no provider has is refused
    /// ([`Refusal::NotSupportedByProvider`]) before anything is read or
    /// written.
    pub async fn write<W: KitchenWrite>(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        request: &W::Request,
    ) -> Result<Outcome<W::Result>, KitchenError> {
        W::perform(self, actor.into(), key, request).await
    }

    /// Validates, then runs action `A` through the generic write path, or
    /// on the remote backend through the effect ledger if a provider can do
    /// it.
    async fn perform<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
    ) -> Result<Outcome<A::Result>, KitchenError> {
        let remote = A::reach(SendVia);
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
        <A as RetrySafeWrite>::Request,
        <A as WriteAction>::Command,
    ) -> BoxFuture<'static, Result<Outcome<<A as RetrySafeWrite>::Result>, KitchenError>>;

/// Asks an action how the remote backend sends it: [`SendRemotely`], or
/// `None` for one no provider can do.
struct SendVia;

impl<A: WriteAction> Reach<A> for SendVia {
    type Out = Option<SendRemotely<A>>;

    fn here_only(self) -> Self::Out {
        None
    }

    fn provider(self) -> Self::Out
    where
        A: RemoteAction,
    {
        Some(send_remotely::<A>)
    }
}

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
