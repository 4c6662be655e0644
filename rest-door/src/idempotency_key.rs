//! Reading the `Idempotency-Key` header: a bare token (as Stripe sends it)
//! or an RFC 8941 string (as the IETF httpapi draft defines it).

use http::HeaderMap;
use kitchen::OperationKey;

use crate::error::{EXAMPLE_KEY, RestError};

/// The header's name.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The header as the OpenAPI document describes it: what [`from_headers`]
/// accepts, so that a value the schema calls valid is never refused. Bare:
/// 8 to 255 printable ASCII characters without spaces, not starting with
/// `"`. Quoted (RFC 8941 sf-string): such a key between double quotes, `"`
/// and `\` escaped by a backslash; `maxLength` counts the quotes and
/// escapes too, so the schema leaves out the quoted keys longer than 255
/// characters in all that the server also reads. No `example`: a fixed
/// example key would be sent with every generated body, and a key names
/// one request.
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Header)]
#[expect(
    dead_code,
    reason = "never built: only its derived OpenAPI parameter is used"
)]
pub(crate) struct IdempotencyKeyHeader {
    /// Names the ticket you intend: a fresh UUID per new ticket (e.g.
    /// `0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79`), sent unchanged on every
    /// retry. 8 to 255 printable ASCII characters without spaces, bare or
    /// as an RFC 8941 quoted string.
    #[param(
        rename = "Idempotency-Key",
        required = true,
        min_length = 8,
        max_length = 255,
        pattern = r#"^(?:[!#-~][!-~]{7,254}|"(?:[!#-\[\]-~]|\\["\\]){8,253}")$"#
    )]
    idempotency_key: String,
}

/// The operation key a write names, or why there is none.
pub fn from_headers(headers: &HeaderMap) -> Result<OperationKey, RestError> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let value = values.next().ok_or(RestError::MissingIdempotencyKey)?;
    if values.next().is_some() {
        return Err(RestError::MalformedIdempotencyKey(format!(
            "Send exactly one Idempotency-Key header, for example `Idempotency-Key: {EXAMPLE_KEY}`."
        )));
    }
    let raw = value.to_str().map_err(|_| {
        RestError::MalformedIdempotencyKey(format!(
            "The Idempotency-Key must be printable ASCII, for example `{EXAMPLE_KEY}`."
        ))
    })?;
    let raw = raw.trim_matches(|c| c == ' ' || c == '\t');
    let key = if raw.starts_with('"') {
        unquote_sf_string(raw).ok_or_else(|| {
            RestError::MalformedIdempotencyKey(format!(
                "The Idempotency-Key starts with a double quote but is not a valid RFC 8941 \
                 string. Send it bare (`{EXAMPLE_KEY}`) or quoted (`\"{EXAMPLE_KEY}\"`)."
            ))
        })?
    } else {
        raw.to_owned()
    };
    OperationKey::parse(key).map_err(|e| RestError::MalformedIdempotencyKey(e.to_string()))
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
        from_headers(&headers)
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
