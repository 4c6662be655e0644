//! Where writes happen: the backend a kitchen runs with.
//!
//! A closed set, dispatched by `match`: on the local backend every action
//! runs through the generic write path (`crate::write`); on the remote
//! backend every action runs through the effect ledger (`crate::remote`).

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::effect::{EffectLedger, Trigger};
use crate::domain::operation::{OperationRecord, OperationState};
use crate::domain::settlement::{SettleAnswer, SettleOrder, SettleRefusal};
use crate::provider::TicketBackend;
use crate::remote::Remote;
use crate::store::effects::OperationId;
use crate::store::{self, Db};
use crate::write::engine::Engine;

/// Whether the remote backend can do `action` at a provider: whether it
/// has a `RemoteAction`. The remote backend refuses the others
/// (`Refusal::NotSupportedByProvider`) before reading or writing anything.
pub fn reaches_provider(action: Action) -> bool {
    crate::remote::work::worker(action).is_some()
}

/// The backend a kitchen writes through.
#[derive(Debug, Clone)]
pub(crate) enum Backend {
    /// Tickets live in the kitchen's own database.
    Local,
    /// Tickets are made in a provider; the database keeps the effect ledger
    /// and a local copy of each ticket made. Boxed: the local backend (the
    /// common one) carries nothing.
    Remote(Box<Remote>),
}

impl Backend {
    /// The backend `choice` names, on `db`.
    pub(crate) fn new(choice: &TicketBackend, db: &Db, engine: &Engine) -> Self {
        match choice {
            TicketBackend::Local => Self::Local,
            TicketBackend::Remote { provider, settings } => Self::Remote(Box::new(Remote {
                db: db.clone(),
                provider: provider.clone(),
                settings: settings.clone(),
                wait_bound: engine.wait_bound,
                keys: engine.keys.clone(),
            })),
        }
    }

    /// Whether doing `action` calls a provider the service does not own:
    /// on the remote backend, every write that has a `RemoteAction` does
    /// (the others it refuses).
    pub(crate) fn sends(&self, action: Action) -> bool {
        match self {
            Self::Local => false,
            Self::Remote(_) => reaches_provider(action),
        }
    }

    /// What the backend knows about the operation of `scope`, whose record
    /// reads `record`: on the local backend the record itself; on the
    /// remote backend its effect settled first if it can be, and the record
    /// read again with its ledger. `None` when it vanished meanwhile.
    pub(crate) async fn status(
        &self,
        scope: &OperationId,
        record: OperationRecord,
    ) -> Result<Option<(OperationRecord, Option<EffectLedger>)>, KitchenError> {
        match self {
            Self::Local => Ok(Some((record, None))),
            Self::Remote(remote) => remote.status(scope, record).await,
        }
    }

    /// Carries out an operator's decision about the effect of `scope`. On
    /// the local backend every outcome is known, so there is never anything
    /// to settle: the refusal says what the record is.
    pub(crate) async fn settle_by_hand(
        &self,
        db: &Db,
        scope: OperationId,
        order: &SettleOrder,
    ) -> Result<SettleAnswer, KitchenError> {
        let remote = match self {
            Self::Remote(remote) => remote,
            Self::Local => {
                let record =
                    store::operations::find(db, scope.tenant, scope.action, &scope.key).await?;
                return Ok(SettleAnswer::Refused(match record.map(|r| r.state) {
                    None => SettleRefusal::NotFound,
                    // Written ahead for a provider by a remote deployment:
                    // only a kitchen that can search that provider settles it.
                    Some(OperationState::Unknown | OperationState::InProgress) => {
                        SettleRefusal::Impossible(
                            "this operation's effect was sent to a ticket provider: settle it \
                             with the provider's settings (TICKET_BACKEND=remote, PROVIDER_URL \
                             and the rest, as the server runs with), so that the provider can be \
                             searched first"
                                .to_owned(),
                        )
                    }
                    Some(state) => SettleRefusal::NotUnknown {
                        state,
                        settled_by: None,
                    },
                }));
            }
        };
        match crate::remote::work::worker(scope.action) {
            Some(worker) => (worker.settle_by_hand)(remote, scope, order).await,
            // Never written ahead, so never unknown.
            None => Ok(SettleAnswer::Refused(SettleRefusal::NotFound)),
        }
    }

    /// One reconciler pass: how many effects it worked on (none locally).
    pub(crate) async fn reconcile_due(&self, trigger: Trigger) -> Result<usize, KitchenError> {
        match self {
            Self::Local => Ok(0),
            Self::Remote(remote) => remote.reconcile_due(trigger).await,
        }
    }

    /// How many effects reconciliation gave up on (none locally).
    pub(crate) async fn unresolved_effects(&self) -> Result<u64, KitchenError> {
        match self {
            Self::Local => Ok(0),
            Self::Remote(remote) => store::ledger::unresolved(&remote.db).await,
        }
    }

    /// How many effects the provider holds more than once (none locally).
    pub(crate) async fn provider_duplicates(&self) -> Result<u64, KitchenError> {
        match self {
            Self::Local => Ok(0),
            Self::Remote(remote) => store::ledger::duplicated(&remote.db).await,
        }
    }

    /// Runs the reconciler until `shutdown` (at once returns locally).
    pub(crate) async fn run_reconciler(&self, shutdown: impl Future<Output = ()>) {
        if let Self::Remote(remote) = self {
            remote.run_reconciler(shutdown).await;
        }
    }

    /// Whether reading an operation's status may call a provider (to
    /// search it, never to send: see `Trigger::may_send`).
    pub(crate) fn status_reads_search(&self) -> bool {
        match self {
            Self::Local => false,
            Self::Remote(_) => true,
        }
    }
}
