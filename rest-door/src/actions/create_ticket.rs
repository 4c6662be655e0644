//! `create_ticket`: `POST /v1/tickets`.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use kitchen::actions::CreateTicket;
use kitchen::{RetrySafeWrite, TicketDraft};

use crate::error::RestError;
use crate::idempotency_key::IdempotencyKeyHeader;
use crate::json_body;
use crate::problem::Problem;
use crate::routes::writes::{self, OutcomeUnknown, WriteDoor};
use crate::schema::{CreateTicketRequest, TicketBody};

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
        (status = 409, description = "An earlier attempt with this key is still running. Retry the same request later.", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 422, description = "The key was used for a different request (`original_operation` links its status resource), or the ticket provider refused the ticket (`provider-rejected`; the key is not used up). Nothing created.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Link" = String, description = "<status resource>; rel=\"original\""),
                ("Idempotency-Replayable-Until" = String, description = "The replay horizon of the operation that owns the key (RFC 3339): for a reused key, the original operation's"),
            )),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the ticket provider could not be reached (`provider-unavailable`): nothing was sent or created and the key is not used up; retry after Retry-After seconds. Or the database cannot be used right now (`database-unavailable`): detail says whether anything was written (nearly always nothing); retry with the same key after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Retry-After" = u64, description = "Seconds to wait (`provider-unavailable`)"),
                ("Idempotency-Replayable-Until" = String, description = "The operation's replay horizon (RFC 3339; `provider-unavailable` only)"),
            )),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn create(
    door: WriteDoor,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    door.write_with::<CreateTicket>(
        |headers| {
            let (request, options): (CreateTicketRequest, _) =
                json_body::parse_confirming(headers, body, CreateTicket::ACTION)?;
            Ok((TicketDraft::from(request), options))
        },
        writes::ticket_created,
    )
    .await
}
