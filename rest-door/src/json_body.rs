//! Reading a JSON body with this door's errors: `415` for another media
//! type, `413` over the limit, `400` for bad JSON or the wrong shape.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use crate::error::RestError;

/// Parses `body` as JSON of type `T`, after checking its media type.
pub(crate) fn parse<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, RestError> {
    if !is_json(headers) {
        return Err(RestError::UnsupportedMediaType);
    }
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            RestError::PayloadTooLarge
        } else {
            // A broken chunked frame or a body that is not valid gzip.
            RestError::BadRequest(format!(
                "The body could not be read: {}. Nothing was created.",
                rejection.body_text()
            ))
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| match e.classify() {
        serde_json::error::Category::Data => RestError::InvalidBody(e.to_string()),
        _ => RestError::MalformedJson(e.to_string()),
    })
}

/// `application/json`, or any `application/*+json`, with any parameters.
fn is_json(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}
