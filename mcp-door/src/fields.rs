//! How the arguments several tools share are read: the ticket a call
//! names, the version it expects, a list's page, and what a missing
//! required argument says. One reading per argument, for every tool.

use kitchen::{Cursor, FieldViolation, PageSize, TicketAt, TicketId, Uuid, Version};

use crate::result_text;

/// The ticket a write or list names: its id, or `None` for a string that
/// is no ticket id (which names no ticket, and is answered as one that does
/// not exist). A missing ticket_id is a problem, and `None` too.
pub(crate) fn named_ticket(
    raw: Option<String>,
    problems: &mut Vec<FieldViolation>,
) -> Option<TicketId> {
    match raw {
        None => {
            problems.push(required("ticket_id", result_text::TICKET_ID_REQUIRED));
            None
        }
        Some(raw) => raw.parse().ok(),
    }
}

/// The `expected_version` of a write to an existing ticket, read the same
/// way for every such tool: a whole number from 1, or left out (any
/// version). Another number is a problem named by the argument.
pub(crate) fn expected_version(
    raw: Option<i64>,
    problems: &mut Vec<FieldViolation>,
) -> Option<Version> {
    let n = raw?;
    Version::parse(n, "expected_version")
        .map_err(|v| problems.push(v))
        .ok()
}

/// The ticket a write acts on, at the version it expects (`ticket_id` and
/// `expected_version`, read as [`named_ticket`] and [`expected_version`]
/// read them), and whether ticket_id named one: for one that is missing or
/// no id, the ticket is [`no_ticket`], so that the kitchen still checks
/// every other argument.
pub(crate) fn target(
    ticket_id: Option<String>,
    expected: Option<i64>,
    problems: &mut Vec<FieldViolation>,
) -> (TicketAt, bool) {
    let ticket = named_ticket(ticket_id, problems);
    let expected = expected_version(expected, problems);
    (
        TicketAt::new(ticket.unwrap_or_else(no_ticket), expected),
        ticket.is_some(),
    )
}

/// The id of no ticket (tickets have UUID v7 ids; this is the nil UUID):
/// what a draft is validated for when the ticket_id itself is missing or
/// no id, so that every other argument's problem is still reported.
pub(crate) fn no_ticket() -> TicketId {
    Uuid::nil()
        .hyphenated()
        .to_string()
        .parse()
        .expect("the nil UUID is a ticket id")
}

/// A page's size and start, from a list tool's `limit` and `cursor`; each
/// bad one is added to `violations`.
pub(crate) fn page(
    limit: Option<i64>,
    cursor: Option<String>,
    violations: &mut Vec<FieldViolation>,
) -> (PageSize, Option<Cursor>) {
    let size = limit
        .map_or(Ok(PageSize::DEFAULT), page_size)
        .unwrap_or_else(|v| {
            violations.push(v);
            PageSize::DEFAULT
        });
    let cursor = cursor
        .map(|c| Cursor::parse(&c))
        .transpose()
        .unwrap_or_else(|v| {
            violations.push(v);
            None
        });
    (size, cursor)
}

/// A missing required argument.
pub(crate) fn required(field: &str, message: &str) -> FieldViolation {
    FieldViolation {
        field: field.into(),
        code: "required",
        message: message.into(),
    }
}

/// A page size from an integer of any size: beyond `u32` it is out of the
/// page range all the same, and said so in the kitchen's words.
fn page_size(n: i64) -> Result<PageSize, FieldViolation> {
    match u32::try_from(n) {
        Ok(n) => PageSize::parse(n),
        Err(_) => Err(FieldViolation {
            field: "limit".into(),
            code: "out_of_range",
            message: format!("limit must be between 1 and {}; got {n}", PageSize::MAX),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_size_of_any_integer_is_checked_in_range() {
        assert_eq!(page_size(50).map(PageSize::get).ok(), Some(50));
        for n in [0, -1, 201, i64::from(u32::MAX) + 1, i64::MAX] {
            let violation = page_size(n).expect_err("out of range");
            assert_eq!(
                (violation.field.as_str(), violation.code),
                ("limit", "out_of_range")
            );
            assert!(
                violation.message.ends_with(&format!("got {n}")),
                "{}",
                violation.message
            );
        }
    }
}
