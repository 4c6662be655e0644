//! What is read of the effect ledger (remote backend): an effect with its
//! attempts, for the status an operation shows; the reconciler's queue; and
//! the counts of effects that need an operator. The writes, under a lease,
//! are `effects.rs`.

use uuid::Uuid;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::effect::{EffectAttempt, EffectLedger, ExternalRef, FailedCall, Upkeep};
use crate::domain::operation::{OperationKey, OperationRecord, OperationState};
use crate::domain::tenant::TenantId;

use super::effects::{OperationId, bind_scope};
use super::rows::{AttemptRow, EffectRow, effect_columns, operation_columns};
use super::{Db, on_db};

/// Effects given up on (see `effects.rs`'s module documentation). The first condition
/// repeats the partial index's, so that both databases use the index.
const COUNT_UNRESOLVED: &str = "SELECT COUNT(*) FROM operations \
     WHERE state IN ('in_progress', 'unknown') AND state = 'unknown' AND next_check_ms IS NULL";

/// Effects a search found more than once at the provider. Rare by design,
/// so a scan of the column is cheap next to an index kept for it.
const COUNT_DUPLICATED: &str =
    "SELECT COUNT(*) FROM operations WHERE provider_duplicates IS NOT NULL";

/// The effects the reconciler will look at again; the first condition
/// repeats the partial index's.
const COUNT_RECONCILING: &str = "SELECT COUNT(*) FROM operations \
     WHERE state IN ('in_progress', 'unknown') AND next_check_ms IS NOT NULL";

/// Every record and how many are tombstones. A scan: the console asks for
/// it once per page view, not per request.
const COUNT_RECORDS: &str = "SELECT COUNT(*), COUNT(tombstoned_at) FROM operations";

/// The latest calls that went wrong, newest first. A scan of the attempts
/// (remote effects only), bounded by the limit.
const SELECT_FAILED_CALLS: &str = "SELECT tenant_id, action, operation_key, attempt_no, kind, \
     trigger, started_at, finished_at, result, detail FROM operation_attempts \
     WHERE result IN ('ambiguous', 'lookup_failed', 'not_sent', 'rejected') \
     ORDER BY started_at DESC LIMIT $1";

const SELECT_EFFECT: &str = concat!(
    "SELECT ",
    operation_columns!(),
    ", ",
    effect_columns!(),
    " FROM operations WHERE tenant_id = $1 AND action = $2 AND operation_key = $3"
);

const SELECT_ATTEMPTS: &str = "SELECT attempt_no, kind, trigger, started_at, finished_at, result, detail \
     FROM operation_attempts WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 \
     ORDER BY attempt_no";

/// Unsettled effects whose time has come and whose lease (if any) ran out:
/// the reconciler's queue, served by the partial index on `next_check_ms`.
/// An effect given up on (`next_check_ms` NULL) is never due.
const SELECT_DUE: &str = "SELECT tenant_id, action, operation_key FROM operations \
     WHERE state IN ('in_progress', 'unknown') AND next_check_ms <= $1 \
     AND (lease_until_ms IS NULL OR lease_until_ms < $1) \
     ORDER BY next_check_ms LIMIT $2";

/// How many effects were given up on: `unknown`, attempts exhausted, no
/// worker will call the provider for them again. Each needs an operator.
pub(crate) async fn unresolved(db: &Db) -> Result<u64, KitchenError> {
    let count = on_db!(db, pool => sqlx::query_scalar::<_, i64>(COUNT_UNRESOLVED)
        .fetch_one(pool)
        .await?);
    Ok(u64::try_from(count).unwrap_or(0))
}

/// How many effects a search found more than once at the provider (among
/// the records still kept). Each needs an operator.
pub(crate) async fn duplicated(db: &Db) -> Result<u64, KitchenError> {
    let count = on_db!(db, pool => sqlx::query_scalar::<_, i64>(COUNT_DUPLICATED)
        .fetch_one(pool)
        .await?);
    Ok(u64::try_from(count).unwrap_or(0))
}

