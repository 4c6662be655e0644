//! Reading the `Idempotency-Key` header: a bare token (as Stripe sends it)
//! or an RFC 8941 string (as the IETF httpapi draft defines it).

use http::HeaderMap;
use kitchen::{Action, MAX_KEY_LEN, MIN_KEY_LEN, OperationKey};

use crate::error::{EXAMPLE_KEY, RestError};
use crate::vocabulary;

/// The header's name.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The header as the OpenAPI document describes it: what [`from_headers`]
/// accepts, so that a value the schema calls valid is never refused. Bare:
/// a key of printable ASCII characters without spaces, not starting with
/// `"`. Quoted (RFC 8941 sf-string): such a key between double quotes, `"`
/// and `\` escaped by a backslash; `maxLength` counts the quotes and
/// escapes too, so the schema leaves out the quoted keys longer than the
/// longest key in all that the server also reads. No `example`: a fixed
/// example key would be sent with every generated body, and a key names
/// one request.
pub(crate) struct IdempotencyKeyHeader;

impl utoipa::IntoParams for IdempotencyKeyHeader {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        vec![crate::schema::parameter(
            "Idempotency-Key",
            utoipa::openapi::path::ParameterIn::Header,
            true,
            "Names the effect you intend (a ticket to create, a change, a move, a comment): a \
             fresh UUID per new effect (e.g. `0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79`), sent \
             unchanged on every retry. Printable ASCII characters without spaces, bare or as an \
             RFC 8941 quoted string.",
            key_header_schema(),
        )]
    }
}

/// The schema of the header's value, its lengths from the kitchen's.
fn key_header_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
    let pattern = format!(
        r#"^(?:[!#-~][!-~]{{{},{}}}|"(?:[!#-\[\]-~]|\\["\\]){{{},{}}}")$"#,
        MIN_KEY_LEN - 1,
        MAX_KEY_LEN - 1,
        MIN_KEY_LEN,
        MAX_KEY_LEN - 2,
    );
    ObjectBuilder::new()
        .schema_type(SchemaType::Type(Type::String))
        .min_length(Some(MIN_KEY_LEN))
        .max_length(Some(MAX_KEY_LEN))
        .pattern(Some(pattern))
        .build()
}

/// The operation key a write of `action` names, or why there is none.
pub fn from_headers(headers: &HeaderMap, action: Action) -> Result<OperationKey, RestError> {
    let malformed = |why: String| {
        RestError::MalformedIdempotencyKey(format!("{why} {}", vocabulary::nothing_done(action)))
    };
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let value = values
        .next()
        .ok_or(RestError::MissingIdempotencyKey(action))?;
    if values.next().is_some() {
        return Err(malformed(format!(
            "Send exactly one Idempotency-Key header, for example `Idempotency-Key: {EXAMPLE_KEY}`."
        )));
    }
    let raw = value.to_str().map_err(|_| {
        malformed(format!(
            "The Idempotency-Key must be printable ASCII, for example `{EXAMPLE_KEY}`."
        ))
    })?;
    let raw = raw.trim_matches(|c| c == ' ' || c == '\t');
    let key = if raw.starts_with('"') {
        unquote_sf_string(raw).ok_or_else(|| {
            malformed(format!(
                "The Idempotency-Key starts with a double quote but is not a valid RFC 8941 \
                 string. Send it bare (`{EXAMPLE_KEY}`) or quoted (`\"{EXAMPLE_KEY}\"`)."
            ))
        })?
    } else {
        raw.to_owned()
    };
    OperationKey::parse(key).map_err(|e| malformed(e.to_string()))
}

/// The content of an RFC 8941 sf-string: `"` … `"` with `\"` and `\\` as
/// the only escapes, printable ASCII inside.
fn unquote_sf_string(raw: &str) -> Option<String> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next()? {
                e @ ('"' | '\\') => out.push(e),
                _ => return None,
            },
            '"' => return None,
            ' '..='~' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn parse(values: &[&str]) -> Result<String, String> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(
                IDEMPOTENCY_KEY,
                HeaderValue::from_str(v).expect("header value"),
            );
        }
        from_headers(&headers, Action::CreateTicket)
            .map(|k| k.as_str().to_owned())
            .map_err(|e| format!("{e:?}"))
    }

    #[test]
    fn reads_bare_and_quoted_keys_alike() {
        assert_eq!(parse(&[EXAMPLE_KEY]), Ok(EXAMPLE_KEY.to_owned()));
        assert_eq!(
            parse(&[&format!("\"{EXAMPLE_KEY}\"")]),
            Ok(EXAMPLE_KEY.to_owned())
        );
        assert_eq!(
            parse(&[r#""ab\"cd\\efgh""#]),
            Ok(r#"ab"cd\efgh"#.to_owned())
        );
    }

    #[test]
    fn refuses_what_is_not_one_valid_key() {
        assert!(parse(&[]).is_err_and(|e| e.contains("MissingIdempotencyKey")));
        for bad in [
            &["short"][..],
            &["\"unterminated"],
            &["\"bad\\escape-x\""],
            &["k1-aaaaaa", "k2-bbbbbb"],
            &["\"has space in it\""],
        ] {
            assert!(
                parse(bad).is_err_and(|e| e.contains("Malformed")),
                "{bad:?}"
            );
        }
    }
}
