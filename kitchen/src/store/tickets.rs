//! Ticket reads. Every query is scoped by tenant: another tenant's ticket is
//! simply not found.

use crate::KitchenError;
use crate::domain::tenant::TenantId;
use crate::domain::ticket::{ProjectId, Ticket, TicketId};

use super::rows::{TicketRow, ticket_columns};
use super::{Db, on_db};

const SELECT_TICKET: &str = concat!(
    "SELECT ",
    ticket_columns!(),
    " FROM tickets WHERE tenant_id = $1 AND id = $2"
);

// Newest first by id (UUID v7 sorts by creation time); the cursor is the last
// id of the previous page. Served by the (tenant_id[, project_id], id DESC)
// indexes.
const LIST_TICKETS: &str = concat!(
    "SELECT ",
    ticket_columns!(),
    " FROM tickets WHERE tenant_id = $1 AND ($2 IS NULL OR id < $2) \
     ORDER BY id DESC LIMIT $3"
);

const LIST_PROJECT_TICKETS: &str = concat!(
    "SELECT ",
    ticket_columns!(),
    " FROM tickets WHERE tenant_id = $1 AND ($2 IS NULL OR id < $2) AND project_id = $4 \
     ORDER BY id DESC LIMIT $3"
);

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

/// Up to `limit` tickets older than `before`, newest first.
pub(crate) async fn list(
    db: &Db,
    tenant: TenantId,
    project: Option<&ProjectId>,
    before: Option<TicketId>,
    limit: u32,
) -> Result<Vec<Ticket>, KitchenError> {
    let sql = if project.is_some() {
        LIST_PROJECT_TICKETS
    } else {
        LIST_TICKETS
    };
    let rows = on_db!(db, pool => {
        let query = sqlx::query_as::<_, TicketRow>(sql)
            .bind(tenant.as_uuid())
            .bind(before.map(|id| id.as_uuid()))
            .bind(i64::from(limit));
        match project {
            Some(project) => query.bind(project.as_str()),
            None => query,
        }
        .fetch_all(pool)
        .await?
    });
    rows.into_iter().map(TryInto::try_into).collect()
}
