//! The facade's one write, [`Kitchen::write`], for every action: each hands
//! its request to the one write path (`perform`), locally or through the
//! remote backend's effect ledger.

use crate::KitchenError;
use crate::backend::Backend;
use crate::domain::duplicate::{GuardMode, WriteOptions};
use crate::domain::operation::OperationKey;
use crate::domain::tenant::{Actor, TenantId, TenantName};
use crate::domain::violation::FieldViolation;
use crate::outcome::{Outcome, Refusal};
use crate::remote::Remote;
use crate::store;
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
        options: WriteOptions,
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
        options: WriteOptions,
    ) -> BoxFuture<'k, Result<Outcome<A::Result>, KitchenError>> {
        Box::pin(kitchen.perform::<A>(actor, key, request, options))
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
        W::perform(self, actor.into(), key, request, WriteOptions::default()).await
    }

    /// [`Kitchen::write`], with what the caller says beyond its request:
    /// `confirm_new` lets a create or a comment through the
    /// likely-duplicate guard (the caller means a second one). It changes
    /// nothing about a replay or a conflict, and is not part of the
    /// request's fingerprint.
    pub async fn write_with<W: KitchenWrite>(
        &self,
        actor: impl Into<Actor>,
        key: &OperationKey,
        request: &W::Request,
        options: WriteOptions,
    ) -> Result<Outcome<W::Result>, KitchenError> {
        W::perform(self, actor.into(), key, request, options).await
    }

    /// Sets the tenant named `name`'s own likely-duplicate guard mode
    /// (`None`: the deployment's again). `false` when there is no such
    /// tenant. Other instances follow within the token cache's time
    /// ([`KitchenConfig::auth_cache_ttl`](crate::KitchenConfig::auth_cache_ttl)).
    pub async fn set_duplicate_guard(
        &self,
        name: &TenantName,
        mode: Option<GuardMode>,
    ) -> Result<bool, KitchenError> {
        let done = store::duplicates::set_mode(&self.db, name, mode).await?;
        self.guard_modes.clear();
        Ok(done)
    }

    /// The tenant's own likely-duplicate guard mode, or `None` for the
    /// deployment's.
    pub async fn duplicate_guard_of(
        &self,
        tenant: TenantId,
    ) -> Result<Option<GuardMode>, KitchenError> {
        let cache_key = tenant.as_uuid().as_bytes().to_vec();
        if let Some(mode) = self.guard_modes.get(&cache_key) {
            return Ok(mode);
        }
        let mode = store::duplicates::mode_of(&self.db, tenant).await?;
        self.guard_modes.put(cache_key, mode);
        Ok(mode)
    }

    /// What the guard does with this write of `A`: nothing for an action
    /// whose repeat is not a new thing, or when the caller said it means a
    /// new one; else the tenant's mode, or the deployment's.
    async fn guard_for<A: WriteAction>(
        &self,
        tenant: TenantId,
        options: WriteOptions,
    ) -> Result<GuardMode, KitchenError> {
        if !A::GUARDED || options.confirm_new {
            return Ok(GuardMode::Off);
        }
        let guard = self.config().duplicate_guard;
        Ok(self.duplicate_guard_of(tenant).await?.unwrap_or(guard.mode))
    }

    /// Validates, then runs action `A` through the generic write path, or
    /// on the remote backend through the effect ledger if a provider can do
    /// it.
    async fn perform<A: WriteAction>(
        &self,
        actor: Actor,
        key: &OperationKey,
        request: &A::Request,
        options: WriteOptions,
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
        let guard = self.guard_for::<A>(actor.tenant, options).await?;
        let window = self.config().duplicate_guard.window;
        let refuse_duplicates = (guard == GuardMode::Confirm).then_some(window);
        let warn_duplicates = (guard == GuardMode::Warn).then_some(window);
        let mut outcome = self
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
                            refuse_duplicates,
                        );
                        tokio::spawn(sent)
                            .await
                            .map_err(|e| KitchenError::Interrupted(e.to_string()))?
                    }
                    _ => {
                        self.engine
                            .perform::<A>(actor, key, command, refuse_duplicates, warn_duplicates)
                            .await
                    }
                }
            })
            .await?;
        if let Outcome::Created(receipt) = &mut outcome {
            self.health.committed();
            // The local write path looked already (the engine, on the
            // connection that wrote where it can); a provider's write is
            // looked for here, once it is settled.
            if let (Backend::Remote(_), Some(window)) = (&self.backend, warn_duplicates) {
                let since = receipt.operation.created_at - window;
                receipt.possible_duplicate_of = store::duplicates::warning(
                    store::duplicates::earlier_write(&self.db, &receipt.operation, since).await,
                );
            }
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
        Option<std::time::Duration>,
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
    refuse_duplicates: Option<std::time::Duration>,
) -> BoxFuture<'static, Result<Outcome<A::Result>, KitchenError>> {
    Box::pin(async move {
        remote
            .write::<A>(actor, &key, &request, command, refuse_duplicates)
            .await
    })
}
