//! HTTP rules that hold for both doors, checked before either sees a
//! request, and answered in the dialect of the door addressed: a problem
//! document on REST, a JSON-RPC error on `/mcp`.
//!
//! - `Authorization`, `Host` and `Origin` must come at most once: a proxy
//!   that reads the last value while we read the first would disagree with
//!   us about who is calling and from where.
//! - `Host` is a host and a port, never `user@host`: the DNS-rebinding check
//!   must see the name the client really used.
//! - A request body is plain or gzip (decoded by the layer after this one);
//!   any other `Content-Encoding` is refused with `415` naming the header,
//!   never misread as JSON.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, HeaderName, StatusCode, header};
use rest_door::RestError;

/// Where the MCP door is mounted; requests under it get JSON-RPC answers.
pub(crate) const MCP_PATH: &str = "/mcp";

/// Headers a request may carry at most once.
const SINGLE_HEADERS: [HeaderName; 3] = [header::AUTHORIZATION, header::HOST, header::ORIGIN];

/// Middleware: refuses a request that breaks one of the rules above.
pub(crate) async fn check_request(request: Request, next: Next) -> Response {
    match screen(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let path = request.uri().path();
            if path == MCP_PATH || path.starts_with("/mcp/") {
                mcp_door::http_edge::refusal(refusal.status(), &refusal.message())
            } else {
                refusal.into_rest().into_response()
            }
        }
    }
}

/// Why a request was refused at the edge.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// A header that must come once came more often.
    Repeated(HeaderName),
    /// `Host` with user information or otherwise not a host.
    MalformedHost,
    /// A `Content-Encoding` the server cannot decode.
    Encoding(String),
}

impl Refusal {
    fn status(&self) -> StatusCode {
        match self {
            Self::Repeated(_) | Self::MalformedHost => StatusCode::BAD_REQUEST,
            Self::Encoding(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }

    fn message(&self) -> String {
        match self {
            Self::Repeated(name) => format!(
                "The {} header was sent more than once; send it once. Nothing was done.",
                display_name(name)
            ),
            Self::MalformedHost => "The Host header must be a host name with an optional port \
                 (no user information). Nothing was done."
                .into(),
            Self::Encoding(coding) => format!(
                "Content-Encoding {coding:?} is not supported: send the body uncompressed or with \
                 Content-Encoding: gzip. Nothing was done."
            ),
        }
    }

    fn into_rest(self) -> RestError {
        match self {
            Self::Repeated(_) | Self::MalformedHost => RestError::BadRequest(self.message()),
            Self::Encoding(_) => RestError::UnsupportedContentEncoding(self.message()),
        }
    }
}

/// `Authorization`, as people write it (`HeaderName` is lower case).
fn display_name(name: &HeaderName) -> String {
    name.as_str()
        .split('-')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect::<Vec<_>>()
        .join("-")
}

fn screen(headers: &HeaderMap) -> Result<(), Refusal> {
    if let Some(name) = SINGLE_HEADERS
        .iter()
        .find(|name| headers.get_all(*name).iter().count() > 1)
    {
        return Err(Refusal::Repeated(name.clone()));
    }
    if let Some(host) = headers.get(header::HOST) {
        let host = host.to_str().map_err(|_| Refusal::MalformedHost)?;
        if host.contains('@') || host.parse::<http::uri::Authority>().is_err() {
            return Err(Refusal::MalformedHost);
        }
    }
    let codings: Vec<String> = headers
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .flat_map(|v| {
            String::from_utf8_lossy(v.as_bytes())
                .split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .filter(|c| !c.is_empty())
                .collect::<Vec<_>>()
        })
        .collect();
    match codings.as_slice() {
        [] => Ok(()),
        [one] if one == "gzip" || one == "identity" => Ok(()),
        _ => Err(Refusal::Encoding(codings.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(HeaderName, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(name.clone(), HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn ordinary_requests_pass() {
        assert_eq!(
            screen(&headers(&[
                (header::HOST, "localhost:8080"),
                (header::AUTHORIZATION, "Bearer x"),
                (header::ORIGIN, "http://localhost:3000"),
                (header::CONTENT_ENCODING, "gzip"),
            ])),
            Ok(())
        );
        assert_eq!(
            screen(&headers(&[(header::CONTENT_ENCODING, "Identity")])),
            Ok(())
        );
        assert_eq!(screen(&headers(&[(header::HOST, "[::1]:80")])), Ok(()));
    }

    #[test]
    fn a_security_header_sent_twice_is_refused() {
        for name in SINGLE_HEADERS {
            let refusal = screen(&headers(&[(name.clone(), "a"), (name.clone(), "b")]));
            assert_eq!(refusal, Err(Refusal::Repeated(name)));
        }
    }

    #[test]
    fn a_host_with_user_information_is_refused() {
        assert_eq!(
            screen(&headers(&[(header::HOST, "evil@localhost")])),
            Err(Refusal::MalformedHost)
        );
    }

    #[test]
    fn an_encoding_other_than_gzip_is_refused_by_name() {
        for coding in ["br", "deflate", "gzip, br", "compress"] {
            let refusal =
                screen(&headers(&[(header::CONTENT_ENCODING, coding)])).expect_err("refused");
            assert_eq!(refusal.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
            assert!(refusal.message().contains("Content-Encoding"), "{coding}");
        }
    }
}
