//! The create transaction and operation lookups.

use std::time::Duration;

use crate::KitchenError;
use crate::domain::action::Action;
use crate::domain::operation::{OperationKey, OperationRecord};
use crate::domain::tenant::TenantId;
use crate::domain::ticket::Ticket;

use sqlx::{Pool, Postgres, Sqlite};

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

/// PostgreSQL's create: the claim and, only if it inserted, the ticket, in
/// one statement (so in one transaction). The ticket's id is the one the
/// claim recorded.
pub(crate) const CLAIM_AND_INSERT_TICKET_POSTGRES: &str = "WITH claim AS (\
     INSERT INTO operations (tenant_id, action, operation_key, fingerprint_version, \
     fingerprint, state, ticket_id, result_snapshot, created_at, retained_until) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
     ON CONFLICT (tenant_id, action, operation_key) DO NOTHING RETURNING ticket_id) \
     INSERT INTO tickets (id, tenant_id, project_id, title, description, priority, status, created_at) \
     SELECT claim.ticket_id, $1, $11, $12, $13, $14, $15, $16 FROM claim";

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

/// Binds a record's claim parameters, `$1` to `$10` of [`CLAIM`] and of
/// [`CLAIM_AND_INSERT_TICKET_POSTGRES`], on either driver.
macro_rules! bind_claim {
    ($query:expr, $record:expr) => {
        $query
            .bind($record.tenant_id.as_uuid())
            .bind($record.action.as_str())
            .bind($record.key.as_str())
            .bind($record.fingerprint.version())
            .bind($record.fingerprint.hex())
            .bind($record.state.as_str())
            .bind($record.ticket_id.map(|id| id.as_uuid()))
            .bind($record.result.as_ref().map(|r| r.as_str()))
            .bind($record.created_at)
            .bind($record.retained_until)
    };
}
pub(crate) use bind_claim;

/// Binds a ticket's own fields (project, title, description, priority,
/// status, created_at) as the next six parameters.
macro_rules! bind_ticket_fields {
    ($query:expr, $ticket:expr) => {
        $query
            .bind($ticket.project_id.as_str())
            .bind($ticket.title.as_str())
            .bind($ticket.description.as_ref().map(|d| d.as_str()))
            .bind($ticket.priority.as_str())
            .bind($ticket.status.as_str())
            .bind($ticket.created_at)
    };
}
pub(crate) use bind_ticket_fields;

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
    let placed = match db {
        Db::Sqlite(pool) => claim_in_transaction(pool, wait, record, ticket).await,
        Db::Postgres(pool) => claim_in_one_statement(pool, record, ticket).await,
    };
    match placed {
        Ok(true) => Ok(Claim::Placed),
        Ok(false) => match find(db, record.tenant_id, record.action, &record.key).await? {
            Some(existing) => Ok(Claim::Taken(existing)),
            None => Ok(Claim::Vanished),
        },
        Err(e) if is_lock_timeout(&e) => Ok(Claim::Busy),
        Err(e) => Err(e.into()),
    }
}

/// SQLite: claim and ticket in a `BEGIN IMMEDIATE` transaction. `true` when
/// this attempt placed the operation.
async fn claim_in_transaction(
    pool: &Pool<Sqlite>,
    wait: Duration,
    record: &OperationRecord,
    ticket: &Ticket,
) -> sqlx::Result<bool> {
    let mut tx = WriteTransaction::begin_write(pool, wait).await?;
    let claimed = bind_claim!(sqlx::query(CLAIM), record)
        .execute(&mut *tx)
        .await?;
    if claimed.rows_affected() != 1 {
        tx.rollback().await?;
        return Ok(false);
    }
    let insert = sqlx::query(INSERT_TICKET)
        .bind(ticket.id.as_uuid())
        .bind(record.tenant_id.as_uuid());
    bind_ticket_fields!(insert, ticket)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    #[cfg(feature = "fault-injection")]
    crate::faults::after_commit(&record.key);
    Ok(true)
}

/// PostgreSQL: the claim and the ticket insert as one statement, which is
/// one transaction of its own. Same decision, same unique index doing the
/// waiting (the connection's `lock_timeout` bounds it), but one round trip
/// instead of five (BEGIN, two INSERTs, COMMIT): on a network database the
/// round trips, not the work, bound a create. `true` when this attempt
/// placed the operation.
async fn claim_in_one_statement(
    pool: &Pool<Postgres>,
    record: &OperationRecord,
    ticket: &Ticket,
) -> sqlx::Result<bool> {
    let done = bind_ticket_fields!(
        bind_claim!(sqlx::query(CLAIM_AND_INSERT_TICKET_POSTGRES), record),
        ticket
    )
    .execute(pool)
    .await?;
    #[cfg(feature = "fault-injection")]
    if done.rows_affected() == 1 {
        crate::faults::after_commit(&record.key);
    }
    Ok(done.rows_affected() == 1)
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
