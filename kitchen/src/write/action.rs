//! The traits a write action implements: [`RetrySafeWrite`] (what a door
//! sees of it), [`WriteAction`] (how it is done), [`WriteResult`] (what it
//! answers with) and [`RemoteAction`] (what the remote backend needs of one
//! a provider can do), and the two
//! ways generic code reaches an action's type: [`Reach`] (from the type:
//! can a provider do it?) and [`ForAction`] (from its name: which type is
//! it? `crate::actions::with_type` is the one `match`). They mention each
//! other, so they share this file.

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use super::context::{Applied, Planned, WriteContext};
use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::operation::OperationRecord;
use crate::domain::ticket::{Ticket, TicketId};
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::provider::{EffectKind, ProviderEffect, ProviderWrite};
use crate::store::Db;
use crate::store::write::WriteTx;

/// A retry-safe write as a door names it: its stable name, the request it
/// takes and the result it answers with. Each type in `crate::actions`
/// implements it; a door hands it to `Kitchen::write`
/// (`kitchen.write::<AddComment>(actor, &key, &request)`).
pub trait RetrySafeWrite: Sized + Send + Sync + 'static {
    /// The stable name: part of the key's scope, stored on every record.
    const ACTION: Action;
    /// The request as a door hands it over, before validation: every
    /// problem with it is answered by field. Its JSON is how the remote
    /// backend stores it with the write-ahead record, to validate and send
    /// it again after a crash.
    type Request: Serialize + DeserializeOwned + Clone + Send + Sync + 'static;
    /// What the write makes; its JSON is the frozen result every replay
    /// returns byte for byte. Add fields, never reorder or rename them.
    type Result: Serialize + DeserializeOwned + Clone + Send + Sync + 'static;
}

/// How a retry-safe write is done: the kitchen's side of an action.
///
/// Implementations hold no state: the trait is a set of functions grouped
/// by type, so a new action is a new type (see `docs/adding-an-action.md`).
pub(crate) trait WriteAction: RetrySafeWrite<Result: WriteResult> {
    /// The validated, normalized command.
    /// `Clone` because on SQLite it is handed to the group writer's task.
    type Command: Clone + Send + Sync + 'static;
    /// Whether a repeat of the same content under a new key is a new thing
    /// worth a second look (a create, a comment): the likely-duplicate guard
    /// looks only at these. A change or a move made twice changes nothing
    /// the second time, so no other action needs it.
    const GUARDED: bool = false;

    /// The canonical form of a command: a struct of plain values with its
    /// fields in alphabetical order. Its JSON is what the fingerprint hashes,
    /// so two requests that mean the same must give equal forms.
    type Canonical<'c>: Serialize;

    /// Validates a request, reporting every problem by field. Nothing is
    /// read or written yet.
    fn validate(request: &Self::Request) -> Result<Self::Command, Vec<FieldViolation>>;

    /// The command's canonical form.
    fn canonical(command: &Self::Command) -> Self::Canonical<'_>;

    /// Does the write, inside the transaction that claimed the key. Answers
    /// the result and the ticket it made or acted on, or a [`Refusal`]
    /// (then the whole transaction, claim included, is rolled back).
    fn apply(
        command: &Self::Command,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> impl Future<Output = Result<Result<Applied<Self::Result>, Refusal>, KitchenError>> + Send;

    /// The write's result and rows when they follow from the command alone,
    /// with nothing to read first (a create). Then the engine claims the
    /// key and inserts the rows together (one statement on PostgreSQL, one
    /// call in SQLite's group writer) instead of running
    /// [`WriteAction::apply`], which must write exactly these rows, and
    /// reads nothing before. `None` (the default) for a write that reads
    /// first.
    fn planned(command: &Self::Command, write: &WriteContext) -> Option<Planned<Self::Result>> {
        let _ = (command, write);
        None
    }

    /// Where the action can happen: `at.provider()` for one the remote
    /// backend sends to a provider (it implements [`RemoteAction`] too),
    /// `at.here_only()` for one no provider has, which the remote backend
    /// refuses before anything is read or written. The one place an
    /// action says so: the facade's write and the reconciler both ask it.
    fn reach<R: Reach<Self>>(at: R) -> R::Out;
}

/// What a write answers with: a resource the record can name after its
/// frozen result is dropped, and read again as it is now.
pub(crate) trait WriteResult:
    Serialize + DeserializeOwned + Clone + Send + Sync + Sized + 'static
{
    /// The id the record keeps (in its tombstone too).
    fn resource_id(&self) -> Uuid;

    /// The resource `record` made or acted on, as it is now, for a retry
    /// after the replay window; `None` if it no longer exists.
    fn current(
        db: &Db,
        record: &OperationRecord,
        resource: Uuid,
    ) -> impl Future<Output = Result<Option<Self>, KitchenError>> + Send;
}

/// A write action the remote backend sends to a provider.
pub(crate) trait RemoteAction: WriteAction {
    /// What the provider keeps for this action's effect: where a search for
    /// its external reference looks.
    const KIND: EffectKind;

    /// The local ticket the command acts on; `None` for a create.
    fn target(command: &Self::Command) -> Option<TicketId>;

    /// Whether the local copy of the target allows the command now: the
    /// same refusals the local backend's `apply` makes (another version, a
    /// move the status machine forbids), so a caller gets the same answer on
    /// either backend and nothing is sent for a write that cannot happen.
    /// The provider decides again when the write reaches it (it may have
    /// moved on meanwhile), and its refusal is a `not_created`.
    fn allowed(command: &Self::Command, ticket: &Ticket) -> Result<(), Refusal>;

    /// The request to the provider. `ticket` is the provider's id of the
    /// target (`None` for a create).
    fn provider_write(command: &Self::Command, ticket: Option<&str>) -> ProviderWrite;

    /// Copies what the provider made into the local database, inside the
    /// transaction that settles the effect as succeeded, and answers the
    /// result every replay returns. `Err(why)`: the receipt is not the kind
    /// of object this action makes, so it proves nothing about the effect,
    /// which stays unknown.
    fn mirror(
        command: &Self::Command,
        receipt: &ProviderEffect,
        tx: &mut WriteTx,
        write: &WriteContext,
    ) -> impl Future<Output = Result<Result<Applied<Self::Result>, String>, KitchenError>> + Send;
}

/// What a receipt of the wrong kind says, for [`RemoteAction::mirror`].
pub(crate) fn wrong_kind(expected: EffectKind, receipt: &ProviderEffect) -> String {
    format!(
        "the provider answered with a {} ({}) where a {} was expected",
        receipt.kind().as_str(),
        receipt.id(),
        expected.as_str()
    )
}

/// Asks an action's type where it can happen ([`WriteAction::reach`]):
/// generic code that needs a [`RemoteAction`] for one a provider can do
/// (the facade's write, the reconciler's worker) implements this once.
pub(crate) trait Reach<A: WriteAction> {
    /// What the answer is turned into.
    type Out;

    /// `A` has no counterpart at a provider.
    fn here_only(self) -> Self::Out;

    /// `A` is a [`RemoteAction`].
    fn provider(self) -> Self::Out
    where
        A: RemoteAction;
}

/// Something done with an action's type, known only by its name (a record
/// read back, an effect the reconciler found): `crate::actions::with_type`
/// calls [`ForAction::with`] with the type `Action` names.
pub(crate) trait ForAction {
    /// What it makes.
    type Out;

    /// Does it with action `A`.
    fn with<A: WriteAction>(self) -> Self::Out;
}
