//! Lists of operations: which ones a caller or an operator asks for, and
//! how such a list is paged.

use std::fmt;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::action::Action;
use super::effect::ExternalRef;
use super::lifecycle::KeyPhase;
use super::operation::{OperationKey, OperationRecord, OperationState};
use super::page::PageSize;
use super::text::refuse_nul;
use super::violation::FieldViolation;

/// Where an operation is, as a list filters by it: its recorded state,
/// with a succeeded one split by its key's phase, so that the values
/// partition every operation a list can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListedState {
    /// Succeeded, and a retry still replays its first answer.
    Succeeded,
    /// Succeeded, past its replay window: only a tombstone is kept.
    Expired,
    /// Being sent to the provider (remote backend).
    InProgress,
    /// The provider's answer was lost; being reconciled, or given up on
    /// for an operator (remote backend).
    Unknown,
    /// The provider made nothing; the key is not used up (remote backend).
    FailedBeforeEffect,
}

impl ListedState {
    /// Every value, in the order the docs list them.
    pub const ALL: [ListedState; 5] = [
        Self::Succeeded,
        Self::Expired,
        Self::InProgress,
        Self::Unknown,
        Self::FailedBeforeEffect,
    ];

    /// The value's name, as a filter takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Succeeded => "succeeded",
            Self::Expired => "expired",
            Self::InProgress => "in_progress",
            Self::Unknown => "unknown",
            Self::FailedBeforeEffect => "failed_before_effect",
        }
    }

    /// Parses a filter value; the error names the values there are.
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        Self::ALL
            .into_iter()
            .find(|s| s.as_str() == raw)
            .ok_or_else(|| {
                FieldViolation::new(
                    "state",
                    "unknown_value",
                    format!(
                        "state must be one of {}; got {raw:?}",
                        Self::ALL.map(Self::as_str).join(", ")
                    ),
                )
            })
    }

    /// The recorded state, and for a succeeded one the phase, that the
    /// value stands for.
    pub(crate) fn stored(self) -> (OperationState, Option<KeyPhase>) {
        match self {
            Self::Succeeded => (OperationState::Succeeded, Some(KeyPhase::Replayable)),
            Self::Expired => (OperationState::Succeeded, Some(KeyPhase::Expired)),
            Self::InProgress => (OperationState::InProgress, None),
            Self::Unknown => (OperationState::Unknown, None),
            Self::FailedBeforeEffect => (OperationState::FailedBeforeEffect, None),
        }
    }
}

impl fmt::Display for ListedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which operations a list shows; every field narrows it. A forgotten key
/// (see [`KeyPhase::Forgotten`]) is never listed: it has no status either.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationFilter {
    /// Only operations in this state.
    pub state: Option<ListedState>,
    /// Only this action's operations.
    pub action: Option<Action>,
    /// Only operations whose key was first used at or after this.
    pub since: Option<OffsetDateTime>,
    /// Only operations whose key was first used before this (an operator's
    /// `--older-than`).
    pub before: Option<OffsetDateTime>,
    /// Only operations a person must act on (see
    /// [`OperationSummary::needs_operator`]).
    pub needs_operator: bool,
}

impl OperationFilter {
    /// The filter a caller's text asks for (`state`, `action`, `since` as
    /// RFC 3339). An empty value is not one of them, so it is refused like
    /// any other bad value: each is added to `violations`, and left out
    /// meanwhile.
    pub fn parse(
        state: Option<&str>,
        action: Option<&str>,
        since: Option<&str>,
        violations: &mut Vec<FieldViolation>,
    ) -> Self {
        let state =
            state.and_then(|raw| ListedState::parse(raw).map_err(|v| violations.push(v)).ok());
        let action = action.and_then(|raw| {
            let found = Action::parse(raw);
            if found.is_none() {
                violations.push(FieldViolation::new(
                    "action",
                    "unknown_value",
                    format!("action must be one of {}; got {raw:?}", Action::names()),
                ));
            }
            found
        });
        let since = since.and_then(|raw| {
            OffsetDateTime::parse(raw, &Rfc3339)
                .map_err(|_| {
                    violations.push(FieldViolation::new(
                        "since",
                        "not_a_time",
                        format!(
                            "since must be an RFC 3339 time such as 2026-12-01T09:00:00Z; got \
                             {raw:?}"
                        ),
                    ))
                })
                .ok()
        });
        Self {
            state,
            action,
            since,
            before: None,
            needs_operator: false,
        }
    }
}

/// Where the next page of operations starts: just after the last one of
/// the previous page, in the list's order (newest first). Opaque to
/// callers: pass back what a page's `next_cursor` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationCursor {
    pub(crate) created_at: OffsetDateTime,
    pub(crate) action: Action,
    pub(crate) key: OperationKey,
}

impl OperationCursor {
    fn after(record: &OperationRecord) -> Self {
        Self {
            created_at: record.created_at,
            action: record.action,
            key: record.key.clone(),
        }
    }

