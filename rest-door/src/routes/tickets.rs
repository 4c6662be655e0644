//! `POST /v1/tickets`, `GET /v1/tickets/{id}`, `PATCH /v1/tickets/{id}`,
//! `GET /v1/tickets`.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, header};
use kitchen::{
    Action, Actor, Caller, Kitchen, TicketDraft, TicketFilter, TicketId, TicketPatch, TicketUpdate,
};
use serde::{Deserialize, Serialize};
use telemetry::Metrics;
use utoipa::{IntoParams, ToSchema};

use crate::error::RestError;
use crate::idempotency_key::IdempotencyKeyHeader;
use crate::json_body;
use crate::problem::Problem;
use crate::routes::pages;
use crate::routes::writes::{self, OutcomeUnknown, WriteRequest};
use crate::schema::{CreateTicketRequest, TicketBody, TicketPatchRequest};
use crate::versions::{self, IfMatchHeader};

/// The ticket a path names: a path that is not a ticket id is answered
/// exactly as an id the tenant has no ticket for.
pub(crate) fn ticket_id(raw: &str) -> Result<TicketId, RestError> {
    raw.parse().map_err(|_| RestError::ticket_not_found(raw))
}

/// Create a ticket, at most once per Idempotency-Key.
///
/// The first request with a key creates the ticket. Any later request with
/// the same key and the same body gets the original answer again (same
/// status, same body bytes, same Location and ETag) plus
/// `Idempotent-Replayed: true`, and creates nothing. The same key with a
/// different body is refused. Past the key's replay window (every answer
/// says until when in `Idempotency-Replayable-Until`) the first answer is no
/// longer kept: the same request then answers `200` with the ticket as it is
/// now and `Idempotent-Replayed: expired`, and still creates nothing.
#[utoipa::path(
    post,
    path = "/v1/tickets",
    operation_id = "create_ticket",
    tag = "tickets",
    params(IdempotencyKeyHeader),
    request_body(content = CreateTicketRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The same request with a key past its replay window (`Idempotent-Replayed: expired`): the first request created the ticket and nothing new was created. The first answer is no longer kept, so the body is the ticket as it is now (as GET shows it), `Location` its address and `ETag` its version now. Do not retry with a new key: that would create a second ticket.", body = TicketBody,
            headers(
                ("Location" = String, description = "The ticket the first request created: /v1/tickets/{id}"),
                ("ETag" = String, description = "The ticket's version now"),
                ("Idempotent-Replayed" = String, description = "`expired`"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replayed the first answer (RFC 3339, now in the past). See the API description."),
            )),
        (status = 201, description = "Created, or replayed (then `Idempotent-Replayed: true` is set and the body is byte-identical to the first answer). A replay within the key's replay window is a `201` too, never a `200`.", body = TicketBody,
            headers(
                ("Location" = String, description = "The ticket: /v1/tickets/{id}"),
                ("ETag" = String, description = "The ticket's version, a strong tag (`\"1\"`): what `If-Match` takes"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of the first one; `expired` when the key's replay window is over (the body is then the resource as it is now, and nothing new was made)"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            ),
            links(("GetTicket" = (operation_id = "get_ticket", parameters(("id" = "$response.body#/id")), description = "The ticket just created (or replayed)")))),
        (status = 202, description = "With a ticket provider: its answer was lost, so the ticket may or may not exist; the service is reconciling. Retry the same request with the same key, or GET the Location. Never use a new key for this ticket.", body = OutcomeUnknown,
            headers(
                ("Location" = String, description = "The operation's status resource"),
                ("Retry-After" = u64, description = "Seconds to wait before asking again"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), the body not JSON (`malformed-json`) or of the wrong shape (`invalid-body`), fields invalid (`validation-failed`; `errors` lists each), a precondition header sent (`If-Match`, `If-None-Match`, `If-Unmodified-Since`: a create needs none, its key already makes it happen once) or a header the server needs once sent twice or malformed (`bad-request`). Nothing created, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json",
            headers(("WWW-Authenticate" = String, description = "Bearer"))),
        (status = 409, description = "An earlier attempt with this key is still running. Retry the same request later.", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 413, description = "Body over 64 KiB (after gzip decoding). It is refused before the key is read. Nothing created, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not application/json (`unsupported-media-type`), or compressed with a Content-Encoding other than gzip (`unsupported-content-encoding`). Nothing created, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request (`original_operation` links its status resource), or the ticket provider refused the ticket (`provider-rejected`; the key is not used up). Nothing created.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Link" = String, description = "<status resource>; rel=\"original\""),
                ("Idempotency-Replayable-Until" = String, description = "The replay horizon of the operation that owns the key (RFC 3339): for a reused key, the original operation's"),
            )),
        (status = 500, description = "Something failed on our side (`internal`; logged). The outcome is unknown: retry the same request with the same key, or GET the operation by key.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the ticket provider could not be reached (`provider-unavailable`): nothing was sent or created and the key is not used up; retry after Retry-After seconds. Or the database cannot be used right now (`database-unavailable`): detail says whether anything was written (nearly always nothing); retry with the same key after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Retry-After" = u64, description = "Seconds to wait (`provider-unavailable`)"),
                ("Idempotency-Replayable-Until" = String, description = "The operation's replay horizon (RFC 3339; `provider-unavailable` only)"),
            )),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn create(
    State(kitchen): State<Kitchen>,
    State(metrics): State<Metrics>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    let action = Action::CreateTicket;
    let request = WriteRequest {
        metrics: &metrics,
        caller: &caller,
        headers: &headers,
        action,
    };
    let (kitchen, caller, headers) = (&kitchen, &caller, &headers);
    writes::attempt(
        request,
        |key| async move {
            let request: CreateTicketRequest = json_body::parse(headers, body, action)?;
            let draft = TicketDraft::from(request);
            Ok(kitchen
                .create_ticket(Actor::from(caller), &key, &draft)
                .await?)
        },
        writes::ticket_created,
    )
    .await
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
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json",
            headers(("WWW-Authenticate" = String, description = "Bearer"))),
        (status = 404, description = "No such ticket for this tenant.", body = Problem, content_type = "application/problem+json"),
        (status = 500, description = "Something failed on our side (`internal`; logged). Retry.", body = Problem, content_type = "application/problem+json"),
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

