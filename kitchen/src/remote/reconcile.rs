//! Reconciliation outside a create: the background reconciler (including
//! its first pass at startup, for effects a crash left `in_progress`) and
//! the status read, which reconciles on demand.

use std::future::Future;

use time::OffsetDateTime;

use crate::domain::action::Action;
use crate::domain::effect::{EffectLedger, ExternalRef, OperationStatus, Trigger};
use crate::domain::operation::{OperationKey, OperationRecord, OperationState};
use crate::domain::tenant::TenantId;
use crate::provider::unix_ms;
use crate::store::effects::{self, Scope};
use crate::{Kitchen, KitchenError};

/// Most effects one reconciler pass takes on.
const PASS_SIZE: i64 = 64;

impl Kitchen {
    /// What is known about an operation, for the status resource; `None`
    /// when nothing was recorded for the key (then a retry is safe).
    ///
    /// With the remote backend, an `unknown` effect, or one left
    /// `in_progress` by a worker whose lease ran out, is reconciled first,
    /// unless another worker is at it right now: a caller who asks what
    /// happened gets the freshest answer there is.
    pub async fn operation_status(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
    ) -> Result<Option<OperationStatus>, KitchenError> {
        let scope = Scope {
            tenant,
            action,
            key: key.clone(),
        };
        let Some(row) = effects::find(&self.db, &scope).await? else {
            return Ok(None);
        };
        let state =
            OperationState::parse(row.operation_state()).unwrap_or(OperationState::Succeeded);
        if let Some(remote) = &self.remote
            && matches!(state, OperationState::Unknown | OperationState::InProgress)
        {
            let now = OffsetDateTime::now_utc();
            let lease = remote.lease(now);
            if effects::take_lease(&self.db, &scope, lease, unix_ms(now)).await? {
                self.work(remote, scope.clone(), lease, Trigger::Status)
                    .await?;
            }
        }
        let Some(row) = effects::find(&self.db, &scope).await? else {
            return Ok(None);
        };
        let external_ref = row.external_ref.clone();
        let ledger_fields = (
            row.state_detail.clone(),
            row.key_trusted_until,
            row.first_dispatched_at,
            row.last_dispatched_at,
        );
        let record: OperationRecord = row.operation.try_into()?;
        let effect = match external_ref {
            None => None,
            Some(external_ref) => {
                let (state_detail, key_trusted_until, first, last) = ledger_fields;
                Some(EffectLedger {
                    external_ref: ExternalRef::from_stored(external_ref),
                    state_detail,
                    key_trusted_until,
                    first_dispatched_at: first,
                    last_dispatched_at: last,
                    attempts: effects::attempts(&self.db, &scope).await?,
                })
            }
        };
        Ok(Some(OperationStatus { record, effect }))
    }

    /// One reconciler pass: settles, as far as can be done now, every
    /// unsettled effect that is due and that no live worker holds. Answers
    /// how many it worked on. Does nothing on the local backend.
    pub async fn reconcile_due(&self, trigger: Trigger) -> Result<usize, KitchenError> {
        let Some(remote) = &self.remote else {
            return Ok(0);
        };
        let now = OffsetDateTime::now_utc();
        let due = effects::due(&self.db, unix_ms(now), PASS_SIZE).await?;
        let mut worked = 0;
        for scope in due {
            let now = OffsetDateTime::now_utc();
            let lease = remote.lease(now);
            // Another instance's reconciler may have taken it meanwhile.
            if !effects::take_lease(&self.db, &scope, lease, unix_ms(now)).await? {
                continue;
            }
            let outcome = self.work(remote, scope.clone(), lease, trigger).await?;
            tracing::info!(operation_key = %scope.key, outcome = outcome.name(), ?trigger, "reconciled an effect");
            worked += 1;
        }
        Ok(worked)
    }

    /// Runs the reconciler until `shutdown` resolves: a first pass at once
    /// (effects a crash left behind), then one every
    /// [`RemoteSettings::reconcile_every`](crate::RemoteSettings). Returns
    /// at once on the local backend. A failed pass is logged and the next
    /// one runs on schedule: reconciliation must outlive a database blip.
    pub async fn run_reconciler(self, shutdown: impl Future<Output = ()>) {
        let Some(remote) = self.remote.clone() else {
            return;
        };
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
                () = tokio::time::sleep(remote.settings.reconcile_every) => {}
            }
        }
    }
}
