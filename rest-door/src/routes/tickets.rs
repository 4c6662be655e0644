//! `POST /v1/tickets`, `GET /v1/tickets/{id}`, `GET /v1/tickets`.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use kitchen::{
    Action, Cursor, FieldViolation, Kitchen, NotCreatedReason, OperationRef, OperationState,
    Outcome, PageSize, ProjectId, Receipt, Tenant, TicketDraft,
};
use serde::{Deserialize, Serialize};
use telemetry::{Attempt, Door, Metrics};
use tracing::Instrument;
use utoipa::{IntoParams, ToSchema};

use crate::error::RestError;
use crate::problem::Problem;
use crate::schema::{CreateTicketRequest, TicketBody};
use crate::{idempotency_key, json_body, links};

/// Response header that marks a replayed answer.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Create a ticket, at most once per Idempotency-Key.
///
/// The first request with a key creates the ticket. Any later request with
/// the same key and the same body gets the original answer again (same
/// status, same body bytes, same Location) plus `Idempotent-Replayed: true`,
/// and creates nothing. The same key with a different body is refused.
#[utoipa::path(
    post,
    path = "/v1/tickets",
    operation_id = "create_ticket",
    tag = "tickets",
    params(idempotency_key::IdempotencyKeyHeader),
    request_body(content = CreateTicketRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "Created, or replayed (then `Idempotent-Replayed: true` is set and the body is byte-identical to the first answer). A replay is a `201` too, never a `200`.", body = TicketBody,
            headers(
                ("Location" = String, description = "The ticket: /v1/tickets/{id}"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of an earlier one"),
            ),
            links(("GetTicket" = (operation_id = "get_ticket", parameters(("id" = "$response.body#/id")), description = "The ticket just created (or replayed)")))),
        (status = 202, description = "With a ticket provider: its answer was lost, so the ticket may or may not exist; the service is reconciling. Retry the same request with the same key, or GET the Location. Never use a new key for this ticket.", body = OutcomeUnknown,
            headers(
                ("Location" = String, description = "The operation's status resource"),
                ("Retry-After" = u64, description = "Seconds to wait before asking again"),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), the body not JSON (`malformed-json`) or of the wrong shape (`invalid-body`), fields invalid (`validation-failed`; `errors` lists each), or a header the server needs once sent twice or malformed (`bad-request`). Nothing created, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json",
            headers(("WWW-Authenticate" = String, description = "Bearer"))),
        (status = 409, description = "An earlier attempt with this key is still running. Retry the same request later.", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 413, description = "Body over 64 KiB (after gzip decoding). It is refused before the key is read. Nothing created, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 415, description = "Body is not application/json (`unsupported-media-type`), or compressed with a Content-Encoding other than gzip (`unsupported-content-encoding`). Nothing created, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request (`original_operation` links its status resource), or the ticket provider refused the ticket (`provider-rejected`; the key is not used up). Nothing created.", body = Problem, content_type = "application/problem+json",
            headers(("Link" = String, description = "<status resource>; rel=\"original\""))),
        (status = 500, description = "Something failed on our side (`internal`; logged). The outcome is unknown: retry the same request with the same key, or GET the operation by key.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the ticket provider could not be reached (`provider-unavailable`): nothing was sent or created and the key is not used up; retry after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait (`provider-unavailable`)"))),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn create(
    State(kitchen): State<Kitchen>,
    State(metrics): State<Metrics>,
    Extension(tenant): Extension<Tenant>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let attempt = Attempt::start(
        &metrics,
        Door::Rest,
        Action::CreateTicket.as_str(),
        &tenant,
        request_id,
        None,
    );
    let answer = place(&kitchen, &tenant, &headers, body, &attempt)
        .instrument(attempt.span().clone())
        .await;
    match &answer {
        Ok((_, outcome)) => attempt.finish(outcome, None),
        Err(e) => {
            let (outcome, failure) = e.outcome();
            attempt.finish(outcome, failure);
        }
    }
    answer.map(|(response, _)| response)
}

/// The create itself; answers the response and the outcome's name.
async fn place(
    kitchen: &Kitchen,
    tenant: &Tenant,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    attempt: &Attempt,
) -> Result<(Response, &'static str), RestError> {
    // The key first: without one, nothing about the body matters yet.
    let key = idempotency_key::from_headers(headers)?;
    attempt.record_key(key.as_str());
    let request: CreateTicketRequest = json_body::parse(headers, body)?;
    let draft = TicketDraft::from(request);
    let outcome = kitchen.create_ticket(tenant.id, &key, &draft).await?;
    let name = outcome.name();
    match outcome {
        Outcome::Created(receipt) => Ok((ticket_created(&receipt, false), name)),
        Outcome::Replayed(receipt) => Ok((ticket_created(&receipt, true), name)),
        Outcome::Conflict { original } => Err(RestError::KeyReused(original)),
        Outcome::Invalid { violations } => Err(RestError::Validation(violations)),
        Outcome::InProgress { retry_after } => Err(RestError::InProgress(retry_after)),
        Outcome::NotCreated { reason, .. } => Err(match reason {
            NotCreatedReason::Rejected(why) => RestError::ProviderRejected(why),
            NotCreatedReason::Unavailable(why) => RestError::ProviderUnavailable(why),
        }),
        Outcome::Unknown { operation, reason } => Ok((outcome_unknown(&operation, reason), name)),
    }
}

