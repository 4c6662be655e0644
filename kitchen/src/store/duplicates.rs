//! The likely-duplicate guard's SQL: the earlier write with the same
//! content under another key, the lock that lets two racing writes of the
//! same content decide one after the other, and a tenant's own guard mode.

use time::OffsetDateTime;
use uuid::Uuid;

use crate::KitchenError;
use crate::domain::duplicate::{EarlierWrite, GuardMode};
use crate::domain::operation::{OperationKey, OperationRecord, OperationState};
use crate::domain::tenant::{TenantId, TenantName};
use crate::domain::ticket::TicketId;

use super::write::{WriteTx, on_tx};
use super::{Db, on_db};

/// The newest write of `record`'s tenant, action and content under another
/// key since `$6` that happened or may still happen (served by
/// `operations_content_idx`).
const EARLIER_WRITE: &str = "SELECT operation_key, state, ticket_id, resource_id, created_at \
     FROM operations \
     WHERE tenant_id = $1 AND action = $2 AND fingerprint = $3 AND fingerprint_version = $4 \
     AND operation_key <> $5 AND created_at >= $6 \
     AND state IN ('succeeded', 'in_progress', 'unknown') \
     ORDER BY created_at DESC LIMIT 1";

/// Waits for, then holds until the transaction ends, a lock named after
/// the content (tenant, action, fingerprint): two writes of the same
/// content then look for each other one after the other. (SQLite needs
/// none: it has one writer.)
const LOCK_CONTENT: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2 || ':' || $3, 0))";

/// Run before [`EARLIER_WRITE`] on PostgreSQL, inside its transaction: the
/// plans that answer it without a sort (the content index; the tenant's
/// newest first, when one content dominates) are then the only ones left.
///
/// Why: until a table has statistics (a new database's first minute,
/// before autovacuum's first `ANALYZE`; a new tenant that grows fast
/// between two), the planner estimates one matching row for every index
/// that starts with the tenant and the action, and picks the primary key
/// for being smaller, then sorts what it found: every row of the tenant's
/// action, read on every create. Measured: 1.0k-1.5k REST creates/s at 16
/// clients on a fresh database against 2.8k with the guard off, the
/// primary key's scans reading 7.9M rows for 10k creates.
const PREFER_SORTED_INDEX: &str = "SET LOCAL enable_sort = off";

type EarlierRow = (String, String, Option<Uuid>, Option<Uuid>, OffsetDateTime);

fn earlier(record: &OperationRecord, row: EarlierRow) -> Result<EarlierWrite, KitchenError> {
    let (key, state, ticket_id, resource_id, created_at) = row;
    Ok(EarlierWrite {
        action: record.action,
        key: OperationKey::parse(key)
            .map_err(|e| KitchenError::CorruptRecord(format!("operation key: {e}")))?,
        state: OperationState::parse(&state)
            .ok_or_else(|| KitchenError::CorruptRecord(format!("operation state: {state}")))?,
        ticket_id: ticket_id.map(TicketId::from_uuid),
        resource_id,
        created_at,
    })
}

macro_rules! bind_earlier {
    ($query:expr, $record:expr, $since:expr) => {
        $query
            .bind($record.tenant_id.as_uuid())
            .bind($record.action.as_str())
            .bind($record.fingerprint.hex())
            .bind($record.fingerprint.version())
            .bind($record.key.as_str())
            .bind($since)
    };
}

/// The earlier write `record` looks like a duplicate of, read on the pool
/// (after the write, for a warning).
pub(crate) async fn earlier_write(
    db: &Db,
    record: &OperationRecord,
    since: OffsetDateTime,
) -> Result<Option<EarlierWrite>, KitchenError> {
    let row: Option<EarlierRow> = match db {
        Db::Sqlite(pool) => {
            bind_earlier!(sqlx::query_as(EARLIER_WRITE), record, since)
                .fetch_optional(pool)
                .await?
        }
        Db::Postgres(pool) => {
            // It ends (nothing written) when dropped.
            let mut tx = pool.begin_read_only(PREFER_SORTED_INDEX).await?;
            bind_earlier!(sqlx::query_as(EARLIER_WRITE), record, since)
                .fetch_optional(&mut *tx)
                .await?
        }
    };
    row.map(|row| earlier(record, row)).transpose()
}

/// The same, inside the write's transaction and after the content's lock,
/// so that of two racing writes of the same content the second sees the
/// first (for a refusal).
pub(crate) async fn earlier_write_locked(
    tx: &mut WriteTx,
    record: &OperationRecord,
    since: OffsetDateTime,
) -> Result<Option<EarlierWrite>, KitchenError> {
    if let WriteTx::Postgres(t) = tx {
        sqlx::query(LOCK_CONTENT)
            .bind(record.tenant_id.as_uuid().to_string())
            .bind(record.action.as_str())
            .bind(record.fingerprint.hex())
            .execute(&mut **t)
            .await?;
        // Lasts to the write's end; what follows are inserts, which sort nothing.
        sqlx::query(PREFER_SORTED_INDEX).execute(&mut **t).await?;
    }
    let row: Option<EarlierRow> = on_tx!(tx, conn => {
        bind_earlier!(sqlx::query_as(EARLIER_WRITE), record, since)
            .fetch_optional(conn)
            .await?
    });
    row.map(|row| earlier(record, row)).transpose()
}

/// The tenant's own guard mode; `None`: the deployment's.
pub(crate) async fn mode_of(db: &Db, tenant: TenantId) -> Result<Option<GuardMode>, KitchenError> {
    let row: Option<(Option<String>,)> = on_db!(db, pool => {
        sqlx::query_as("SELECT duplicate_guard FROM tenants WHERE id = $1")
            .bind(tenant.as_uuid())
            .fetch_optional(pool)
            .await?
    });
    row.and_then(|(mode,)| mode)
        .map(|mode| {
            mode.parse()
                .map_err(|e: String| KitchenError::CorruptRecord(format!("tenant guard mode: {e}")))
        })
        .transpose()
}

/// Sets the tenant named `name`'s own guard mode (`None`: the
/// deployment's again); `false` when there is no such tenant.
pub(crate) async fn set_mode(
    db: &Db,
    name: &TenantName,
    mode: Option<GuardMode>,
) -> Result<bool, KitchenError> {
    let done = on_db!(db, pool => {
        sqlx::query("UPDATE tenants SET duplicate_guard = $1 WHERE name = $2")
            .bind(mode.map(GuardMode::as_str))
            .bind(name.as_str())
            .execute(pool)
            .await?
            .rows_affected()
    });
    Ok(done == 1)
}