/// Change a ticket's title, description, priority or assignee, at most once
/// per Idempotency-Key.
///
/// The body is a JSON merge patch: a field left out is kept, `null`
/// removes it (`description`, `assignee`), a value replaces it. With
/// `If-Match`, the change is made only if the ticket is still at that
/// version. The answer is the ticket as the change left it, with its
/// `ETag`. A retry with the same key and body gets that same answer again
/// (`Idempotent-Replayed: true`), even if the ticket changed since, and
/// changes nothing. A patch that changes nothing still uses its key. Past
/// the key's replay window (`Idempotency-Replayable-Until`) the same request
/// answers the ticket as it is now with `Idempotent-Replayed: expired`, and
/// still changes nothing.
#[utoipa::path(
    patch,
    path = "/v1/tickets/{id}",
    operation_id = "update_ticket",
    tag = "tickets",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        IdempotencyKeyHeader,
        IfMatchHeader,
    ),
    request_body(content(
        (TicketPatchRequest = "application/merge-patch+json"),
        (TicketPatchRequest = "application/json"),
    )),
    responses(
        (status = 200, description = "Changed, or replayed (then `Idempotent-Replayed: true` is set and the body and ETag are the first answer's, byte for byte). Or the same request with a key past its replay window (`Idempotent-Replayed: expired`): the first request made the change and nothing was changed now; the body and ETag are the ticket as it is now, `Location` its address.", body = TicketBody,
            headers(
                ("ETag" = String, description = "The ticket's version after the change (`\"4\"`); with `Idempotent-Replayed: expired`, its version now"),
                ("Location" = String, description = "With `Idempotent-Replayed: expired` only: the ticket, /v1/tickets/{id}"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of the first one; `expired` when the key's replay window is over (the body is then the resource as it is now, and nothing new was made)"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 202, description = "With a ticket provider: its answer was lost, so the change may or may not have been made there; the service is reconciling. Retry the same request with the same key, or GET the Location. Never use a new key for this change.", body = OutcomeUnknown,
            headers(
                ("Location" = String, description = "The operation's status resource"),
                ("Retry-After" = u64, description = "Seconds to wait before asking again"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), If-Match malformed, `If-None-Match` or `If-Unmodified-Since` sent (refused: use If-Match), or a header the server needs once sent twice (`bad-request`), the body not JSON (`malformed-json`), not an object or with a field of the wrong type or unknown (`invalid-body`, naming it), or fields invalid (`validation-failed`; e.g. `title: null` is `not_removable`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json",
            headers(("WWW-Authenticate" = String, description = "Bearer"))),
        (status = 404, description = "No such ticket for this tenant (`not-found`, as a GET would say). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An earlier attempt with this key is still running (`operation-in-progress`). Retry the same request later. Or, with a ticket provider, the ticket was made before this deployment kept its tickets there and exists only here (`ticket-not-at-provider`; nothing changed, key not used).", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 412, description = "If-Match named another version than the ticket's (`version-mismatch`; `expected_version`, `current_version`): someone changed it. Nothing changed, key not used: GET it, decide again.", body = Problem, content_type = "application/problem+json"),
        (status = 413, description = "Body over 64 KiB (after gzip decoding). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is neither application/merge-patch+json nor application/json (`unsupported-media-type`), or compressed with a Content-Encoding other than gzip (`unsupported-content-encoding`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request (`idempotency-key-reused`; `original_operation` links its status resource). Nothing changed. Or the ticket provider refused the write (`provider-rejected`: an invalid field, a ticket it does not have, another version, a move its workflow forbids; its words in `detail`): nothing changed, the key is not used up.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Link" = String, description = "<status resource>; rel=\"original\""),
                ("Idempotency-Replayable-Until" = String, description = "For a reused key: the replay horizon of the original operation, the one that owns the key (RFC 3339)"),
            )),
        (status = 500, description = "Something failed on our side (`internal`; logged). The outcome is unknown: retry the same request with the same key, or GET the operation by key.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the ticket provider could not be reached (`provider-unavailable`): nothing was sent, nothing changed, and the key is not used up; retry after Retry-After seconds. Or the database cannot be used right now (`database-unavailable`): detail says whether anything was written (nearly always nothing); retry with the same key after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Retry-After" = u64, description = "Seconds to wait (`provider-unavailable`)"),
                ("Idempotency-Replayable-Until" = String, description = "The operation's replay horizon (RFC 3339; `provider-unavailable` only)"),
            )),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn update(
    State(kitchen): State<Kitchen>,
    State(metrics): State<Metrics>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    let action = Action::UpdateTicket;
    let request = WriteRequest {
        metrics: &metrics,
        caller: &caller,
        headers: &headers,
        action,
    };
    let (kitchen, caller, headers) = (&kitchen, &caller, &headers);
    writes::attempt(
        request,
        |key| async move {
            let expected_version = versions::expected_version(headers)?;
            // Straight into the kitchen's patch: it knows "left out" from
            // `null`, and refuses unknown fields by name.
            let patch: TicketPatch =
                json_body::parse_as(headers, body, action, json_body::MERGE_PATCH)?;
            let update = TicketUpdate {
                ticket_id: ticket_id(&id)?,
                expected_version,
                patch,
            };
            Ok(kitchen
                .update_ticket(Actor::from(caller), &key, &update)
                .await?)
        },
        writes::ticket_changed,
    )
    .await
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
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json",
            headers(("WWW-Authenticate" = String, description = "Bearer"))),
        (status = 500, description = "Something failed on our side (`internal`; logged). Retry.", body = Problem, content_type = "application/problem+json"),
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
