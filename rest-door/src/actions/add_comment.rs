//! `add_comment`: `POST /v1/tickets/{id}/comments`.

use axum::body::Bytes;
use axum::extract::Path;
use axum::extract::rejection::BytesRejection;
use axum::response::Response;
use kitchen::actions::AddComment;
use kitchen::{CommentDraft, RetrySafeWrite, TicketAt};

use crate::error::RestError;
use crate::idempotency_key::IdempotencyKeyHeader;
use crate::json_body;
use crate::problem::Problem;
use crate::routes::tickets::ticket_id;
use crate::routes::writes::{self, OutcomeUnknown, WriteDoor};
use crate::schema::{CommentBody, CommentRequest};
use crate::versions::{self, IfMatchHeader};

/// Comment on a ticket, at most once per Idempotency-Key.
///
/// The first request with a key adds the comment. A retry with the same
/// key and body gets the first answer again (same status, body bytes and
/// Location, plus `Idempotent-Replayed: true`) and adds nothing. A comment
/// does not change the ticket's version. Past the key's replay window
/// (`Idempotency-Replayable-Until`) the same request answers `200` with the
/// comment as it is now and `Idempotent-Replayed: expired`, and still adds
/// nothing. With `If-Match`, the comment is added only if the ticket is
/// still at that version (it answers what the caller read), as for PATCH.
#[utoipa::path(
    post,
    path = "/v1/tickets/{id}/comments",
    operation_id = "add_comment",
    tag = "comments",
    params(
        ("id" = String, Path, description = "The ticket's id (a UUID); anything else is simply not found"),
        IdempotencyKeyHeader,
        IfMatchHeader,
    ),
    request_body(content = CommentRequest, content_type = "application/json"),
    responses(
        (status = 200, description = "The same request with a key past its replay window (`Idempotent-Replayed: expired`): the first request added the comment and nothing new was added. The first answer is no longer kept, so the body is the comment as it is now (as GET shows it), `Location` its address. Do not retry with a new key: that would add it twice.", body = CommentBody,
            headers(
                ("Location" = String, description = "The comment the first request added: /v1/tickets/{id}/comments/{comment_id}"),
                ("Idempotent-Replayed" = String, description = "`expired`"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replayed the first answer (RFC 3339, now in the past). See the API description."),
            )),
        (status = 201, description = "Added, or replayed (then `Idempotent-Replayed: true` is set and the body is byte-identical to the first answer).", body = CommentBody,
            headers(
                ("Location" = String, description = "The comment: /v1/tickets/{id}/comments/{comment_id}"),
                ("Idempotent-Replayed" = String, description = "`true` when this answer is a replay of the first one; `expired` when the key's replay window is over (the body is then the resource as it is now, and nothing new was made)"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            ),
            links(("GetComment" = (operation_id = "get_comment", parameters(("id" = "$response.body#/ticket_id"), ("comment_id" = "$response.body#/id")), description = "The comment just added (or replayed)")))),
        (status = 202, description = "With a ticket provider: its answer was lost, so the comment may or may not have been made there; the service is reconciling. Retry the same request with the same key, or GET the Location. Never use a new key for this comment.", body = OutcomeUnknown,
            headers(
                ("Location" = String, description = "The operation's status resource"),
                ("Retry-After" = u64, description = "Seconds to wait before asking again"),
                ("Idempotency-Replayable-Until" = String, description = "Until when a retry of this request with this key replays the first answer (RFC 3339); after it the same request answers `Idempotent-Replayed: expired`. See the API description."),
            )),
        (status = 400, description = "Idempotency-Key missing or malformed (`idempotency-key-missing`, `idempotency-key-malformed`), the body not JSON (`malformed-json`) or of the wrong shape (`invalid-body`), fields invalid (`validation-failed`; e.g. `body` missing or blank), If-Match malformed, `If-None-Match` or `If-Unmodified-Since` sent (refused: use If-Match), or a header the server needs once sent twice or malformed (`bad-request`). Nothing added, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such ticket for this tenant (`not-found`, as a GET would say). Nothing added, key not used.", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An earlier attempt with this key is still running (`operation-in-progress`). Retry the same request later. Or, with a ticket provider, the ticket was made before this deployment kept its tickets there and exists only here (`ticket-not-at-provider`; nothing added, key not used).", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 412, description = "If-Match named another version than the ticket's (`version-mismatch`; `expected_version`, `current_version`): someone changed the ticket since you read it. Nothing added, key not used: GET it, decide again.", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The key was used for a different request (`idempotency-key-reused`; `original_operation` links its status resource). Nothing added. Or the ticket provider refused the write (`provider-rejected`: an invalid field, a ticket it does not have, another version, a move its workflow forbids; its words in `detail`): nothing added, the key is not used up.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Link" = String, description = "<status resource>; rel=\"original\""),
                ("Idempotency-Replayable-Until" = String, description = "For a reused key: the replay horizon of the original operation, the one that owns the key (RFC 3339)"),
            )),
        (status = 503, description = "The request ran past the server's timeout (`timeout`): the outcome is unknown, retry with the same key. Or the ticket provider could not be reached (`provider-unavailable`): nothing was sent, nothing added, and the key is not used up; retry after Retry-After seconds. Or the database cannot be used right now (`database-unavailable`): detail says whether anything was written (nearly always nothing); retry with the same key after Retry-After seconds.", body = Problem, content_type = "application/problem+json",
            headers(
                ("Retry-After" = u64, description = "Seconds to wait (`provider-unavailable`)"),
                ("Idempotency-Replayable-Until" = String, description = "The operation's replay horizon (RFC 3339; `provider-unavailable` only)"),
            )),
    ),
    security(("bearer" = [])),
)]
pub(crate) async fn add(
    door: WriteDoor,
    Path(id): Path<String>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, RestError> {
    door.write_with::<AddComment>(
        |headers| {
            let expected_version = versions::expected_version(headers)?;
            let (draft, options): (CommentDraft, _) =
                json_body::parse_confirming(headers, body, AddComment::ACTION)?;
            Ok((
                (TicketAt::new(ticket_id(&id)?, expected_version), draft),
                options,
            ))
        },
        writes::comment_added,
    )
    .await
}
