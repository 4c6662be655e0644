//! `GET /v1/tickets/{id}/history`: every write that changed a ticket.

use axum::Extension;
use axum::extract::{Path, Query, State};
use kitchen::{Caller, Kitchen};

use crate::error::RestError;
use crate::problem::Problem;
use crate::routes::pages::PageParams;
use crate::routes::tickets::ticket_id;
use crate::schema::HistoryPageBody;

/// A ticket's history, oldest first, a page at a time: one entry per write
/// that changed it (its creation, each real update, each transition, each
/// comment), with the action, the operation key, the API token that made
/// it, what changed and the version after it. A replay adds no entry.
#[utoipa::path(
    get,
    path = "/v1/tickets/{id}/history",
    operation_id = "get_ticket_history",
    tag = "tickets",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        PageParams,
    ),
    responses(
        (status = 200, description = "A page of history entries.", body = HistoryPageBody),
        (status = 400, description = "A query parameter is not valid (`validation-failed`; `errors` lists each), a parameter is given twice, the path is not valid percent-encoded UTF-8, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such ticket for this tenant.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry. Or the database cannot be used right now (`database-unavailable`): retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn list(
    State(kitchen): State<Kitchen>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    Query(params): Query<PageParams>,
) -> Result<axum::Json<HistoryPageBody>, RestError> {
    let ticket = ticket_id(&id)?;
    let mut violations = Vec::new();
    let (size, cursor) = params.read(&mut violations);
    if !violations.is_empty() {
        return Err(RestError::Validation(violations));
    }
    let page = kitchen
        .ticket_history(caller.tenant.id, ticket, size, cursor)
        .await?
        .ok_or_else(|| RestError::ticket_not_found(ticket))?;
    Ok(axum::Json(page.into()))
}
