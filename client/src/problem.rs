//! A refusal as the service explains it: an RFC 9457 problem document, or,
//! for an answer that came without one (a proxy's, a load balancer's), the
//! same shape made from its status and text.

use serde::{Deserialize, Serialize};

/// Most characters of a non-problem body kept as a made-up problem's
/// detail: enough to recognise a proxy's page, not a whole one.
const MAX_DETAIL_CHARS: usize = 500;

/// An error answer: its status, its `type` and what it says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// The HTTP status.
    pub status: u16,
    /// The `type` URI, e.g. `/problems/validation-failed`; `about:blank`
    /// for an answer that had no problem document.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// A short summary.
    #[serde(default)]
    pub title: String,
    /// What happened and what to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The rest of the document (`errors`, `original_operation`,
    /// `allowed_moves`, …) as sent.
    #[serde(flatten)]
    pub extensions: serde_json::Map<String, serde_json::Value>,
}

impl Problem {
    /// The problem in `body` answered with `status`: the document when it
    /// is one, else one made from the status and the body's text. The
    /// status is the answer's, whatever the document claims.
    pub(crate) fn from_answer(status: u16, body: &[u8]) -> Problem {
        match serde_json::from_slice::<Problem>(body) {
            Ok(mut problem) if problem.problem_type.starts_with('/') => {
                problem.status = status;
                problem
            }
            _ => Problem::without_document(status, body),
        }
    }

    /// Whether `body` holds a problem document of the kind `slug` (the
    /// last segment of its `type`, e.g. `operation-in-progress`).
    pub(crate) fn document_is(body: &[u8], slug: &str) -> bool {
        serde_json::from_slice::<Problem>(body).is_ok_and(|p| p.kind() == Some(slug))
    }

    /// A problem for an answer without a document.
    fn without_document(status: u16, body: &[u8]) -> Problem {
        let text: String = String::from_utf8_lossy(body)
            .chars()
            .take(MAX_DETAIL_CHARS)
            .collect();
        let title = reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("Unexpected status")
            .to_owned();
        Problem {
            status,
            problem_type: "about:blank".into(),
            title,
            detail: (!text.trim().is_empty()).then_some(text),
            extensions: serde_json::Map::new(),
        }
    }

    /// The kind: the last segment of a `/problems/…` type
    /// (`validation-failed`), or `None` for an answer without a document.
    pub fn kind(&self) -> Option<&str> {
        self.problem_type.strip_prefix("/problems/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_document_keeps_its_words_and_extensions() {
        let body = br#"{"type":"/problems/version-mismatch","title":"Stale","status":412,"detail":"at 3","expected_version":2,"current_version":3}"#;
        let problem = Problem::from_answer(412, body);
        assert_eq!(problem.kind(), Some("version-mismatch"));
        assert_eq!(problem.detail.as_deref(), Some("at 3"));
        assert_eq!(problem.extensions["current_version"], 3);
        assert!(Problem::document_is(body, "version-mismatch"));
        assert!(!Problem::document_is(body, "operation-in-progress"));
    }

    #[test]
    fn an_answer_without_a_document_becomes_one() {
        let problem = Problem::from_answer(404, b"<html>no route</html>");
        assert_eq!(problem.status, 404);
        assert_eq!(problem.kind(), None);
        assert_eq!(problem.problem_type, "about:blank");
        assert_eq!(problem.title, "Not Found");
        assert_eq!(problem.detail.as_deref(), Some("<html>no route</html>"));
        let empty = Problem::from_answer(502, b"");
        assert_eq!((empty.title.as_str(), empty.detail), ("Bad Gateway", None));
    }
}