/// How long a caller should wait before retrying an unknown outcome.
const UNKNOWN_RETRY_AFTER_SECS: u64 = 2;

/// The body of a `202`: the outcome is not known yet.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct OutcomeUnknown {
    /// Always `unknown`.
    #[schema(example = "unknown")]
    state: &'static str,
    /// The action, `create_ticket`.
    action: &'static str,
    /// The Idempotency-Key.
    key: String,
    /// The operation's status resource (also in `Location`).
    status_location: String,
    /// What is known.
    detail: String,
    /// Always true: retrying the same request with the same key is safe.
    retry_safe: bool,
    /// What to do now.
    next_step: &'static str,
}

/// `202 Accepted`: the ticket provider's answer was lost and the service is
/// reconciling. `Location` is the operation's status resource.
fn outcome_unknown(operation: &OperationRef, reason: String) -> Response {
    let location = links::operation(operation.action, &operation.key);
    let body = OutcomeUnknown {
        state: "unknown",
        action: operation.action.as_str(),
        key: operation.key.as_str().into(),
        status_location: location.clone(),
        detail: reason,
        retry_safe: true,
        next_step: crate::routes::operations::next_step(OperationState::Unknown),
    };
    let mut response = (StatusCode::ACCEPTED, axum::Json(body)).into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&location) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert(
        header::RETRY_AFTER,
        HeaderValue::from(UNKNOWN_RETRY_AFTER_SECS),
    );
    response
}

/// `201` with the frozen snapshot as the body: a replay is byte-identical
/// to the first answer because both send the stored bytes.
fn ticket_created(receipt: &Receipt, replayed: bool) -> Response {
    let mut response = (
        StatusCode::CREATED,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        receipt.snapshot.as_str().to_owned(),
    )
        .into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&links::ticket(receipt.ticket.id)) {
        headers.insert(header::LOCATION, location);
    }
    if replayed {
        headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
}

/// One ticket of the caller's tenant.
#[utoipa::path(
    get,
    path = "/v1/tickets/{id}",
    operation_id = "get_ticket",
    tag = "tickets",
    params(("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found")),
    responses(
        (status = 200, description = "The ticket.", body = TicketBody),
        (status = 400, description = "The path is not valid percent-encoded UTF-8, or a header the server needs once was sent twice or is malformed (`bad-request`).", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "Missing or invalid bearer token.", body = Problem, content_type = "application/problem+json",
            headers(("WWW-Authenticate" = String, description = "Bearer"))),
        (status = 404, description = "No such ticket for this tenant.", body = Problem, content_type = "application/problem+json"),
        (status = 500, description = "Something failed on our side (`internal`; logged). Retry.", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn get(
    State(kitchen): State<Kitchen>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<axum::Json<TicketBody>, RestError> {
    let not_found = || RestError::NotFound(format!("Ticket {id:?}"));
    let ticket_id = id.parse().map_err(|_| not_found())?;
    let ticket = kitchen
        .ticket(tenant.id, ticket_id)
        .await?
        .ok_or_else(not_found)?;
    Ok(axum::Json(ticket.into()))
}

/// Query of `GET /v1/tickets`. Every value is read as text so that each bad
/// one is reported by name.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct ListParams {
    /// Only tickets of this project (a project slug).
    #[param(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$")]
    project_id: Option<String>,
    /// Page size, 1 to 200 (default 50).
    #[param(value_type = Option<u32>, minimum = 1, maximum = 200)]
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
        (status = 503, description = "The request ran past the server's timeout (`timeout`). Retry.", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn list(
    State(kitchen): State<Kitchen>,
    Extension(tenant): Extension<Tenant>,
    Query(params): Query<ListParams>,
) -> Result<axum::Json<TicketList>, RestError> {
    let mut violations = Vec::new();
    let project = params
        .project_id
        .map(ProjectId::parse)
        .transpose()
        .map_err(|v| violations.push(v))
        .ok()
        .flatten();
    let size = match params.limit {
        None => PageSize::DEFAULT,
        Some(raw) => raw
            .parse::<u32>()
            .map_err(|_| FieldViolation {
                field: "limit".into(),
                code: "not_a_number",
                message: format!(
                    "limit must be a whole number from 1 to {}; got {raw:?}",
                    PageSize::MAX
                ),
            })
            .and_then(PageSize::parse)
            .map_err(|v| violations.push(v))
            .unwrap_or_default(),
    };
    // `cursor=` (empty) is the first page, as if the parameter were absent.
    let cursor = params
        .cursor
        .filter(|c| !c.is_empty())
        .map(|c| Cursor::parse(&c))
        .transpose()
        .map_err(|v| violations.push(v))
        .ok()
        .flatten();
    if !violations.is_empty() {
        return Err(RestError::Validation(violations));
    }
    let page = kitchen
        .list_tickets(tenant.id, project.as_ref(), size, cursor)
        .await?;
    Ok(axum::Json(TicketList {
        tickets: page.tickets.into_iter().map(TicketBody::from).collect(),
        next_cursor: page.next_cursor.map(|c| c.to_string()),
    }))
}
