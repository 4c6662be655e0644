//! Reconciliation outside a create: the background reconciler (including
//! its first pass at startup, for effects a crash left `in_progress`) and
//! the settling a status read asks for.

use std::future::Future;

use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::effect::Trigger;
use crate::provider::unix_ms;
use crate::store::effects::{self, OperationId};
use crate::store::ledger;

use super::Remote;

/// Most effects one reconciler pass takes on.
const PASS_SIZE: i64 = 64;

impl Remote {
    /// Settles an unsettled effect as far as can be done now, for a caller
    /// who asked what happened, unless another worker is at it right now:
    /// then the read answers what is recorded at once (`unknown` or
    /// `in_progress`, to be asked again), since that worker may be waiting
    /// on the provider for as long as its call timeout, and a status read
    /// must stay quick.
    pub(crate) async fn settle_for_status(&self, scope: &OperationId) -> Result<(), KitchenError> {
        let now = OffsetDateTime::now_utc();
        let lease = self.lease(now);
        if effects::take_lease(&self.db, scope, lease, unix_ms(now)).await? {
            let _ = self.work_on(scope.clone(), lease, Trigger::Status).await?;
        }
        Ok(())
    }

    /// One reconciler pass: settles, as far as can be done now, every
    /// unsettled effect that is due and that no live worker holds. Answers
    /// how many it worked on.
    pub(crate) async fn reconcile_due(&self, trigger: Trigger) -> Result<usize, KitchenError> {
        let now = OffsetDateTime::now_utc();
        let due = ledger::due(&self.db, unix_ms(now), PASS_SIZE).await?;
        let mut worked = 0;
        for scope in due {
            let now = OffsetDateTime::now_utc();
            let lease = self.lease(now);
            // Another instance's reconciler may have taken it meanwhile.
            if !effects::take_lease(&self.db, &scope, lease, unix_ms(now)).await? {
                continue;
            }
            let outcome = self.work_on(scope.clone(), lease, trigger).await?;
            tracing::info!(operation_key = %scope.key, action = scope.action.as_str(), outcome, ?trigger, "reconciled an effect");
            worked += 1;
        }
        Ok(worked)
    }

    /// Runs the reconciler until `shutdown` resolves: a first pass at once
    /// (effects a crash left behind), then one every
    /// [`RemoteSettings::reconcile_every`](crate::RemoteSettings). A failed
    /// pass is logged and the next one runs on schedule: reconciliation
    /// must outlive a database blip.
    pub(crate) async fn run_reconciler(&self, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        let mut trigger = Trigger::Startup;
        loop {
            match self.reconcile_due(trigger).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(effects = n, ?trigger, "reconciler pass done"),
                Err(e) => tracing::error!(error = %e, "reconciler pass failed"),
            }
            trigger = Trigger::Background;
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(self.settings.reconcile_every) => {}
            }
        }
    }
}
