//! Ticket history: appended inside a write's transaction, read per ticket.

use uuid::Uuid;

use crate::KitchenError;
use crate::domain::history::HistoryEntry;
use crate::domain::tenant::TenantId;
use crate::domain::ticket::TicketId;

use super::rows::HistoryRow;
use super::shared_text::{Stored, shared_description};
use super::write::{WriteTx, on_tx};
use super::{Db, on_db};

/// Appends one entry.
pub(crate) const INSERT_HISTORY: &str = "INSERT INTO ticket_history \
     (id, tenant_id, ticket_id, action, operation_key, actor_token_id, changes, version, recorded_at, \
     changes_tail) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";

/// Oldest first; the cursor is the last id of the previous page.
const LIST_HISTORY: &str = concat!(
    "SELECT id, ticket_id, action, operation_key, actor_token_id, changes, changes_tail, \
     version, recorded_at, ",
    shared_description!("ticket_history", "changes_tail"),
    " FROM ticket_history \
     WHERE tenant_id = $1 AND ticket_id = $2 AND ($3 IS NULL OR id > $3) ORDER BY id LIMIT $4"
);

/// Binds every parameter of [`INSERT_HISTORY`], on either driver.
/// `$changes` is the entry's changes as stored (`shared_text::Stored`).
macro_rules! bind_history {
    ($query:expr, $tenant:expr, $entry:expr, $changes:expr) => {
        $query
            .bind($entry.id)
            .bind($tenant.as_uuid())
            .bind($entry.ticket_id.as_uuid())
            .bind($entry.action.as_str())
            .bind($entry.operation_key.as_str())
            .bind($entry.actor_token_id.map(|t| t.as_uuid()))
            .bind($changes.head)
            .bind($entry.version.get())
            .bind($entry.recorded_at)
            .bind($changes.tail)
    };
}
pub(crate) use bind_history;

/// The entry's changes as stored.
pub(crate) fn changes_json(entry: &HistoryEntry) -> Result<String, KitchenError> {
    serde_json::to_string(&entry.changes)
        .map_err(|e| KitchenError::CorruptRecord(format!("history changes: {e}")))
}

/// Appends `entry`, in the write's transaction.
pub(crate) async fn append(
    tx: &mut WriteTx,
    tenant: TenantId,
    entry: &HistoryEntry,
) -> Result<(), KitchenError> {
    insert(tx, tenant, entry, Stored::whole(&changes_json(entry)?)).await
}

/// Inserts `entry` with its changes stored as `changes`, in the write's
/// transaction.
pub(crate) async fn insert(
    tx: &mut WriteTx,
    tenant: TenantId,
    entry: &HistoryEntry,
    changes: Stored<'_>,
) -> Result<(), KitchenError> {
    on_tx!(tx, conn => bind_history!(sqlx::query(INSERT_HISTORY), tenant, entry, changes)
        .execute(conn)
        .await
        .map(drop)?);
    Ok(())
}

/// Up to `limit` entries of a ticket after `after`, oldest first.
pub(crate) async fn list(
    db: &Db,
    tenant: TenantId,
    ticket: TicketId,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Vec<HistoryEntry>, KitchenError> {
    let rows = on_db!(db, pool => {
        sqlx::query_as::<_, HistoryRow>(LIST_HISTORY)
            .bind(tenant.as_uuid())
            .bind(ticket.as_uuid())
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
    });
    rows.into_iter().map(TryInto::try_into).collect()
}
