//! What the remote backend knows about an operation, for the status
//! resource: its effect settled first if it is still unsettled (a search,
//! never a send), then the record read again with its ledger.

use crate::KitchenError;
use crate::domain::effect::{EffectLedger, ExternalRef};
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
        let Some(row) = ledger::find(&self.db, scope).await? else {
            return Ok(None);
        };
        let record: OperationRecord = row.operation.try_into()?;
        let effect = match row.external_ref {
            None => None,
            Some(external_ref) => Some(EffectLedger {
                external_ref: ExternalRef::from_stored(external_ref),
                state_detail: row.state_detail,
                key_trusted_until: row.key_trusted_until,
                first_dispatched_at: row.first_dispatched_at,
                last_dispatched_at: row.last_dispatched_at,
                duplicates_at_provider: row
                    .provider_duplicates
                    .as_deref()
                    .map(|ids| ids.split(',').map(str::to_owned).collect())
                    .unwrap_or_default(),
                attempts: ledger::attempts(&self.db, scope).await?,
                // The ledger's one mark of an effect given up on (see
                // `store::effects`): unknown, and out of the queue.
                given_up: record.state == OperationState::Unknown && row.next_check_ms.is_none(),
            }),
        };
        Ok(Some((record, effect)))
    }
}
