//! `transition_ticket`: `POST /v1/tickets/{id}/transitions`, a move
//! through the status machine.

use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use kitchen::actions::TransitionTicket;
use kitchen::{RetrySafeWrite, TicketAt, TransitionDraft};

use crate::error::RestError;
use crate::idempotency_key::IdempotencyKeyHeader;
use crate::json_body;
use crate::problem::Problem;
use crate::routes::tickets::ticket_id;
use crate::routes::writes::{self, OutcomeUnknown, WriteDoor};
use crate::schema::{TicketBody, TransitionRequest};
use crate::versions::{self, IfMatchHeader};

/// Move a ticket to another status, at most once per Idempotency-Key.
///
/// The status machine: open → in_progress → resolved → closed, resolved →
/// in_progress (not done after all), closed → open (reopen). Any other
/// move, staying put included, is refused with `409
/// transition-not-allowed` and `allowed_moves`, and leaves the key unused.
/// A retry with the same key and body gets the first answer again
/// (`Idempotent-Replayed: true`) and moves nothing. Past the key's replay
/// window (`Idempotency-Replayable-Until`) the same request answers the
/// ticket as it is now with `Idempotent-Replayed: expired`, and still moves
/// nothing. With `If-Match`, the move is made only if the ticket is still
/// at that version, as for PATCH.
#[utoipa::path(
    post,
    path = "/v1/tickets/{id}/transitions",
    operation_id = "transition_ticket",
    tag = "tickets",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        IdempotencyKeyHeader,
        IfMatchHeader,
    ),
    request_body(content = TransitionRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "Moved, or replayed (then `Idempotent-Replayed: true` is set and the body and ETag are the first answer's, byte for byte). Or the same request with a key past its replay window (`Idempotent-Replayed: expired`): the first request made the move and nothing moved now; the body and ETag are the ticket as it is now, `Location` its address.", body = TicketBody,
            headers(
                ("ETag" = String, description = "The ticket's version after the move; with `Idempotent-Replayed: expired`, its version now"),
                ("Location" = String, description = "With `Idempotent-Replayed: expired` only: the ticket, /v1/tickets/{id}"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of the first one; `expired` when the key's replay window is over (the body is then the resource as it is now, and nothing new was made)"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 202, description = "With a ticket provider: its answer was lost, so the move may or may not have been made there; the service is reconciling. Retry the same request with the same key, or GET the Location. Never use a new key for this move.", body = OutcomeUnknown,
            headers(
                ("Location" = String, description = "The operation's status resource"),
                ("Retry-After" = u64, description = "Seconds to wait before asking again"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), the body not JSON (`malformed-json`) or of the wrong shape (`invalid-body`), fields invalid (`validation-failed`; e.g. `to` missing or not a status), If-Match malformed, `If-None-Match` or `If-Unmodified-Since` sent (refused: use If-Match), or a header the server needs once sent twice or malformed (`bad-request`). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such ticket for this tenant (`not-found`, as a GET would say). Nothing changed, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The status machine does not allow this move from the ticket's status (`transition-not-allowed`; `from`, `to`, `allowed_moves`; no Retry-After: waiting does not help; nothing changed, key not used). Or an earlier attempt with this key is still running (`operation-in-progress`; retry the same request after Retry-After seconds). Or, with a ticket provider, the ticket was made before this deployment kept its tickets there and exists only here (`ticket-not-at-provider`; nothing moved, key not used).", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait (`operation-in-progress` only)"))),
        (status = 412, description = "If-Match named another version than the ticket's (`version-mismatch`; `expected_version`, `current_version`): someone changed it. Checked before the move itself. Nothing moved, key not used: GET it, decide again.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request (`idempotency-key-reused`; `original_operation` links its status resource). Nothing changed. Or the ticket provider refused the write (`provider-rejected`: an invalid field, a ticket it does not have, another version, a move its workflow forbids; its words in `detail`): nothing moved, the key is not used up.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Link" = String, description = "<status resource>; rel=\"original\""),
                ("Idempotency-Replayable-Until" = String, description = "For a reused key: the replay horizon of the original operation, the one that owns the key (RFC 3339)"),
            )),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the ticket provider could not be reached (`provider-unavailable`): nothing was sent, nothing moved, and the key is not used up; retry after Retry-After seconds. Or the database cannot be used right now (`database-unavailable`): detail says whether anything was written (nearly always nothing); retry with the same key after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Retry-After" = u64, description = "Seconds to wait (`provider-unavailable`)"),
                ("Idempotency-Replayable-Until" = String, description = "The operation's replay horizon (RFC 3339; `provider-unavailable` only)"),
            )),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn transition(
    door: WriteDoor,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    door.write::<TransitionTicket>(
        |headers| {
            let expected_version = versions::expected_version(headers)?;
            let draft: TransitionDraft = json_body::parse(headers, body, TransitionTicket::ACTION)?;
            Ok((TicketAt::new(ticket_id(&id)?, expected_version), draft))
        },
        writes::ticket_changed,
    )
    .await
}
