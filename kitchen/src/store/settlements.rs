//! Effects settled by hand (remote backend): the decision written under the
//! effect's lease, with its audit entry in the same transaction, and the
//! audit trail read back for the status.
//!
//! Both decisions about an unknown effect require it to be `unknown` still,
//! besides the lease: a settled record never flips, whoever settled it.
//! Resolving copies at the provider (`--keep`) changes only which copies a
//! succeeded record lists.

use std::time::Duration;

use time::OffsetDateTime;

use crate::KitchenError;
use crate::domain::settlement::{
    Decision, OperatorName, ProviderReference, SettleReason, Settlement,
};

use super::effects::{Lease, Made, OperationId, bind_scope};
use super::write::{WriteTx, on_tx};
use super::{Db, WriteTransaction, on_db};

/// Copies seen at the provider are kept once seen ($8 NULL keeps them).
const SETTLE_MADE: &str = "UPDATE operations SET state = 'succeeded', ticket_id = $5, \
     resource_id = $6, result_snapshot = $7, result_snapshot_tail = NULL, state_detail = NULL, \
     provider_duplicates = COALESCE($8, provider_duplicates), \
     lease_owner = NULL, lease_until_ms = NULL, next_check_ms = NULL \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4 \
     AND state = 'unknown'";

/// Out of the reconciler's queue: a retry with the same key sends it.
const SETTLE_NOT_MADE: &str = "UPDATE operations SET state = 'failed_before_effect', \
     state_detail = $5, lease_owner = NULL, lease_until_ms = NULL, next_check_ms = NULL \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND lease_owner = $4 \
     AND state = 'unknown'";

const INSERT_SETTLEMENT: &str = "INSERT INTO operation_settlements (tenant_id, action, \
     operation_key, settled_at, decision, provider_reference, decided_by, reason, \
     provider_check, forced) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

const SELECT_SETTLEMENTS: &str = "SELECT settled_at, decision, provider_reference, decided_by, \
     reason, provider_check, forced FROM operation_settlements \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 ORDER BY settled_at";

/// Binds the audit entry as `$4` to `$10` of [`INSERT_SETTLEMENT`].
macro_rules! bind_entry {
    ($query:expr, $entry:expr) => {
        $query
            .bind($entry.settled_at)
            .bind($entry.decision.as_str())
            .bind($entry.decision.reference().map(|r| r.as_str()))
            .bind($entry.by.as_str())
            .bind($entry.reason.as_str())
            .bind($entry.provider_check.as_str())
            .bind($entry.forced)
    };
}

/// Under the lease, in the caller's transaction (which has just written
/// the local copy of what the provider holds): the effect succeeded with
/// `made`, as `entry` records. `false`: the lease was lost or the effect is
/// no longer unknown; the caller rolls back.
pub(crate) async fn settle_made(
    tx: &mut WriteTx,
    scope: &OperationId,
    lease: Lease,
    made: Made<'_>,
    entry: &Settlement,
) -> Result<bool, KitchenError> {
    let duplicates = (!made.duplicates.is_empty()).then(|| made.duplicates.join(","));
    let moved = on_tx!(tx, conn => {
        let moved = bind_scope!(sqlx::query(SETTLE_MADE), scope)
            .bind(lease.owner)
            .bind(made.ticket.map(|t| t.as_uuid()))
            .bind(made.resource)
            .bind(made.snapshot)
            .bind(duplicates.as_deref())
            .execute(&mut *conn)
            .await?
            .rows_affected();
        if moved == 1 {
            bind_entry!(bind_scope!(sqlx::query(INSERT_SETTLEMENT), scope), entry)
                .execute(&mut *conn)
                .await?;
        }
        moved
    });
    Ok(moved == 1)
}

