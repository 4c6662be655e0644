//! A ticket's version over HTTP: the strong `ETag` every ticket answer
//! carries (`"3"`), the `If-Match` that makes a write conditional on it, and
//! the one rule for the other conditional headers on a write.
//!
//! The rule, the same for every write and on both doors (MCP
//! `expected_version`): a change to an existing ticket (PATCH, a transition,
//! a comment) may name the version it expects with `If-Match`; a create has
//! no version to name. Any other precondition header a write could mean
//! (`If-None-Match`, `If-Unmodified-Since`) is refused with `400` rather
//! than ignored: a caller who sent one wants a condition, and running the
//! write without it would defeat its purpose. `If-Modified-Since` and
//! `If-Range` are ignored, as RFC 9110 requires for a method other than
//! GET or HEAD.

use http::{HeaderMap, HeaderValue, header};
use kitchen::{Action, Version};

use crate::error::RestError;

/// The `ETag` of a ticket at `version`: a strong tag, the version in quotes.
pub(crate) fn etag(version: Version) -> HeaderValue {
    // Digits between quotes are always a valid header value.
    HeaderValue::from_str(&format!("\"{}\"", version.get()))
        .unwrap_or_else(|_| HeaderValue::from_static("\"1\""))
}

/// The header as the OpenAPI document describes it.
pub(crate) struct IfMatchHeader;

impl utoipa::IntoParams for IfMatchHeader {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        vec![crate::schema::parameter(
            "If-Match",
            utoipa::openapi::path::ParameterIn::Header,
            false,
            "Only write if the ticket is still at this version: its `ETag` as a GET (or the last \
             write) gave it, e.g. `\"3\"`. `*`, or no header, means whatever version it is at. \
             Another version is `412 version-mismatch` and writes nothing; a value that is not \
             `*` or one such tag is `400 bad-request`. The same rule on every change to a ticket \
             (PATCH, transitions, comments); `If-None-Match` and `If-Unmodified-Since` are \
             refused on writes with `400 bad-request`.",
            if_match_schema(),
        )]
    }
}

/// The most digits a version in `If-Match` may have: every 18-digit number
/// fits a version (an `i64`), and no ticket gets near that many changes.
const MAX_VERSION_DIGITS: usize = 18;

