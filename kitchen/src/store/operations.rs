//! The create transaction and operation lookups.

use std::time::Duration;

use crate::KitchenError;
use crate::domain::operation::{Action, OperationKey, OperationRecord};
use crate::domain::tenant::TenantId;
use crate::domain::ticket::Ticket;

use super::rows::{OperationRow, operation_columns};
use super::{Db, WriteTransaction, is_lock_timeout, on_db};

/// What the claim found.
pub(crate) enum Claim {
    /// The key was free: the record and the ticket are committed.
    Placed,
    /// The key was already recorded (possibly by an attempt we waited for).
    Taken(OperationRecord),
    /// Another attempt held the key (or, on SQLite, the write lock) past the
    /// wait bound. Nothing was written.
    Busy,
    /// The claim lost to a row that was gone by the time we read it (a
    /// retention sweep between the two statements). Nothing was written.
    Vanished,
}

/// Claims (tenant, action, key): the statement that decides placement.
pub(crate) const CLAIM: &str = "INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, \
     fingerprint, state, ticket_id, result_snapshot, created_at, retained_until) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (tenant_id, action, operation_key) DO NOTHING";

/// Inserts the ticket, in the claim's transaction.
pub(crate) const INSERT_TICKET: &str = "INSERT INTO tickets \
     (id, tenant_id, project_id, title, description, priority, status, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

/// Reads an operation record by its primary key.
pub(crate) const SELECT_OPERATION: &str = concat!(
    "SELECT ",
    operation_columns!(),
    " FROM operations WHERE tenant_id = $1 AND action = $2 AND operation_key = $3"
);

/// Claims `record`'s (tenant, action, key) and inserts `ticket`, in one
/// transaction.
///
/// Why one transaction: the record and the ticket must commit together or
/// not at all. A crash between two transactions would leave a ticket without
/// a record (the retry duplicates it) or a record without a ticket (the
/// retry replays a ticket that does not exist).
///
/// Why the claim comes first and is an `INSERT … ON CONFLICT DO NOTHING`:
/// the unique key decides who placed the operation. A concurrent attempt with
/// the same key blocks on that index until the first commits (PostgreSQL) or
/// cannot start before it commits (SQLite), then finds the row. Checking for
/// the row before inserting would let two attempts both see "free".
pub(crate) async fn claim_and_create(
    db: &Db,
    wait: Duration,
    record: &OperationRecord,
    ticket: &Ticket,
) -> Result<Claim, KitchenError> {
    on_db!(db, pool => {
        let mut tx = match WriteTransaction::begin_write(pool, wait).await {
            Ok(tx) => tx,
            Err(e) if is_lock_timeout(&e) => return Ok(Claim::Busy),
            Err(e) => return Err(e.into()),
        };
        let claimed = sqlx::query(CLAIM)
            .bind(record.tenant_id.as_uuid())
            .bind(record.action.as_str())
            .bind(record.key.as_str())
            .bind(record.fingerprint.version())
            .bind(record.fingerprint.hex())
            .bind(record.state.as_str())
            .bind(record.ticket_id.map(|id| id.as_uuid()))
            .bind(record.result.as_ref().map(|r| r.as_str()))
            .bind(record.created_at)
            .bind(record.retained_until)
            .execute(&mut *tx)
            .await;
        match claimed {
            Ok(done) if done.rows_affected() == 1 => {
                sqlx::query(INSERT_TICKET)
                    .bind(ticket.id.as_uuid())
                    .bind(record.tenant_id.as_uuid())
                    .bind(ticket.project_id.as_str())
                    .bind(ticket.title.as_str())
                    .bind(ticket.description.as_ref().map(|d| d.as_str()))
                    .bind(ticket.priority.as_str())
                    .bind(ticket.status.as_str())
                    .bind(ticket.created_at)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                #[cfg(feature = "fault-injection")]
                crate::faults::after_commit(&record.key);
                Ok(Claim::Placed)
            }
            Ok(_) => {
                let existing = sqlx::query_as::<_, OperationRow>(SELECT_OPERATION)
                    .bind(record.tenant_id.as_uuid())
                    .bind(record.action.as_str())
                    .bind(record.key.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
                tx.rollback().await?;
                match existing {
                    Some(row) => Ok(Claim::Taken(row.try_into()?)),
                    None => Ok(Claim::Vanished),
                }
            }
            Err(e) if is_lock_timeout(&e) => Ok(Claim::Busy),
            Err(e) => Err(e.into()),
        }
    })
}

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
