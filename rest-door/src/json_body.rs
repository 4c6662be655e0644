//! Reading a JSON body with this door's errors: `415` for another media
//! type, `413` over the limit, `400` for bad JSON or the wrong shape. Each
//! error names the write it refused, so its words say what did not happen.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use http::{HeaderMap, StatusCode, header};
use kitchen::{Action, FieldViolation, WriteOptions};
use serde::de::DeserializeOwned;

use crate::error::RestError;
use crate::vocabulary;

/// The media types of a JSON merge patch (RFC 7396), which a `PATCH` takes.
pub(crate) const MERGE_PATCH: &[&str] = &["application/merge-patch+json", "application/json"];

/// Parses `body` as JSON of type `T` for a write of `action`, after checking
/// that it is `application/json` or any `application/*+json`.
pub(crate) fn parse<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    action: Action,
) -> Result<T, RestError> {
    let essence = essence(headers);
    let json = essence.as_deref().is_some_and(|e| {
        e == "application/json" || (e.starts_with("application/") && e.ends_with("+json"))
    });
    if !json {
        return Err(RestError::UnsupportedMediaType(action));
    }
    read(body, action)
}

/// [`parse`] for a create or a comment: the body may also say
/// `"confirm_new": true` (the caller means a new one even if it looks like
/// a repeat), which is taken out before `T` reads the rest. A
/// `confirm_new` that is not a boolean is refused by name.
pub(crate) fn parse_confirming<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    action: Action,
) -> Result<(T, WriteOptions), RestError> {
    let bytes = body.map_err(|rejection| unreadable(&rejection, action))?;
    let mut object: serde_json::Map<String, serde_json::Value> =
        parse(headers, Ok(bytes.clone()), action)?;
    let confirm_new = match object.remove("confirm_new") {
        // Read from the bytes, so a wrong shape is reported with its place.
        None => return Ok((read(Ok(bytes), action)?, WriteOptions::default())),
        // As for every optional field: `null` is "not sent".
        Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::Bool(confirm)) => confirm,
        Some(_) => {
            return Err(RestError::Validation(vec![FieldViolation {
                field: "confirm_new".into(),
                code: "not_a_boolean",
                message: "confirm_new must be true or false".into(),
            }]));
        }
    };
    let request = serde_json::from_value(serde_json::Value::Object(object)).map_err(|e| {
        RestError::InvalidBody {
            why: e.to_string(),
            action,
        }
    })?;
    Ok((request, WriteOptions { confirm_new }))
}

/// Parses `body` as JSON of type `T` for a write of `action`, after checking
/// that its media type is one of `accepted`.
pub(crate) fn parse_as<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    action: Action,
    accepted: &[&str],
) -> Result<T, RestError> {
    if !essence(headers).is_some_and(|e| accepted.contains(&e.as_str())) {
        return Err(RestError::UnsupportedMediaType(action));
    }
    read(body, action)
}

/// A body that never fully arrived: over the limit, or broken on the way.
fn unreadable(rejection: &BytesRejection, action: Action) -> RestError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        RestError::PayloadTooLarge(action)
    } else {
        // A broken chunked frame or a body that is not valid gzip.
        RestError::BadRequest(format!(
            "The body could not be read: {}. {}",
            rejection.body_text(),
            vocabulary::nothing_done(action)
        ))
    }
}

fn read<T: DeserializeOwned>(
    body: Result<Bytes, BytesRejection>,
    action: Action,
) -> Result<T, RestError> {
    let bytes = body.map_err(|rejection| unreadable(&rejection, action))?;
    // Every body is one JSON object. serde would also read a struct from an
    // array of its fields in order (`[]` as an empty patch, `["x"]` as a
    // title), which no caller means: anything but an object is refused here,
    // after the JSON itself is found well-formed (so broken JSON is still
    // called that).
    let first = bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    if first != Some(&b'{') {
        return Err(
            match serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
                Err(e) => RestError::MalformedJson {
                    why: e.to_string(),
                    action,
                },
                Ok(_) => RestError::InvalidBody {
                    why: "it must be one JSON object (`{...}`), not an array, a string, a number, \
                          a boolean or null"
                        .into(),
                    action,
                },
            },
        );
    }
    serde_json::from_slice(&bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => RestError::InvalidBody {
            why: e.to_string(),
            action,
        },
        _ => RestError::MalformedJson {
            why: e.to_string(),
            action,
        },
    })
}

/// The media type of the body, lowercased, without parameters.
fn essence(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    Some(
        value
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase(),
    )
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;
    use kitchen::TransitionDraft;

    use super::*;

    fn read(body: &'static str) -> Result<TransitionDraft, String> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        parse(&headers, Ok(Bytes::from(body)), Action::TransitionTicket).map_err(|e| match e {
            RestError::MalformedJson { .. } => "malformed".to_owned(),
            RestError::InvalidBody { why, .. } => format!("invalid: {why}"),
            other => format!("{other:?}"),
        })
    }

    #[test]
    fn only_a_json_object_is_a_body() {
        assert!(read(r#" {"to":"open"}"#).is_ok());
        // serde alone would read these arrays as the struct's fields.
        for not_an_object in [
            r#"["in_progress"]"#,
            "[]",
            r#""open""#,
            "7",
            "null",
            " true",
        ] {
            assert!(
                read(not_an_object).is_err_and(|e| e.contains("one JSON object")),
                "{not_an_object}"
            );
        }
        for broken in ["", "[", r#"{"to":"#, "nul"] {
            assert_eq!(
                read(broken).err().as_deref(),
                Some("malformed"),
                "{broken:?}"
            );
        }
    }
}
