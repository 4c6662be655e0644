//! `GET /v1/tickets/{id}/comments` and
//! `GET /v1/tickets/{id}/comments/{comment_id}`: a ticket's comments, read
//! (adding one is `actions/add_comment.rs`).

use axum::Extension;
use axum::extract::{Path, Query, State};
use kitchen::{Caller, CommentId, Kitchen};

use crate::error::RestError;
use crate::problem::Problem;
use crate::routes::pages::PageParams;
use crate::routes::tickets::ticket_id;
use crate::schema::{CommentBody, CommentPageBody};

/// A ticket's comments, oldest first, a page at a time.
#[utoipa::path(
    get,
    path = "/v1/tickets/{id}/comments",
    operation_id = "list_comments",
    tag = "comments",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        PageParams,
    ),
    responses(
        (status = 200, description = "A page of comments.", body = CommentPageBody),
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
) -> Result<axum::Json<CommentPageBody>, RestError> {
    let ticket = ticket_id(&id)?;
    let mut violations = Vec::new();
    let (size, cursor) = params.read(&mut violations);
    if !violations.is_empty() {
        return Err(RestError::Validation(violations));
    }
    let page = kitchen
        .list_comments(caller.tenant.id, ticket, size, cursor)
        .await?
        .ok_or_else(|| RestError::ticket_not_found(ticket))?;
    Ok(axum::Json(page.into()))
}

/// One comment on a ticket of the caller's tenant.
#[utoipa::path(
    get,
    path = "/v1/tickets/{id}/comments/{comment_id}",
    operation_id = "get_comment",
    tag = "comments",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        ("comment_id" = String, Path, description = "The comment's id (a UUID); anything else is simply not found"),
    ),
    responses(
        (status = 200, description = "The comment.", body = CommentBody),
        (status = 400, description = "The path is not valid percent-encoded UTF-8, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such comment on such a ticket for this tenant.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry. Or the database cannot be used right now (`database-unavailable`): retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn get(
    State(kitchen): State<Kitchen>,
    Extension(caller): Extension<Caller>,
    Path((id, comment_id)): Path<(String, String)>,
) -> Result<axum::Json<CommentBody>, RestError> {
    let ticket = ticket_id(&id)?;
    let not_found = || RestError::NotFound(format!("Comment {comment_id:?} on ticket {ticket}"));
    let comment_id: CommentId = comment_id.parse().map_err(|_| not_found())?;
    let comment = kitchen
        .comment(caller.tenant.id, ticket, comment_id)
        .await?
        .ok_or_else(not_found)?;
    Ok(axum::Json(comment.into()))
}
