//! Tickets. Every query is scoped by tenant: another tenant's ticket is
//! simply not found. Reads run on the pool; writes take part in a
//! [`WriteTx`].

use crate::KitchenError;
use crate::domain::label::Labels;
use crate::domain::page::TicketFilter;
use crate::domain::tenant::TenantId;
use crate::domain::ticket::{Description, Ticket, TicketId};

use super::rows::{TicketRow, ticket_columns};
use super::shared_text;
use super::write::{WriteTx, on_tx};
use super::{Db, on_db};

const SELECT_TICKET: &str = concat!(
    "SELECT ",
    ticket_columns!(),
    " FROM tickets WHERE tenant_id = $1 AND id = $2"
);

/// PostgreSQL: the same, holding the row until the transaction ends, so a
/// concurrent update of the same ticket waits and then sees this one's
/// result (its version check is then against the new version). SQLite needs
/// no row lock: a write transaction holds the whole database.
const SELECT_TICKET_FOR_UPDATE: &str = concat!(
    "SELECT ",
    ticket_columns!(),
    " FROM tickets WHERE tenant_id = $1 AND id = $2 FOR UPDATE"
);

// Newest first by id (UUID v7 sorts by creation time); the cursor is the last
// id of the previous page. Served by the (tenant_id[, project_id], id DESC)
// indexes; a label ($4, a `LIKE` pattern, see `Labels::stored_pattern`)
// filters the rows that scan reads.
const LIST_TICKETS: &str = concat!(
    "SELECT ",
    ticket_columns!(),
    " FROM tickets WHERE tenant_id = $1 AND ($2 IS NULL OR id < $2) \
     AND ($4 IS NULL OR labels LIKE $4) \
     ORDER BY id DESC LIMIT $3"
);

const LIST_PROJECT_TICKETS: &str = concat!(
    "SELECT ",
    ticket_columns!(),
    " FROM tickets WHERE tenant_id = $1 AND ($2 IS NULL OR id < $2) AND project_id = $5 \
     AND ($4 IS NULL OR labels LIKE $4) \
     ORDER BY id DESC LIMIT $3"
);

/// Inserts a ticket, with every column a ticket has.
pub(crate) const INSERT_TICKET: &str = "INSERT INTO tickets \
     (id, tenant_id, project_id, title, description, priority, status, created_at, \
     provider_ticket_id, assignee, version, updated_at, labels) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/// Writes back the fields a write may change.
const SAVE_TICKET: &str = "UPDATE tickets SET title = $3, description = $4, priority = $5, \
     status = $6, assignee = $7, version = $8, updated_at = $9, labels = $10 \
     WHERE tenant_id = $1 AND id = $2";

/// Binds every parameter of [`INSERT_TICKET`], on either driver.
macro_rules! bind_insert_ticket {
    ($query:expr, $tenant:expr, $ticket:expr) => {
        $query
            .bind($ticket.id.as_uuid())
            .bind($tenant.as_uuid())
            .bind($ticket.project_id.as_str())
            .bind($ticket.title.as_str())
            .bind($ticket.description.as_ref().map(|d| d.as_str()))
            .bind($ticket.priority.as_str())
            .bind($ticket.status.as_str())
            .bind($ticket.created_at)
            .bind($ticket.provider_ticket_id.as_deref())
            .bind($ticket.assignee.as_ref().map(|a| a.as_str()))
            .bind($ticket.version.get())
            .bind($ticket.updated_at)
            .bind($ticket.labels.to_stored())
    };
}
pub(crate) use bind_insert_ticket;

