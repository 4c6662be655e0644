//! `GET /v1/tickets/{id}` and `GET /v1/tickets`: the tickets, read. The
//! writes on a ticket are in `actions/`, one file each.

use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::header;
use kitchen::{Caller, Kitchen, TicketFilter, TicketId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::error::RestError;
use crate::problem::Problem;
use crate::routes::pages;
use crate::schema::TicketBody;
use crate::versions::{self};

/// The ticket a path names: a path that is not a ticket id is answered
/// exactly as an id the tenant has no ticket for.
pub(crate) fn ticket_id(raw: &str) -> Result<TicketId, RestError> {
    raw.parse().map_err(|_| RestError::ticket_not_found(raw))
}

/// One ticket of the caller's tenant, with its version as `ETag`.
#[utoipa::path(
    get,
    path = "/v1/tickets/{id}",
    operation_id = "get_ticket",
    tag = "tickets",
    params(("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found")),
    responses(
        (status = 200, description = "The ticket.", body = TicketBody,
            headers(("ETag" = String, description = "The ticket's version, a strong tag (`\"3\"`): send it as `If-Match` to change the ticket only if nobody else did meanwhile"))),
        (status = 400, description = "The path is not valid percent-encoded UTF-8, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such ticket for this tenant.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry. Or the database cannot be used right now (`database-unavailable`): retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn get(
    State(kitchen): State<Kitchen>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<Response, RestError> {
    let ticket_id = ticket_id(&id)?;
    let ticket = kitchen
        .ticket(caller.tenant.id, ticket_id)
        .await?
        .ok_or_else(|| RestError::ticket_not_found(ticket_id))?;
    let etag = versions::etag(ticket.version);
    Ok(([(header::ETAG, etag)], axum::Json(TicketBody::from(ticket))).into_response())
}

/// Query of `GET /v1/tickets`. Every value is read as text so that each bad
/// one is reported by name.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Only tickets of this project (a project slug).
    #[param(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$")]
    project_id: Option<String>,
    /// Only tickets carrying this label.
    #[param(pattern = "^[a-z0-9-]{1,50}$")]
    label: Option<String>,
    /// How many tickets a page holds.
    #[param(schema_with = crate::schema::limit_schema)]
    limit: Option<String>,
    /// `next_cursor` of the previous page (a UUID). Empty means none: the
    /// first page.
    #[param(
        pattern = "^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})?$"
    )]
    cursor: Option<String>,
}

/// A page of tickets, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct TicketList {
    /// The tickets.
    tickets: Vec<TicketBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    next_cursor: Option<String>,
}

/// The caller's tickets, newest first, a page at a time.
#[utoipa::path(
    get,
    path = "/v1/tickets",
    operation_id = "list_tickets",
    tag = "tickets",
    params(ListParams),
    responses(
        (status = 200, description = "A page of tickets.", body = TicketList),
        (status = 400, description = "A query parameter is not valid (`validation-failed`; `errors` lists each), a parameter is given twice, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry. Or the database cannot be used right now (`database-unavailable`): retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn list(
    State(kitchen): State<Kitchen>,
    Extension(caller): Extension<Caller>,
    Query(params): Query<ListParams>,
) -> Result<axum::Json<TicketList>, RestError> {
    let mut violations = Vec::new();
    let filter = TicketFilter::parse(params.project_id, params.label, &mut violations);
    let (size, cursor) = pages::read(params.limit, params.cursor, &mut violations);
    if !violations.is_empty() {
        return Err(RestError::Validation(violations));
    }
    let page = kitchen
        .list_tickets(caller.tenant.id, &filter, size, cursor)
        .await?;
    Ok(axum::Json(TicketList {
        tickets: page.tickets.into_iter().map(TicketBody::from).collect(),
        next_cursor: page.next_cursor.map(|c| c.to_string()),
    }))
}
