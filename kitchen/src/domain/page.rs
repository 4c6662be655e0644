//! Pagination: page sizes and cursors, shared by every list (tickets,
//! comments, history).

use std::fmt;

use super::text::refuse_nul;
use uuid::Uuid;

use super::label::Label;
use super::ticket::{ProjectId, Ticket};
use super::violation::FieldViolation;

/// How many items one page holds: 1 to 200, 50 when not given.
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

/// Where the next page starts: the id of the last item of the previous
/// page. Opaque to callers: pass back what a page's `next_cursor` gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor(Uuid);

impl Cursor {
    /// Parses a cursor a caller passed back.
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        // A cursor is a UUID and never reaches a text column, but a caller
        // who sends a NUL gets the same answer as in every other field.
        refuse_nul("cursor", raw)?;
        Uuid::parse_str(raw).map(Self).map_err(|_| {
            FieldViolation::new(
                "cursor",
                "malformed",
                "cursor must be a next_cursor value from an earlier page",
            )
        })
    }

    pub(crate) fn after(self) -> Uuid {
        self.0
    }

    /// Cuts `items`, fetched with one extra row, to `size`: that extra row's
    /// presence is what says another page exists, and then the cursor is
    /// the last kept item's id.
    pub(crate) fn after_overfetch<T>(
        items: &mut Vec<T>,
        size: PageSize,
        id: impl Fn(&T) -> Uuid,
    ) -> Option<Self> {
        let more = items.len() > size.get() as usize;
        items.truncate(size.get() as usize);
        more.then(|| items.last().map(|item| Self(id(item))))
            .flatten()
    }
}

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Which of the tenant's tickets a list shows: all of them, or those of one
/// project, or those carrying one label, or both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TicketFilter {
    /// Only this project's tickets.
    pub project: Option<ProjectId>,
    /// Only tickets carrying this label.
    pub label: Option<Label>,
}

impl TicketFilter {
    /// The filter a caller asked for (a project slug, a label), each value
    /// that is not valid reported in `violations` by name.
    pub fn parse(
        project_id: Option<String>,
        label: Option<String>,
        violations: &mut Vec<FieldViolation>,
    ) -> Self {
        Self {
            project: kept(project_id.map(ProjectId::parse), violations),
            label: kept(label.map(Label::parse), violations),
        }
    }

    /// Only `project`'s tickets.
    pub fn project(project: ProjectId) -> Self {
        Self {
            project: Some(project),
            label: None,
        }
    }
}

/// `raw`'s value if it was given and is valid; a violation is recorded.
fn kept<T>(
    raw: Option<Result<T, FieldViolation>>,
    violations: &mut Vec<FieldViolation>,
) -> Option<T> {
    raw.transpose().unwrap_or_else(|v| {
        violations.push(v);
        None
    })
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
        let next_cursor = Cursor::after_overfetch(&mut tickets, size, |t| t.id.as_uuid());
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
        let id = Uuid::now_v7().to_string();
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
