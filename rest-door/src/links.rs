//! The addresses the REST door hands out, built in one place.

use kitchen::{Action, CommentId, EarlierWrite, OperationKey, TicketId, Uuid};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use time::OffsetDateTime;

/// Characters left as they are in a path segment (RFC 3986 unreserved);
/// everything else a key may hold (`/`, `?`, `#`, `%`, …) is escaped.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `/v1/tickets/{id}`.
pub fn ticket(id: TicketId) -> String {
    format!("/v1/tickets/{id}")
}

/// `/v1/tickets/{id}/comments/{comment_id}`.
pub fn comment(ticket: TicketId, id: CommentId) -> String {
    comment_resource(ticket, id.as_uuid())
}

/// `/v1/tickets/{id}/comments/{comment_id}`, from the bare id an operation
/// record keeps as its resource.
pub(crate) fn comment_resource(ticket: TicketId, id: Uuid) -> String {
    format!("/v1/tickets/{ticket}/comments/{}", id.hyphenated())
}

/// What an earlier write made: its comment for `add_comment`, else its
/// ticket; `None` before it made anything.
pub(crate) fn earlier_resource(earlier: &EarlierWrite) -> Option<String> {
    let ticket = earlier.ticket_id?;
    Some(match (earlier.action, earlier.resource_id) {
        (Action::AddComment, Some(comment)) => comment_resource(ticket, comment),
        _ => self::ticket(ticket),
    })
}

/// `/v1/operations/{action}/{key}`, the key percent-encoded.
pub fn operation(action: Action, key: &OperationKey) -> String {
    format!(
        "/v1/operations/{action}/{}",
        utf8_percent_encode(key.as_str(), PATH_SEGMENT)
    )
}

/// RFC 3339, as every timestamp in responses.
pub fn rfc3339(t: OffsetDateTime) -> String {
    kitchen::rfc3339(t)
}
