//! Comments on a ticket: the request as sent, the validated command, and the
//! stored comment.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::page::{Cursor, PageSize};
use super::precondition::TicketAt;
use super::text::refuse_nul;
use super::ticket::{TicketId, Version, keep, required};
use super::uuid_id::uuid_id;
use super::violation::FieldViolation;

/// Longest comment, in characters.
pub const MAX_COMMENT_CHARS: usize = 10_000;

uuid_id!(
    /// A comment's id: a UUID v7 made by the server, so ids sort by time.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
    #[serde(transparent)]
    CommentId, parses
);

/// A comment's text: 1 to 10,000 characters, not blank; line breaks allowed.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommentBody(String);

impl CommentBody {
    /// Parses a comment body a caller sent.
    pub fn parse(raw: impl Into<String>) -> Result<Self, FieldViolation> {
        let raw = raw.into();
        refuse_nul("body", &raw)?;
        let chars = raw.chars().count();
        if raw.trim().is_empty() {
            Err(FieldViolation::new(
                "body",
                "blank",
                "body must not be empty or only white space",
            ))
        } else if chars > MAX_COMMENT_CHARS {
            Err(FieldViolation::new(
                "body",
                "too_long",
                format!("body must be at most {MAX_COMMENT_CHARS} characters; it has {chars}"),
            ))
        } else {
            Ok(Self(raw))
        }
    }

    pub(crate) fn from_stored(raw: String) -> Self {
        Self(raw)
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A comment request's body as a caller sent it, before validation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommentDraft {
    /// Required: the comment's text.
    pub body: Option<String>,
}

/// A validated comment: what the fingerprint is computed over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewComment {
    /// The ticket commented on.
    pub ticket_id: TicketId,
    /// Refuse the comment unless the ticket is at this version (a comment
    /// does not change it, but the caller may be answering what it read).
    pub expected_version: Option<Version>,
    /// The text.
    pub body: CommentBody,
}

impl CommentDraft {
    /// Validates the body for a comment on the ticket `at` names.
    pub fn validate(&self, at: impl Into<TicketAt>) -> Result<NewComment, Vec<FieldViolation>> {
        let TicketAt {
            ticket_id,
            expected_version,
        } = at.into();
        let mut violations = Vec::new();
        let body = keep(
            &mut violations,
            required(&self.body, "body").and_then(CommentBody::parse),
        );
        match body {
            Some(body) if violations.is_empty() => Ok(NewComment {
                ticket_id,
                expected_version,
                body,
            }),
            _ => Err(violations),
        }
    }
}

/// Version 1 of a comment's canonical form, for the fingerprint.
/// Alphabetical; never change it without a new version. `expected_version`
/// came later and is left out when absent, so an unconditional comment
/// encodes byte for byte as before (its old keys still replay) and a
/// conditional one can never encode like an unconditional one.
#[derive(Serialize)]
pub(crate) struct CanonicalCommentV1<'a> {
    body: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_version: Option<i64>,
    ticket_id: String,
}

impl NewComment {
    pub(crate) fn canonical(&self) -> CanonicalCommentV1<'_> {
        CanonicalCommentV1 {
            body: self.body.as_str(),
            expected_version: self.expected_version.map(Version::get),
            ticket_id: self.ticket_id.to_string(),
        }
    }
}

/// A comment as stored and shown. Its JSON is the result snapshot of the
/// `add_comment` that made it: add fields, never reorder or rename them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    /// Server-made UUID v7.
    pub id: CommentId,
    /// The ticket it is on.
    pub ticket_id: TicketId,
    /// The text.
    pub body: CommentBody,
    /// When it was added (RFC 3339, UTC, microsecond precision).
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// The provider's id for the comment, when it was made in a provider
    /// (the remote backend); absent from the JSON otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_comment_id: Option<String>,
}

/// One page of a ticket's comments, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommentPage {
    /// The comments.
    pub comments: Vec<Comment>,
    /// Pass this back for the next page; `None` on the last page.
    pub next_cursor: Option<Cursor>,
}

impl CommentPage {
    pub(crate) fn from_overfetch(mut comments: Vec<Comment>, size: PageSize) -> Self {
        let next_cursor = Cursor::after_overfetch(&mut comments, size, |c| c.id.as_uuid());
        Self {
            comments,
            next_cursor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canonical(at: TicketAt) -> String {
        let draft = CommentDraft {
            body: Some("On it".into()),
        };
        let command = draft.validate(at).expect("valid");
        serde_json::to_string(&command.canonical()).expect("json")
    }

    /// Keys the previous release recorded (without a version) must still
    /// replay, so an unconditional comment encodes exactly as it did.
    #[test]
    fn an_unconditional_comment_encodes_as_before_and_a_conditional_one_does_not() {
        let id = TicketId::new_v7();
        assert_eq!(
            canonical(id.into()),
            format!(r#"{{"body":"On it","ticket_id":"{id}"}}"#)
        );
        let at = TicketAt::new(id, Some(Version::from_stored(3)));
        assert_eq!(
            canonical(at),
            format!(r#"{{"body":"On it","expected_version":3,"ticket_id":"{id}"}}"#)
        );
    }
}
