//! Lists of operations, newest first: a tenant's own (`GET /v1/operations`)
//! and, for operators, every tenant's (`tickets ops list`).

use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;
use crate::domain::effect::ExternalRef;
use crate::domain::lifecycle::{KeyPhase, floor_to_second};
use crate::domain::operation::{OperationRecord, OperationState};
use crate::domain::operation_list::{OperationCursor, OperationFilter, OperationSummary};
use crate::domain::page::PageSize;
use crate::domain::tenant::TenantId;

use super::ledger::split_duplicates;
use super::rows::{EffectRow, effect_columns, operation_columns};
use super::{Db, on_db};

/// What every list shares after its tenant condition. `$2` is now, cut to
/// a whole second (horizons are whole seconds); `$3` a recorded state;
/// `$4` which phase a succeeded one must be in (0 any, 1 replayable, 2
/// expired); `$5`, `$6` the action and the `since`/`before` bounds; `$8` to
/// `$10` the cursor; `$11` the page size plus one; `$12` 1 for only what
/// needs an operator (given up on, or held more than once at the provider:
/// `OperationSummary::needs_operator`).
///
/// A forgotten key is left out with the very conditions the sweep deletes
/// it by (`operations::forget`): it has no status, so it is not listed.
macro_rules! list_tail {
    () => {
        " AND NOT ((state = 'succeeded' AND retained_until <= $2) \
           OR (state = 'failed_before_effect' \
               AND (COALESCE(replayable_until, retained_until) <= $2 OR tombstoned_at IS NOT NULL))) \
         AND ($3 IS NULL OR state = $3) \
         AND ($4 = 0 OR ($4 = 2) = (tombstoned_at IS NOT NULL \
               OR COALESCE(replayable_until, retained_until) <= $2)) \
         AND ($5 IS NULL OR action = $5) \
         AND ($6 IS NULL OR created_at >= $6) \
         AND ($7 IS NULL OR created_at < $7) \
         AND ($8 IS NULL OR (created_at, action, operation_key) < ($8, $9, $10)) \
         AND ($12 = 0 OR (state = 'unknown' AND next_check_ms IS NULL) \
               OR provider_duplicates IS NOT NULL) \
         ORDER BY created_at DESC, action DESC, operation_key DESC LIMIT $11"
    };
}

/// One tenant's operations, served by `operations_tenant_newest_idx`.
const LIST_TENANT: &str = concat!(
    "SELECT ",
    operation_columns!(),
    ", ",
    effect_columns!(),
    " FROM operations WHERE tenant_id = $1",
    list_tail!()
);

/// Every tenant's, for an operator. `$1` (always bound, never NULL) stands
/// where the tenant would, so that both lists take the same parameters.
const LIST_ALL: &str = concat!(
    "SELECT ",
    operation_columns!(),
    ", ",
    effect_columns!(),
    " FROM operations WHERE $1 IS NOT NULL",
    list_tail!()
);

/// Up to `size` + 1 operations of `tenant` (every tenant's for `None`)
/// that `filter` lets through, after `cursor`, newest first; the extra one
/// says whether another page exists.
pub(crate) async fn list(
    db: &Db,
    tenant: Option<TenantId>,
    filter: &OperationFilter,
    size: PageSize,
    cursor: Option<&OperationCursor>,
    now: OffsetDateTime,
) -> Result<Vec<OperationSummary>, KitchenError> {
    let sql = if tenant.is_some() {
        LIST_TENANT
    } else {
        LIST_ALL
    };
    let (state, phase) = match filter.state.map(|s| s.stored()) {
        None => (None, 0_i32),
        Some((state, None)) => (Some(state), 0),
        Some((state, Some(KeyPhase::Expired))) => (Some(state), 2),
        Some((state, Some(_))) => (Some(state), 1),
    };
    let rows = on_db!(db, pool => sqlx::query_as::<_, EffectRow>(sql)
        .bind(tenant.map(|t| t.as_uuid()).unwrap_or(Uuid::nil()))
        .bind(floor_to_second(now))
        .bind(state.map(OperationState::as_str))
        .bind(phase)
        .bind(filter.action.map(|a| a.as_str()))
        .bind(filter.since)
        .bind(filter.before)
        .bind(cursor.map(|c| c.created_at))
        .bind(cursor.map(|c| c.action.as_str()))
        .bind(cursor.map(|c| c.key.as_str().to_owned()))
        .bind(i64::from(size.get()) + 1)
        .bind(i32::from(filter.needs_operator))
        .fetch_all(pool)
        .await?);
    rows.into_iter()
        .map(|row| summary(row, now))
        .collect::<Result<Vec<_>, _>>()
}

fn summary(row: EffectRow, now: OffsetDateTime) -> Result<OperationSummary, KitchenError> {
    let record: OperationRecord = row.operation.try_into()?;
    let phase = record.phase(now);
    // The ledger's one mark of an effect given up on (`store::effects`).
    let given_up = record.state == OperationState::Unknown && row.next_check_ms.is_none();
    Ok(OperationSummary {
        // The first answer belongs to the status (and only while replayable).
        record: OperationRecord {
            result: None,
            ..record
        },
        phase,
        external_ref: row.external_ref.map(ExternalRef::from_stored),
        detail: row.state_detail,
        given_up,
        duplicates_at_provider: split_duplicates(row.provider_duplicates.as_deref()),
    })
}