pub(crate) async fn find(
    db: &Db,
    tenant: TenantId,
    id: TicketId,
) -> Result<Option<Ticket>, KitchenError> {
    let row = on_db!(db, pool => {
        sqlx::query_as::<_, TicketRow>(SELECT_TICKET)
            .bind(tenant.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(pool)
            .await?
    });
    row.map(TryInto::try_into).transpose()
}

/// Up to `limit` tickets older than `before` that `filter` lets through,
/// newest first.
pub(crate) async fn list(
    db: &Db,
    tenant: TenantId,
    filter: &TicketFilter,
    before: Option<uuid::Uuid>,
    limit: u32,
) -> Result<Vec<Ticket>, KitchenError> {
    let project = filter.project.as_ref();
    let sql = if project.is_some() {
        LIST_PROJECT_TICKETS
    } else {
        LIST_TICKETS
    };
    let label = filter.label.as_ref().map(Labels::stored_pattern);
    let rows = on_db!(db, pool => {
        let query = sqlx::query_as::<_, TicketRow>(sql)
            .bind(tenant.as_uuid())
            .bind(before)
            .bind(i64::from(limit))
            .bind(label.as_deref());
        match project {
            Some(project) => query.bind(project.as_str()),
            None => query,
        }
        .fetch_all(pool)
        .await?
    });
    rows.into_iter().map(TryInto::try_into).collect()
}

/// Inserts `ticket` for `tenant`, in the write's transaction.
pub(crate) async fn insert(
    tx: &mut WriteTx,
    tenant: TenantId,
    ticket: &Ticket,
) -> Result<(), KitchenError> {
    on_tx!(tx, conn => bind_insert_ticket!(sqlx::query(INSERT_TICKET), tenant, ticket)
        .execute(conn)
        .await
        .map(drop)?);
    Ok(())
}

/// The ticket, locked for the rest of the write's transaction; `None` when
/// the tenant has no such ticket.
pub(crate) async fn lock(
    tx: &mut WriteTx,
    tenant: TenantId,
    id: TicketId,
) -> Result<Option<Ticket>, KitchenError> {
    let row = match tx {
        WriteTx::Sqlite(t) => {
            sqlx::query_as::<_, TicketRow>(SELECT_TICKET)
                .bind(tenant.as_uuid())
                .bind(id.as_uuid())
                .fetch_optional(&mut **t)
                .await?
        }
        WriteTx::Postgres(t) => {
            sqlx::query_as::<_, TicketRow>(SELECT_TICKET_FOR_UPDATE)
                .bind(tenant.as_uuid())
                .bind(id.as_uuid())
                .fetch_optional(&mut **t)
                .await?
        }
    };
    row.map(TryInto::try_into).transpose()
}

/// Writes back `ticket`, changed from `was` (read with [`lock`]). When its
/// description changes, the rows that share the old one get their copy
/// first (`shared_text.rs`).
pub(crate) async fn save(
    tx: &mut WriteTx,
    tenant: TenantId,
    was: &Ticket,
    ticket: &Ticket,
) -> Result<(), KitchenError> {
    if was.description != ticket.description {
        unshare(tx, tenant, was.id, was.description.as_ref()).await?;
    }
    on_tx!(tx, conn => sqlx::query(SAVE_TICKET)
        .bind(tenant.as_uuid())
        .bind(ticket.id.as_uuid())
        .bind(ticket.title.as_str())
        .bind(ticket.description.as_ref().map(|d| d.as_str()))
        .bind(ticket.priority.as_str())
        .bind(ticket.status.as_str())
        .bind(ticket.assignee.as_ref().map(|a| a.as_str()))
        .bind(ticket.version.get())
        .bind(ticket.updated_at)
        .bind(ticket.labels.to_stored())
        .execute(conn)
        .await
        .map(drop)?);
    Ok(())
}

/// Before ticket `ticket`'s description changes from `was`: every row that
/// shares it (`shared_text.rs`) gets its own copy.
async fn unshare(
    tx: &mut WriteTx,
    tenant: TenantId,
    ticket: TicketId,
    was: Option<&Description>,
) -> Result<(), KitchenError> {
    let Some(was) = was else {
        // No description: nothing can share it (a row is only cut around
        // a description that exists).
        return Ok(());
    };
    let text = shared_text::as_json(was.as_str());
    for statement in [shared_text::UNSHARE_HISTORY, shared_text::UNSHARE_RECORDS] {
        on_tx!(tx, conn => sqlx::query(statement)
            .bind(tenant.as_uuid())
            .bind(ticket.as_uuid())
            .bind(text.as_str())
            .execute(conn)
            .await
            .map(drop)?);
    }
    Ok(())
}