/// The reconciler's backlog and the records the sweep keeps.
pub(crate) async fn upkeep(db: &Db) -> Result<Upkeep, KitchenError> {
    let reconciling = on_db!(db, pool => sqlx::query_scalar::<_, i64>(COUNT_RECONCILING)
        .fetch_one(pool)
        .await?);
    let (records, tombstones): (i64, i64) =
        on_db!(db, pool => sqlx::query_as(COUNT_RECORDS).fetch_one(pool).await?);
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(Upkeep {
        reconciling: count(reconciling),
        records: count(records),
        tombstones: count(tombstones),
    })
}

#[derive(sqlx::FromRow)]
struct FailedCallRow {
    tenant_id: Uuid,
    action: String,
    operation_key: String,
    #[sqlx(flatten)]
    attempt: AttemptRow,
}

/// Up to `limit` of the latest calls to the provider that went wrong.
pub(crate) async fn failed_calls(db: &Db, limit: i64) -> Result<Vec<FailedCall>, KitchenError> {
    let rows = on_db!(db, pool => sqlx::query_as::<_, FailedCallRow>(SELECT_FAILED_CALLS)
        .bind(limit)
        .fetch_all(pool)
        .await?);
    rows.into_iter()
        .map(|row| {
            Ok(FailedCall {
                tenant: TenantId::from_uuid(row.tenant_id),
                action: Action::parse(&row.action).ok_or_else(|| {
                    KitchenError::CorruptRecord(format!("attempt action: {}", row.action))
                })?,
                key: OperationKey::parse(row.operation_key)
                    .map_err(|e| KitchenError::CorruptRecord(format!("attempt key: {e}")))?,
                attempt: row.attempt.try_into()?,
            })
        })
        .collect()
}

/// The record of a scope with its effect columns.
pub(crate) async fn find(db: &Db, scope: &OperationId) -> Result<Option<EffectRow>, KitchenError> {
    Ok(
        on_db!(db, pool => bind_scope!(sqlx::query_as::<_, EffectRow>(SELECT_EFFECT), scope)
        .fetch_optional(pool)
        .await?),
    )
}

/// The record of a scope as it stands, with its effect ledger when it has
/// one (it was written ahead for a provider): what was sent, every call
/// and its answer, copies seen at the provider, settlements by hand.
/// `None` when nothing is recorded.
pub(crate) async fn read(
    db: &Db,
    scope: &OperationId,
) -> Result<Option<(OperationRecord, Option<EffectLedger>)>, KitchenError> {
    let Some(row) = find(db, scope).await? else {
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
            duplicates_at_provider: split_duplicates(row.provider_duplicates.as_deref()),
            attempts: attempts(db, scope).await?,
            // The ledger's one mark of an effect given up on (see
            // `effects.rs`): unknown, and out of the queue.
            given_up: record.state == OperationState::Unknown && row.next_check_ms.is_none(),
            settled_by_hand: super::settlements::list(db, scope).await?,
        }),
    };
    Ok(Some((record, effect)))
}

/// The provider's ids of copies besides the original, as the ledger keeps
/// them (comma-separated).
pub(crate) fn split_duplicates(stored: Option<&str>) -> Vec<String> {
    stored
        .map(|ids| ids.split(',').map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Every attempt of a scope, oldest first.
pub(crate) async fn attempts(
    db: &Db,
    scope: &OperationId,
) -> Result<Vec<EffectAttempt>, KitchenError> {
    let rows = on_db!(db, pool => bind_scope!(sqlx::query_as::<_, AttemptRow>(SELECT_ATTEMPTS), scope)
        .fetch_all(pool)
        .await?);
    rows.into_iter().map(TryInto::try_into).collect()
}

/// Up to `limit` unsettled effects that are due, oldest schedule first.
pub(crate) async fn due(
    db: &Db,
    now_ms: i64,
    limit: i64,
) -> Result<Vec<OperationId>, KitchenError> {
    let rows: Vec<(Uuid, String, String)> = on_db!(db, pool => sqlx::query_as(SELECT_DUE)
        .bind(now_ms)
        .bind(limit)
        .fetch_all(pool)
        .await?);
    rows.into_iter()
        .map(|(tenant, action, key)| {
            Ok(OperationId {
                tenant: TenantId::from_uuid(tenant),
                action: Action::parse(&action).ok_or_else(|| {
                    KitchenError::CorruptRecord(format!("operation action: {action}"))
                })?,
                key: OperationKey::parse(key)
                    .map_err(|e| KitchenError::CorruptRecord(format!("operation key: {e}")))?,
            })
        })
        .collect()
}
