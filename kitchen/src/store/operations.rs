//! Operation records: the claim statement and lookups. The transaction
//! around the claim is in `write.rs`.

use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::lifecycle::floor_to_second;
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::tenant::TenantId;

use super::rows::{OperationRow, operation_columns};
use super::{Db, on_db};

/// Claims (tenant, action, key): the statement that decides placement.
pub(crate) const CLAIM: &str = "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, \
     fingerprint, state, ticket_id, result_snapshot, created_at, retained_until, \
     replayable_until, resource_id, result_snapshot_tail) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
     ON CONFLICT (tenant_id, action, operation_key) DO NOTHING";

/// Reads an operation record by its primary key.
pub(crate) const SELECT_OPERATION: &str = concat!(
    "SELECT ",
    operation_columns!(),
    " FROM operations WHERE tenant_id = $1 AND action = $2 AND operation_key = $3"
);

/// Binds a record's claim parameters, `$1` to `$13` of [`CLAIM`], on either
/// driver; `$result` is its result as stored (`Option<shared_text::Stored>`).
macro_rules! bind_claim {
    ($query:expr, $record:expr, $result:expr) => {
        $query
            .bind($record.tenant_id.as_uuid())
            .bind($record.action.as_str())
            .bind($record.key.as_str())
            .bind($record.fingerprint.version())
            .bind($record.fingerprint.hex())
            .bind($record.state.as_str())
            .bind($record.ticket_id.map(|id| id.as_uuid()))
            .bind($result.map(|r| r.head))
            .bind($record.created_at)
            .bind($record.retained_until)
            .bind($record.replayable_until)
            .bind($record.resource_id)
            .bind($result.and_then(|r| r.tail))
    };
}
pub(crate) use bind_claim;

/// The record of (tenant, action, key), if there is one.
pub(crate) async fn find(
    db: &Db,
    tenant: TenantId,
    action: Action,
    key: &OperationKey,
) -> Result<Option<OperationRecord>, KitchenError> {
    let row = on_db!(db, pool => {
        sqlx::query_as::<_, OperationRow>(SELECT_OPERATION)
            .bind(tenant.as_uuid())
            .bind(action.as_str())
            .bind(key.as_str())
            .fetch_optional(pool)
            .await?
    });
    row.map(TryInto::try_into).transpose()
}

/// Deletes a record whose key is forgotten (past its tombstone horizon, or
/// a provider provably made nothing and its replay window is over), so the
/// key can be claimed again. The conditions are repeated here so that a
/// record someone else has just re-claimed is never deleted. `true` when
/// this call deleted it.
pub(crate) async fn forget(
    db: &Db,
    record: &OperationRecord,
    now: OffsetDateTime,
) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => sqlx::query(FORGET)
        .bind(record.tenant_id.as_uuid())
        .bind(record.action.as_str())
        .bind(record.key.as_str())
        .bind(record.created_at)
        // Horizons are whole seconds, so comparing them with `now` cut to a
        // whole second is exact, also as SQLite's RFC 3339 text (where
        // "…01Z" sorts after "…01.5Z").
        .bind(floor_to_second(now))
        .execute(pool)
        .await?
        .rows_affected());
    Ok(done == 1)
}

/// See [`forget`]. `created_at` pins the very record that was read.
const FORGET: &str = "DELETE FROM operations \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND created_at = $4 \
     AND ((state = 'succeeded' AND retained_until <= $5) \
       OR (state = 'failed_before_effect' AND (replayable_until <= $5 OR tombstoned_at IS NOT NULL)))";
