//! The retention sweep's statements: past its replay window a settled
//! record becomes a tombstone (its frozen answer, request and effect detail
//! dropped, its attempts deleted); past its tombstone horizon it is
//! deleted. Effects still `in_progress` or `unknown` are never touched.
//!
//! Why batches: a statement that changed every due row at once would hold
//! SQLite's one write lock (and, on PostgreSQL, many row locks) for as long
//! as it ran, and writes would queue behind it. A small batch is a few
//! milliseconds. On PostgreSQL each batch locks its rows with `FOR UPDATE
//! SKIP LOCKED`, so sweepers on several instances take disjoint batches:
//! none waits for another and no record is changed twice.

use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;

use super::{Db, WriteTransaction};

/// The columns a tombstone drops: everything but the scope, fingerprint,
/// state, ticket and resource, `created_at` and the horizons.
macro_rules! tombstone_set {
    () => {
        "result_snapshot = NULL, result_snapshot_tail = NULL, request_snapshot = NULL, \
         state_detail = NULL, \
         external_ref = NULL, key_trusted_until = NULL, first_dispatched_at = NULL, \
         last_dispatched_at = NULL, lease_owner = NULL, lease_until_ms = NULL, \
         next_check_ms = NULL, tombstoned_at = $1"
    };
}

/// Which records the sweep settles: never an effect still in flight.
macro_rules! settled {
    () => {
        "state IN ('succeeded', 'failed_before_effect')"
    };
}

const PG_TOMBSTONE: &str = concat!(
    "WITH due AS (SELECT tenant_id, action, operation_key FROM operations \
     WHERE tombstoned_at IS NULL AND replayable_until <= $1 AND ",
    settled!(),
    " ORDER BY replayable_until LIMIT $2 FOR UPDATE SKIP LOCKED), \
     swept AS (UPDATE operations o SET ",
    tombstone_set!(),
    " FROM due WHERE o.tenant_id = due.tenant_id AND o.action = due.action \
     AND o.operation_key = due.operation_key \
     RETURNING o.tenant_id, o.action, o.operation_key), \
     attempts AS (DELETE FROM operation_attempts a USING swept \
     WHERE a.tenant_id = swept.tenant_id AND a.action = swept.action \
     AND a.operation_key = swept.operation_key) \
     SELECT count(*) FROM swept"
);

const PG_DELETE: &str = concat!(
    "WITH due AS (SELECT tenant_id, action, operation_key FROM operations \
     WHERE retained_until <= $1 AND ",
    settled!(),
    " ORDER BY retained_until LIMIT $2 FOR UPDATE SKIP LOCKED) \
     DELETE FROM operations o USING due WHERE o.tenant_id = due.tenant_id \
     AND o.action = due.action AND o.operation_key = due.operation_key"
);

const SQLITE_TOMBSTONE: &str = concat!(
    "UPDATE operations SET ",
    tombstone_set!(),
    " WHERE rowid IN (SELECT rowid FROM operations \
     WHERE tombstoned_at IS NULL AND replayable_until <= $1 AND ",
    settled!(),
    " ORDER BY replayable_until LIMIT $2) \
     RETURNING tenant_id, action, operation_key"
);

const SQLITE_DELETE_ATTEMPTS: &str = "DELETE FROM operation_attempts \
     WHERE tenant_id = $1 AND action = $2 AND operation_key = $3";

/// Attempts go with their record through `ON DELETE CASCADE`.
const SQLITE_DELETE: &str = concat!(
    "DELETE FROM operations WHERE rowid IN (SELECT rowid FROM operations \
     WHERE retained_until <= $1 AND ",
    settled!(),
    " ORDER BY retained_until LIMIT $2)"
);

/// Turns up to `batch` records whose replay window ended by `now` into
/// tombstones; answers how many.
pub(crate) async fn tombstone(
    db: &Db,
    wait: Duration,
    now: OffsetDateTime,
    batch: u32,
) -> Result<u64, KitchenError> {
    let limit = i64::from(batch);
    let swept = match db {
        Db::Postgres(pool) => {
            let n: i64 = sqlx::query_scalar(PG_TOMBSTONE)
                .bind(now)
                .bind(limit)
                .fetch_one(pool)
                .await?;
            n
        }
        Db::Sqlite(pool) => {
            let mut tx = pool.begin_write(wait).await?;
            let keys: Vec<(Uuid, String, String)> = sqlx::query_as(SQLITE_TOMBSTONE)
                .bind(now)
                .bind(limit)
                .fetch_all(&mut *tx)
                .await?;
            // Only the remote backend records attempts; for the local one
            // each of these finds nothing, through the primary key.
            for (tenant, action, key) in &keys {
                sqlx::query(SQLITE_DELETE_ATTEMPTS)
                    .bind(tenant)
                    .bind(action)
                    .bind(key)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            i64::try_from(keys.len()).unwrap_or(i64::MAX)
        }
    };
    Ok(u64::try_from(swept).unwrap_or_default())
}

/// Deletes up to `batch` records whose tombstone horizon ended by `now`;
/// answers how many.
pub(crate) async fn delete(
    db: &Db,
    wait: Duration,
    now: OffsetDateTime,
    batch: u32,
) -> Result<u64, KitchenError> {
    let limit = i64::from(batch);
    let deleted = match db {
        Db::Postgres(pool) => sqlx::query(PG_DELETE)
            .bind(now)
            .bind(limit)
            .execute(pool)
            .await?
            .rows_affected(),
        Db::Sqlite(pool) => {
            let mut tx = pool.begin_write(wait).await?;
            let n = sqlx::query(SQLITE_DELETE)
                .bind(now)
                .bind(limit)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            n
        }
    };
    Ok(deleted)
}
