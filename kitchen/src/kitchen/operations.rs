//! What callers and operators ask about operations: a record, its status
//! (settled first on the remote backend), and the background work that
//! keeps them honest (the retention sweep, the reconciler).

use std::future::Future;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::effect::{OperationStatus, Trigger};
use crate::domain::lifecycle::KeyPhase;
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::tenant::TenantId;
use crate::store::{self, effects::OperationId};
use crate::sweep::Sweeper;

use super::Kitchen;

impl Kitchen {
    /// The record of an operation, or `None` when nothing was recorded for
    /// that key: then a retry with the same key is safe.
    pub async fn operation(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
    ) -> Result<Option<OperationRecord>, KitchenError> {
        self.guarded(store::operations::find(&self.db, tenant, action, key))
            .await
    }

    /// What is known about an operation, for the status resource; `None`
    /// when nothing is recorded for the key (never used, or forgotten past
    /// its tombstone horizon): then a retry is safe.
    ///
    /// Past the replay window the answer is the tombstone, phase
    /// [`KeyPhase::Expired`](crate::KeyPhase). With the remote backend, an
    /// `unknown` effect, or one left `in_progress` by a worker whose lease
    /// ran out, is reconciled first, unless another worker is at it right
    /// now (then the answer is what is recorded, to be asked again): a
    /// caller who asks what happened gets the freshest answer there is
    /// without waiting on the provider behind someone else. A read of a forgotten or expired key writes nothing.
    pub async fn operation_status(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
    ) -> Result<Option<OperationStatus>, KitchenError> {
        let scope = OperationId {
            tenant,
            action,
            key: key.clone(),
        };
        let Some(record) = self
            .guarded(store::operations::find(&self.db, tenant, action, key))
            .await?
        else {
            return Ok(None);
        };
        let phase = record.phase(self.engine.keys.clock.now());
        match phase {
            KeyPhase::Forgotten => return Ok(None),
            KeyPhase::Expired => {
                // The tombstone's view, whether or not the sweep has made it
                // one yet: the first answer is no longer given out.
                return Ok(Some(OperationStatus {
                    record: OperationRecord {
                        result: None,
                        ..record
                    },
                    phase,
                    effect: None,
                }));
            }
            KeyPhase::Replayable => {}
        }
        // On the remote backend an unsettled effect is settled first, and
        // the record is read again with its ledger.
        let Some((record, effect)) = self.backend.status(&scope, record).await? else {
            return Ok(None);
        };
        Ok(Some(OperationStatus {
            record,
            phase,
            effect,
        }))
    }

    /// The retention sweep for this kitchen's database, with its batch
    /// size and clock.
    pub fn sweeper(&self) -> Sweeper {
        Sweeper {
            db: self.db.clone(),
            clock: self.engine.keys.clock.clone(),
            batch: self.config.sweep_batch.max(1),
            pause: self.config.sweep_pause,
            wait: self.config.wait_bound,
        }
    }

    /// One reconciler pass (remote backend): settles, as far as can be done
    /// now, every unsettled effect that is due and that no live worker
    /// holds. Answers how many it worked on; 0 on the local backend.
    pub async fn reconcile_due(&self, trigger: Trigger) -> Result<usize, KitchenError> {
        self.backend.reconcile_due(trigger).await
    }

    /// How many effects reconciliation gave up on (remote backend): their
    /// outcome is `unknown` and their attempts reached
    /// [`RemoteSettings::max_attempts`](crate::RemoteSettings), so no worker
    /// calls the provider for them again until an operator resolves them.
    /// 0 on the local backend, where every outcome is known.
    pub async fn unresolved_effects(&self) -> Result<u64, KitchenError> {
        self.backend.unresolved_effects().await
    }

    /// How many effects the provider was found to hold more than once
    /// (remote backend): a search by an effect's reference found several
    /// objects carrying it, so something at or before the provider made it
    /// twice. The service keeps the oldest as the original and reports the
    /// others in the operation's status (`duplicates_at_provider`) for an
    /// operator to resolve. 0 on the local backend.
    pub async fn provider_duplicates(&self) -> Result<u64, KitchenError> {
        self.backend.provider_duplicates().await
    }

    /// Runs the reconciler until `shutdown` resolves (remote backend): a
    /// first pass at once (effects a crash left behind), then one every
    /// [`RemoteSettings::reconcile_every`](crate::RemoteSettings). Returns
    /// at once on the local backend.
    pub async fn run_reconciler(self, shutdown: impl Future<Output = ()>) {
        self.backend.run_reconciler(shutdown).await;
    }
}
