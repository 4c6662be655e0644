//! Pagination of ticket lists.

use std::fmt;

use super::text::refuse_nul;
use super::ticket::{Ticket, TicketId};
use super::violation::FieldViolation;

/// How many tickets one page holds: 1 to 200, 50 when not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageSize(u32);

impl PageSize {
    /// Largest page.
    pub const MAX: u32 = 200;
    /// Page size when the caller does not choose one.
    pub const DEFAULT: PageSize = PageSize(50);

    /// Parses a page size; the error says the allowed range.
    pub fn parse(n: u32) -> Result<Self, FieldViolation> {
        if (1..=Self::MAX).contains(&n) {
            Ok(Self(n))
        } else {
            Err(FieldViolation::new(
                "limit",
                "out_of_range",
                format!("limit must be between 1 and {}; got {n}", Self::MAX),
            ))
        }
    }

    /// The size.
    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for PageSize {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Where the next page starts. Opaque to callers: pass back what
/// [`TicketPage::next_cursor`] gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(TicketId);

impl Cursor {
    /// Parses a cursor a caller passed back.
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        // A cursor is a UUID and never reaches a text column, but a caller
        // who sends a NUL gets the same answer as in every other field.
        refuse_nul("cursor", raw)?;
        raw.parse().map(Self).map_err(|_| {
            FieldViolation::new(
                "cursor",
                "malformed",
                "cursor must be a next_cursor value from an earlier page",
            )
        })
    }

    pub(crate) fn after(self) -> TicketId {
        self.0
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// One page of tickets, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TicketPage {
    /// The tickets.
    pub tickets: Vec<Ticket>,
    /// Pass this back for the next page; `None` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl TicketPage {
    /// A page from `tickets` fetched with one extra row: that extra row's
    /// presence is what says another page exists.
    pub(crate) fn from_overfetch(mut tickets: Vec<Ticket>, size: PageSize) -> Self {
        let more = tickets.len() > size.get() as usize;
        tickets.truncate(size.get() as usize);
        let next_cursor = more.then(|| tickets.last().map(|t| Cursor(t.id))).flatten();
        Self {
            tickets,
            next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_with_nul_is_refused_as_such() {
        let id = TicketId::new_v7().to_string();
        let violation = Cursor::parse(&format!("{id}\0")).expect_err("NUL is refused");
        assert_eq!(
            (violation.field.as_str(), violation.code),
            ("cursor", "nul_character")
        );
        assert_eq!(
            Cursor::parse("not-a-cursor").map_err(|v| v.code),
            Err("malformed")
        );
        assert!(Cursor::parse(&id).is_ok());
    }
}
