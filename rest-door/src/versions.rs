//! A ticket's version over HTTP: the strong `ETag` every ticket answer
//! carries (`"3"`), and the `If-Match` that makes a write conditional on it.

use http::{HeaderMap, HeaderValue, header};
use kitchen::Version;

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
            "Only make the change if the ticket is still at this version: its `ETag` as a GET (or \
             the last write) gave it, e.g. `\"3\"`. `*`, or no header, means whatever version it \
             is at. Another version is `412 version-mismatch` and writes nothing; a value that is \
             not `*` or one such tag is `400 bad-request`.",
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

    #[test]
    fn the_etag_is_the_version_in_quotes() {
        assert_eq!(etag(Version::FIRST), "\"1\"");
        let v = Version::parse(42, "v").expect("a version");
        assert_eq!(etag(v), "\"42\"");
    }
}