/// `*`, or one strong ETag of a version (a whole number from 1).
fn if_match_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .pattern(Some(r#"^(?:\*|"[1-9][0-9]{0,17}")$"#))
        .build()
}

/// The version `If-Match` names, `None` when the write is not conditional
/// (no header, or `*`), or why the header cannot be read.
///
/// Only what a caller gets from this service is accepted: one strong tag
/// of a version. A list of tags or a weak tag (`W/"3"`) is refused rather
/// than guessed at: a conditional write that runs unconditionally would
/// defeat its purpose.
pub(crate) fn expected_version(headers: &HeaderMap) -> Result<Option<Version>, RestError> {
    let mut values = headers.get_all(header::IF_MATCH).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    let refuse = |got: &str| {
        RestError::BadRequest(format!(
            "If-Match must be `*` or one ETag of the ticket as this service sent it, for example \
             `If-Match: \"3\"`; got {got}. Nothing was changed and the Idempotency-Key was not \
             used up."
        ))
    };
    if values.next().is_some() {
        return Err(refuse("more than one If-Match header"));
    }
    let raw = value
        .to_str()
        .map_err(|_| refuse("a value that is not ASCII"))?
        .trim();
    if raw == "*" {
        return Ok(None);
    }
    let number = raw
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        // Digits only, without a leading zero: the spelling this service
        // sends, so a tag is one string and compares as one. At most 18
        // digits (as the schema says), so every such tag is a number.
        .filter(|n| {
            n.len() <= MAX_VERSION_DIGITS
                && n.bytes().all(|b| b.is_ascii_digit())
                && !n.starts_with('0')
        })
        .and_then(|n| n.parse::<i64>().ok())
        .ok_or_else(|| refuse(&format!("{raw:?}")))?;
    Version::parse(number, "If-Match").map(Some).map_err(|_| {
        refuse(&format!(
            "{raw:?}, which is no version (versions start at 1)"
        ))
    })
}

/// Refuses the precondition headers `action` cannot honour: any
/// `If-None-Match` or `If-Unmodified-Since`, and `If-Match` on a create
/// (there is no ticket yet whose version it could name). Every write route
/// passes through here (`routes::writes::WriteDoor::write`), so the rule is one.
pub(crate) fn refuse_unsupported_preconditions(
    headers: &HeaderMap,
    action: Action,
) -> Result<(), RestError> {
    let refuse = |header: &str, instead: &str| {
        Err(RestError::BadRequest(format!(
            "{header} is not supported on this write, and the service will not ignore a \
             condition you asked for: {instead} Nothing was changed and the Idempotency-Key was \
             not used up."
        )))
    };
    let instead = if action == Action::CreateTicket {
        "a create needs no condition, because its Idempotency-Key already makes it happen at \
         most once; send it without the header."
    } else {
        "to change a ticket only if nobody changed it since you read it, send `If-Match` with \
         the ETag you read (for example `If-Match: \"3\"`), or no condition at all."
    };
    if headers.contains_key(header::IF_NONE_MATCH) {
        return refuse("If-None-Match", instead);
    }
    if headers.contains_key(header::IF_UNMODIFIED_SINCE) {
        return refuse("If-Unmodified-Since", instead);
    }
    if action == Action::CreateTicket && headers.contains_key(header::IF_MATCH) {
        return refuse("If-Match", instead);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(values: &[&str]) -> Result<Option<i64>, String> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(header::IF_MATCH, HeaderValue::from_str(v).expect("a value"));
        }
        expected_version(&headers)
            .map(|v| v.map(Version::get))
            .map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn reads_one_strong_tag_or_any() {
        assert_eq!(read(&[]), Ok(None));
        assert_eq!(read(&["*"]), Ok(None));
        assert_eq!(read(&["\"3\""]), Ok(Some(3)));
        assert_eq!(read(&[" \"12\" "]), Ok(Some(12)));
    }

    #[test]
    fn refuses_what_is_not_one_version() {
        for bad in [
            &["3"][..],
            &["W/\"3\""],
            &["\"3\", \"4\""],
            &["\"0\""],
            &["\"03\""],
            &["\"-1\""],
            &["\"\""],
            &["\"abc\""],
            &["\"99999999999999999999\""],
            &["\"1000000000000000000\""],
            &["\"3\"", "\"4\""],
        ] {
            assert!(
                read(bad).is_err_and(|e| e.contains("BadRequest")),
                "{bad:?}"
            );
        }
    }

    fn refused(action: Action, name: &'static str, value: &'static str) -> Option<String> {
        let mut headers = HeaderMap::new();
        headers.insert(name, HeaderValue::from_static(value));
        match refuse_unsupported_preconditions(&headers, action) {
            Ok(()) => None,
            Err(RestError::BadRequest(why)) => Some(why),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_preconditions_are_refused_on_every_write_by_name() {
        for action in Action::ALL {
            for name in ["if-none-match", "if-unmodified-since"] {
                let value = if name == "if-none-match" {
                    "*"
                } else {
                    "Wed, 02 Dec 2026 10:00:00 GMT"
                };
                let why = refused(action, name, value)
                    .unwrap_or_else(|| panic!("{action} accepted {name}"));
                assert!(why.starts_with("If-"), "{why}");
                assert!(why.contains("not used up"), "{why}");
            }
            // RFC 9110: ignored on a method other than GET or HEAD.
            assert_eq!(
                refused(action, "if-modified-since", "Wed, 02 Dec 2026 10:00:00 GMT"),
                None
            );
        }
    }

    #[test]
    fn if_match_is_for_changes_not_creates() {
        let why = refused(Action::CreateTicket, "if-match", "\"1\"").expect("refused");
        assert!(why.contains("If-Match is not supported"), "{why}");
        for action in [
            Action::UpdateTicket,
            Action::TransitionTicket,
            Action::AddComment,
        ] {
            assert_eq!(refused(action, "if-match", "\"1\""), None, "{action}");
        }
    }

    #[test]
    fn the_etag_is_the_version_in_quotes() {
        assert_eq!(etag(Version::FIRST), "\"1\"");
        let v = Version::parse(42, "v").expect("a version");
        assert_eq!(etag(v), "\"42\"");
    }
}
