//! What the remote backend knows about an operation, for the status
//! resource: its effect settled first if it is still unsettled (a search,
//! never a send), then the record read again with its ledger.

use crate::KitchenError;
use crate::domain::effect::EffectLedger;
use crate::domain::operation::{OperationRecord, OperationState};
use crate::store::effects::OperationId;
use crate::store::ledger;

use super::Remote;

impl Remote {
    /// The record of `scope` and its effect ledger, `record` being what was
    /// read before; `None` when the record vanished meanwhile (a sweep).
    pub(crate) async fn status(
        &self,
        scope: &OperationId,
        record: OperationRecord,
    ) -> Result<Option<(OperationRecord, Option<EffectLedger>)>, KitchenError> {
        if matches!(
            record.state,
            OperationState::Unknown | OperationState::InProgress
        ) {
            self.settle_for_status(scope).await?;
        }
        ledger::read(&self.db, scope).await
    }
}
