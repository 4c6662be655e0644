//! Comments on a ticket: the request as sent, the validated command, and the
//! stored comment.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use super::page::{Cursor, PageSize};
use super::text::refuse_nul;
use super::ticket::{TicketId, keep, required};
use super::violation::FieldViolation;

/// Longest comment, in characters.
pub const MAX_COMMENT_CHARS: usize = 10_000;

/// A comment's id: a UUID v7 made by the server, so ids sort by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommentId(Uuid);

impl CommentId {
    pub(crate) fn new_v7() -> Self {
        Self(Uuid::now_v7())
    }

    pub(crate) fn from_uuid(id: Uuid) -> Self {
        Self(id)
    }

    /// The underlying UUID.
    pub fn as_uuid(&self) -> Uuid {
        self.0
    }
}

impl fmt::Display for CommentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

impl FromStr for CommentId {
    type Err = uuid::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uuid::parse_str(s).map(Self)
    }
}

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
    /// The text.
    pub body: CommentBody,
}

impl CommentDraft {
    /// Validates the body for a comment on `ticket_id`.
    pub fn validate(&self, ticket_id: TicketId) -> Result<NewComment, Vec<FieldViolation>> {
        let mut violations = Vec::new();
        let body = keep(
            &mut violations,
            required(&self.body, "body").and_then(CommentBody::parse),
        );
        match body {
            Some(body) if violations.is_empty() => Ok(NewComment { ticket_id, body }),
            _ => Err(violations),
        }
    }
}

/// Version 1 of a comment's canonical form, for the fingerprint.
/// Alphabetical; never change it without a new version.
#[derive(Serialize)]
pub(crate) struct CanonicalCommentV1<'a> {
    body: &'a str,
    ticket_id: String,
}

impl NewComment {
    pub(crate) fn canonical(&self) -> CanonicalCommentV1<'_> {
        CanonicalCommentV1 {
            body: self.body.as_str(),
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
