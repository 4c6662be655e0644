//! What the remote backend needs to know about a write action, besides what
//! the generic write path knows ([`WriteAction`]).
//!
//! On the remote backend the provider does the write and the kitchen keeps
//! an effect ledger and a local copy (`crate::remote`). That machinery is
//! written once; an action only says where its effect is kept at the
//! provider, which local ticket it acts on and what that ticket must allow
//! first, what to send, and how the provider's receipt is copied locally.
//! A new action that should reach a provider implements this trait too, in
//! its own file under `crate::actions`.

use std::future::Future;

use crate::KitchenError;
use crate::domain::ticket::{Ticket, TicketId};
use crate::outcome::Refusal;
use crate::provider::{EffectKind, ProviderEffect, ProviderWrite};
use crate::store::write::WriteTx;

use super::{Applied, WriteAction, WriteContext};

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
