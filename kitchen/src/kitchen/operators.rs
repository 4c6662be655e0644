//! What operators ask of the kitchen: lists of operations (a tenant's own,
//! or every tenant's), an operation as it is recorded, and settling by hand
//! an effect reconciliation could not settle.

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::effect::{FailedCall, OperationStatus, Upkeep};
use crate::domain::lifecycle::KeyPhase;
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::operation_list::{OperationCursor, OperationFilter, OperationPage};
use crate::domain::page::PageSize;
use crate::domain::settlement::{SettleAnswer, SettleOrder};
use crate::domain::tenant::TenantId;
use crate::store::{self, effects::OperationId};

use super::Kitchen;

impl Kitchen {
    /// One page of `tenant`'s operations that `filter` lets through, newest
    /// first, starting after `cursor`. Forgotten keys are not listed. A
    /// read: it settles nothing and calls no provider (the status of one
    /// operation does that).
    pub async fn operations(
        &self,
        tenant: TenantId,
        filter: &OperationFilter,
        size: PageSize,
        cursor: Option<&OperationCursor>,
    ) -> Result<OperationPage, KitchenError> {
        self.all_operations(Some(tenant), filter, size, cursor)
            .await
    }

    /// As [`Kitchen::operations`], across every tenant when `tenant` is
    /// `None`: for operators (`tickets ops list`), never for a door.
    pub async fn all_operations(
        &self,
        tenant: Option<TenantId>,
        filter: &OperationFilter,
        size: PageSize,
        cursor: Option<&OperationCursor>,
    ) -> Result<OperationPage, KitchenError> {
        let now = self.engine.keys.clock.now();
        let rows = self
            .guarded(store::operation_list::list(
                &self.db, tenant, filter, size, cursor, now,
            ))
            .await?;
        Ok(OperationPage::from_overfetch(rows, size))
    }

    /// How the work behind the promises stands: the reconciler's backlog
    /// and the records the retention sweep keeps.
    pub async fn upkeep(&self) -> Result<Upkeep, KitchenError> {
        self.guarded(store::ledger::upkeep(&self.db)).await
    }

    /// Up to `limit` of the latest calls to a provider that went wrong (a
    /// lost answer, a failed search, a provider out of reach, a refusal),
    /// newest first, across tenants: for operators. None on the local
    /// backend.
    pub async fn failed_provider_calls(&self, limit: u32) -> Result<Vec<FailedCall>, KitchenError> {
        self.guarded(store::ledger::failed_calls(&self.db, i64::from(limit)))
            .await
    }

    /// An operation as it is recorded, with its effect ledger if it has
    /// one (`tickets ops show`): unlike [`Kitchen::operation_status`] it
    /// settles nothing first and calls no provider, so an operator sees
    /// exactly what the service knows. `None` when nothing is recorded (or
    /// the key is forgotten).
    pub async fn operation_as_recorded(
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
        let Some((record, effect)) = self.guarded(store::ledger::read(&self.db, &scope)).await?
        else {
            return Ok(None);
        };
        let phase = record.phase(self.engine.keys.clock.now());
        Ok(match phase {
            KeyPhase::Forgotten => None,
            KeyPhase::Expired => Some(OperationStatus {
                record: OperationRecord {
                    result: None,
                    ..record
                },
                phase,
                effect,
            }),
            KeyPhase::Replayable => Some(OperationStatus {
                record,
                phase,
                effect,
            }),
        })
    }

    /// Carries out an operator's decision about an effect whose outcome
    /// reconciliation could not learn (remote backend): `made` (the
    /// operation succeeded with the provider's object, and a retry answers
    /// it) or `not made` (it failed before its effect, and a retry with the
    /// same key sends it), with an audit entry written in the same
    /// transaction, which the status shows from then on.
    ///
    /// Only an `unknown` operation is settled, under its lease, so a settle
    /// racing a caller's retry or the reconciler has one winner and a
    /// settled record never changes again; the loser's refusal says what
    /// won. The provider is searched first: a decision it contradicts is
    /// refused unless `order.force`.
    pub async fn settle(
        &self,
        tenant: TenantId,
        action: Action,
        key: &OperationKey,
        order: &SettleOrder,
    ) -> Result<SettleAnswer, KitchenError> {
        let scope = OperationId {
            tenant,
            action,
            key: key.clone(),
        };
        self.guarded(self.backend.settle_by_hand(&self.db, scope, order))
            .await
    }
}
