//! Comments: inserted inside a write's transaction, read per ticket.

use uuid::Uuid;

use crate::KitchenError;
use crate::domain::comment::{Comment, CommentId};
use crate::domain::tenant::TenantId;
use crate::domain::ticket::TicketId;

use super::rows::CommentRow;
use super::write::{WriteTx, on_tx};
use super::{Db, on_db};

const INSERT_COMMENT: &str = "INSERT INTO ticket_comments \
     (id, tenant_id, ticket_id, body, created_at, provider_comment_id) \
     VALUES ($1, $2, $3, $4, $5, $6)";

const SELECT_COMMENT: &str = "SELECT id, ticket_id, body, created_at, provider_comment_id FROM ticket_comments \
     WHERE tenant_id = $1 AND ticket_id = $2 AND id = $3";

/// Oldest first; the cursor is the last id of the previous page.
const LIST_COMMENTS: &str = "SELECT id, ticket_id, body, created_at, provider_comment_id FROM ticket_comments \
     WHERE tenant_id = $1 AND ticket_id = $2 AND ($3 IS NULL OR id > $3) ORDER BY id LIMIT $4";

/// Inserts `comment`, in the write's transaction.
pub(crate) async fn insert(
    tx: &mut WriteTx,
    tenant: TenantId,
    comment: &Comment,
) -> Result<(), KitchenError> {
    on_tx!(tx, conn => sqlx::query(INSERT_COMMENT)
        .bind(comment.id.as_uuid())
        .bind(tenant.as_uuid())
        .bind(comment.ticket_id.as_uuid())
        .bind(comment.body.as_str())
        .bind(comment.created_at)
        .bind(comment.provider_comment_id.as_deref())
        .execute(conn)
        .await
        .map(drop)?);
    Ok(())
}

/// One comment of one of the tenant's tickets.
pub(crate) async fn find(
    db: &Db,
    tenant: TenantId,
    ticket: TicketId,
    id: CommentId,
) -> Result<Option<Comment>, KitchenError> {
    let row = on_db!(db, pool => {
        sqlx::query_as::<_, CommentRow>(SELECT_COMMENT)
            .bind(tenant.as_uuid())
            .bind(ticket.as_uuid())
            .bind(id.as_uuid())
            .fetch_optional(pool)
            .await?
    });
    Ok(row.map(Into::into))
}

/// Up to `limit` comments of a ticket after `after`, oldest first.
pub(crate) async fn list(
    db: &Db,
    tenant: TenantId,
    ticket: TicketId,
    after: Option<Uuid>,
    limit: u32,
) -> Result<Vec<Comment>, KitchenError> {
    let rows = on_db!(db, pool => {
        sqlx::query_as::<_, CommentRow>(LIST_COMMENTS)
            .bind(tenant.as_uuid())
            .bind(ticket.as_uuid())
            .bind(after)
            .bind(i64::from(limit))
            .fetch_all(pool)
            .await?
    });
    Ok(rows.into_iter().map(Into::into).collect())
}
