//! `limit` and `cursor`: how every list is paged, read the same way
//! everywhere.

use kitchen::{Cursor, FieldViolation, PageSize};
use serde::Deserialize;
use utoipa::IntoParams;

/// Query of a paged list. Every value is read as text so that each bad one
/// is reported by name.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct PageParams {
    /// How many items a page holds.
    #[param(schema_with = crate::schema::limit_schema)]
    limit: Option<String>,
    /// `next_cursor` of the previous page (a UUID). Empty means none: the
    /// first page.
    #[param(
        pattern = "^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})?$"
    )]
    cursor: Option<String>,
}

impl PageParams {
    /// The page asked for; each bad value is added to `violations`.
    pub(crate) fn read(self, violations: &mut Vec<FieldViolation>) -> (PageSize, Option<Cursor>) {
        read(self.limit, self.cursor, violations)
    }
}

/// The page size and cursor of `limit` and `cursor`; each bad value is
/// added to `violations` (and its default used meanwhile).
pub(crate) fn read(
    limit: Option<String>,
    cursor: Option<String>,
    violations: &mut Vec<FieldViolation>,
) -> (PageSize, Option<Cursor>) {
    let size = read_limit(limit, violations);
    // `cursor=` (empty) is the first page, as if the parameter were absent.
    let cursor = cursor
        .filter(|c| !c.is_empty())
        .map(|c| Cursor::parse(&c))
        .transpose()
        .map_err(|v| violations.push(v))
        .ok()
        .flatten();
    (size, cursor)
}

/// The page size `limit` asks for; a bad value is added to `violations`
/// (and the default used meanwhile).
pub(crate) fn read_limit(limit: Option<String>, violations: &mut Vec<FieldViolation>) -> PageSize {
    match limit {
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
    }
}