    /// Parses a cursor a caller passed back.
    pub fn parse(raw: &str) -> Result<Self, FieldViolation> {
        refuse_nul("cursor", raw)?;
        let malformed = || {
            FieldViolation::new(
                "cursor",
                "malformed",
                "cursor must be a next_cursor value from an earlier page of operations",
            )
        };
        let text = hex::decode(raw)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or_else(malformed)?;
        // `nanoseconds.action.key`: neither of the first two holds a dot.
        let mut parts = text.splitn(3, '.');
        let (Some(nanos), Some(action), Some(key)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(malformed());
        };
        let created_at = nanos
            .parse::<i128>()
            .ok()
            .and_then(|n| OffsetDateTime::from_unix_timestamp_nanos(n).ok())
            .ok_or_else(malformed)?;
        Ok(Self {
            created_at,
            action: Action::parse(action).ok_or_else(malformed)?,
            key: OperationKey::parse(key).map_err(|_| malformed())?,
        })
    }
}

impl fmt::Display for OperationCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!(
            "{}.{}.{}",
            self.created_at.unix_timestamp_nanos(),
            self.action,
            self.key
        );
        f.write_str(&hex::encode(text))
    }
}

/// One operation as a list shows it: the record (without its frozen answer)
/// and what an operator needs to see at a glance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationSummary {
    /// The record; its `result` is left out of lists (the status has it).
    pub record: OperationRecord,
    /// Where its key is now: replayable or expired.
    pub phase: KeyPhase,
    /// For an effect at a provider: its name there.
    pub external_ref: Option<ExternalRef>,
    /// Why the provider made nothing, or why the outcome is unknown.
    pub detail: Option<String>,
    /// Whether reconciliation gave up on it: only a person settles it now.
    pub given_up: bool,
    /// The provider's ids of copies besides the original, if a search found
    /// any: for a person to resolve.
    pub duplicates_at_provider: Vec<String>,
}

impl OperationSummary {
    /// Its state as a list filters by it.
    pub fn listed_state(&self) -> ListedState {
        match (self.record.state, self.phase) {
            (OperationState::Succeeded, KeyPhase::Replayable) => ListedState::Succeeded,
            // A forgotten key is never listed; should one come, it is past
            // its window too.
            (OperationState::Succeeded, KeyPhase::Expired | KeyPhase::Forgotten) => {
                ListedState::Expired
            }
            (OperationState::InProgress, _) => ListedState::InProgress,
            (OperationState::Unknown, _) => ListedState::Unknown,
            (OperationState::FailedBeforeEffect, _) => ListedState::FailedBeforeEffect,
        }
    }

    /// Whether a person must act on it: reconciliation gave up on it, or
    /// the provider holds it more than once.
    pub fn needs_operator(&self) -> bool {
        self.given_up || !self.duplicates_at_provider.is_empty()
    }
}

/// One page of operations, newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperationPage {
    /// The operations.
    pub operations: Vec<OperationSummary>,
    /// Pass this back for the next page; `None` on the last page.
    pub next_cursor: Option<OperationCursor>,
}

impl OperationPage {
    /// A page from `operations` fetched with one extra row: that extra
    /// row's presence is what says another page exists.
    pub(crate) fn from_overfetch(mut operations: Vec<OperationSummary>, size: PageSize) -> Self {
        let more = operations.len() > size.get() as usize;
        operations.truncate(size.get() as usize);
        let next_cursor = more
            .then(|| operations.last().map(|o| OperationCursor::after(&o.record)))
            .flatten();
        Self {
            operations,
            next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_refuses_what_no_page_gave() {
        let cursor = OperationCursor {
            created_at: OffsetDateTime::from_unix_timestamp_nanos(1_764_825_600_123_456_000)
                .expect("a time"),
            action: Action::AddComment,
            key: OperationKey::parse("with.dots.in-it").expect("a key"),
        };
        let text = cursor.to_string();
        assert!(text.bytes().all(|b| b.is_ascii_hexdigit()), "{text}");
        assert_eq!(OperationCursor::parse(&text), Ok(cursor));
        for bad in [
            "",
            "zz",
            &hex::encode("12.create_ticket"),
            &hex::encode("x.create_ticket.abcdefgh"),
            &hex::encode("1.no_such_action.abcdefgh"),
            &hex::encode("1.create_ticket.short"),
        ] {
            assert_eq!(
                OperationCursor::parse(bad).map_err(|v| v.code),
                Err("malformed"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_filter_reports_each_bad_value_by_name() {
        let mut violations = Vec::new();
        let filter = OperationFilter::parse(
            Some("unknown"),
            Some("create_ticket"),
            Some("2026-12-01T09:00:00Z"),
            &mut violations,
        );
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(filter.state, Some(ListedState::Unknown));
        assert_eq!(filter.action, Some(Action::CreateTicket));
        assert!(filter.since.is_some());
        OperationFilter::parse(
            Some("lost"),
            Some("delete_ticket"),
            Some("yesterday"),
            &mut violations,
        );
        let fields: Vec<_> = violations
            .iter()
            .map(|v| (v.field.as_str(), v.code))
            .collect();
        assert_eq!(
            fields,
            [
                ("state", "unknown_value"),
                ("action", "unknown_value"),
                ("since", "not_a_time")
            ]
        );
    }

    #[test]
    fn listed_states_round_trip_and_an_unknown_one_names_them_all() {
        for state in ListedState::ALL {
            assert_eq!(ListedState::parse(state.as_str()), Ok(state));
        }
        let refused = ListedState::parse("done").expect_err("not a state");
        assert_eq!(refused.code, "unknown_value");
        assert!(
            refused.message.contains("succeeded, expired, in_progress"),
            "{}",
            refused.message
        );
    }
}
