//! The one generic write path: what every retry-safe write has in common,
//! written once.
//!
//! A write action is a type implementing [`WriteAction`]: its stable name,
//! how its request is validated into a normalized command, the canonical
//! form its fingerprint is computed over, and what it does inside the one
//! transaction once its key is claimed. Everything else (claim, fingerprint,
//! replay or conflict, the wait bound, in progress, a refusal leaving the
//! key unused, the frozen result, the crash hook) is `engine.rs`, the same
//! for every action. The actions themselves are in `crate::actions`.
//!
//! # Layout
//! - this file: the trait and what an action is handed;
//! - `engine.rs`: the path every write takes;
//! - `remote.rs`: what the remote backend needs to know of an action besides
//!   (`RemoteAction`);
//! - `replay_cache.rs`: finished answers in memory, so a retry within the
//!   replay window skips the database.

pub(crate) mod engine;
pub(crate) mod keys;
pub(crate) mod remote;
pub(crate) mod replay_cache;

use std::future::Future;

use serde::Serialize;
use serde::de::DeserializeOwned;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::change::Changes;
use crate::domain::history::HistoryEntry;
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::tenant::{Actor, TenantId};
use crate::domain::ticket::{TicketId, Version};
use crate::domain::violation::FieldViolation;
use crate::outcome::Refusal;
use crate::store::Db;
use crate::store::planned::NewRow;
use crate::store::write::WriteTx;

/// One retry-safe write action.
///
/// Implementations hold no state: the trait is a set of functions grouped
/// by type, so a new action is a new type (see `docs/adding-an-action.md`).
pub(crate) trait WriteAction: Send + Sync + 'static {
    /// The stable name: part of the key's scope, stored on every record.
    const ACTION: Action;

    /// The request as a door hands it over, before validation. Its JSON is
    /// how the remote backend stores it with the write-ahead record, to
    /// validate and send it again after a crash.
    type Request: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// The validated, normalized command.
    /// `Clone` because on SQLite it is handed to the group writer's task.
    type Command: Clone + Send + Sync + 'static;
    /// What the write makes; its JSON is the frozen result every replay
    /// returns byte for byte. Add fields, never reorder or rename them.
    type Result: WriteResult;
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
    /// with nothing to read first (a create). Then, on PostgreSQL, the
    /// engine claims the key and inserts the rows in one statement instead
    /// of running [`WriteAction::apply`], which must write exactly these
    /// rows. `None` (the default) for a write that reads first.
    fn planned(command: &Self::Command, write: &WriteContext) -> Option<Planned<Self::Result>> {
        let _ = (command, write);
        None
    }
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

/// What an action's `apply` made.
#[derive(Debug)]
pub(crate) struct Applied<R> {
    /// The result, frozen as the operation's snapshot.
    pub(crate) result: R,
    /// The ticket made or acted on, recorded on the operation; `None` for
    /// an effect that is not on a ticket (the record then names only the
    /// result's [`WriteResult::resource_id`]).
    pub(crate) ticket: Option<TicketId>,
}

/// A write known before anything is read: see [`WriteAction::planned`].
#[derive(Debug)]
pub(crate) struct Planned<R> {
    /// The result, frozen as the operation's snapshot.
    pub(crate) result: R,
    /// The ticket made, recorded on the operation (`None`: not a ticket).
    pub(crate) ticket: Option<TicketId>,
    /// The rows to insert once the key is claimed.
    pub(crate) rows: Vec<NewRow>,
}

/// What an action is handed besides its command.
#[derive(Debug, Clone)]
pub(crate) struct WriteContext {
    /// Who is writing.
    pub(crate) actor: Actor,
    /// The action.
    pub(crate) action: Action,
    /// The caller's key.
    pub(crate) key: OperationKey,
    /// The write's one timestamp, cut to microseconds.
    pub(crate) now: OffsetDateTime,
}

impl WriteContext {
    /// The context of `actor`'s write that `record` is the claim of.
    pub(crate) fn of(actor: Actor, record: &OperationRecord) -> Self {
        Self {
            actor,
            action: record.action,
            key: record.key.clone(),
            now: record.created_at,
        }
    }

    /// The tenant everything is scoped to.
    pub(crate) fn tenant(&self) -> TenantId {
        self.actor.tenant
    }

    /// A history entry for this write.
    pub(crate) fn history(
        &self,
        ticket: TicketId,
        changes: Changes,
        version: Version,
    ) -> HistoryEntry {
        HistoryEntry {
            id: Uuid::now_v7(),
            ticket_id: ticket,
            action: self.action,
            operation_key: self.key.clone(),
            actor_token_id: self.actor.token,
            changes,
            version,
            recorded_at: self.now,
        }
    }
}