/// Under the lease: the provider never made the effect, as `entry`
/// records; the operation failed before its effect with `detail`, and the
/// lease is given back. `false`: the lease was lost or the effect is no
/// longer unknown, and nothing was written.
pub(crate) async fn settle_not_made(
    db: &Db,
    wait: Duration,
    scope: &OperationId,
    lease: Lease,
    detail: &str,
    entry: &Settlement,
) -> Result<bool, KitchenError> {
    let settled: sqlx::Result<bool> = on_db!(db, pool => async {
        let mut tx = WriteTransaction::begin_write(pool, wait).await?;
        let moved = bind_scope!(sqlx::query(SETTLE_NOT_MADE), scope)
            .bind(lease.owner)
            .bind(detail)
            .execute(&mut *tx)
            .await?;
        if moved.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        bind_entry!(bind_scope!(sqlx::query(INSERT_SETTLEMENT), scope), entry)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }.await);
    Ok(settled?)
}

/// Only while the record still lists exactly the copies the operator saw.
const CLEAR_DUPLICATES: &str = "UPDATE operations SET provider_duplicates = NULL \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3 AND state = 'succeeded' \
     AND provider_duplicates = $4";

/// The copies at the provider of a succeeded effect are resolved, as
/// `entry` records: the record no longer lists them. No lease is needed: no
/// worker changes a succeeded record; the record must still list exactly
/// `duplicates` (as read), so two operators cannot both resolve it.
/// `false`: it does not, and nothing was written.
pub(crate) async fn clear_duplicates(
    db: &Db,
    wait: Duration,
    scope: &OperationId,
    duplicates: &[String],
    entry: &Settlement,
) -> Result<bool, KitchenError> {
    let listed = duplicates.join(",");
    let cleared: sqlx::Result<bool> = on_db!(db, pool => async {
        let mut tx = WriteTransaction::begin_write(pool, wait).await?;
        let moved = bind_scope!(sqlx::query(CLEAR_DUPLICATES), scope)
            .bind(listed.as_str())
            .execute(&mut *tx)
            .await?;
        if moved.rows_affected() != 1 {
            tx.rollback().await?;
            return Ok(false);
        }
        bind_entry!(bind_scope!(sqlx::query(INSERT_SETTLEMENT), scope), entry)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }.await);
    Ok(cleared?)
}

#[derive(sqlx::FromRow)]
struct SettlementRow {
    settled_at: OffsetDateTime,
    decision: String,
    provider_reference: Option<String>,
    decided_by: String,
    reason: String,
    provider_check: String,
    forced: bool,
}

impl TryFrom<SettlementRow> for Settlement {
    type Error = KitchenError;

    fn try_from(row: SettlementRow) -> Result<Self, Self::Error> {
        let corrupt = |why: &str| KitchenError::CorruptRecord(format!("settlement: {why}"));
        let decision = match (row.decision.as_str(), row.provider_reference) {
            ("made", Some(reference)) => Decision::Made(
                ProviderReference::parse(&reference).map_err(|v| corrupt(&v.message))?,
            ),
            ("not_made", None) => Decision::NotMade,
            ("kept", Some(reference)) => Decision::Kept(
                ProviderReference::parse(&reference).map_err(|v| corrupt(&v.message))?,
            ),
            (other, _) => return Err(corrupt(other)),
        };
        Ok(Settlement {
            settled_at: row.settled_at,
            decision,
            by: OperatorName::from_stored(row.decided_by),
            reason: SettleReason::from_stored(row.reason),
            provider_check: row.provider_check,
            forced: row.forced,
        })
    }
}

/// Every settlement by hand of `scope`, oldest first.
pub(crate) async fn list(db: &Db, scope: &OperationId) -> Result<Vec<Settlement>, KitchenError> {
    let rows = on_db!(db, pool => bind_scope!(sqlx::query_as::<_, SettlementRow>(SELECT_SETTLEMENTS), scope)
        .fetch_all(pool)
        .await?);
    rows.into_iter().map(TryInto::try_into).collect()
}
