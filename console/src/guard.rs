//! Who may use the console: the operator token (when one is configured),
//! and the form token that proves a settle was posted from the console's
//! own page, not from another site through an operator's browser.

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use http::{StatusCode, header};
use subtle::ConstantTimeEq as _;

use crate::Console;

/// The operator token, if any, and this process's form token.
#[derive(Clone)]
pub(crate) struct Guard {
    token: Option<String>,
    form_token: String,
}

impl Guard {
    pub(crate) fn new(token: Option<String>) -> Self {
        Self {
            token,
            form_token: uuid::Uuid::new_v4().simple().to_string(),
        }
    }

    /// The hidden field every form carries.
    pub(crate) fn form_token(&self) -> &str {
        &self.form_token
    }

    /// Whether `presented` is this process's form token.
    pub(crate) fn is_form_token(&self, presented: &str) -> bool {
        bool::from(presented.as_bytes().ct_eq(self.form_token.as_bytes()))
    }

    /// Whether `request` carries the operator token (always, without one).
    fn admits(&self, request: &Request) -> bool {
        let Some(token) = &self.token else {
            return true;
        };
        let Some(value) = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
        else {
            return false;
        };
        let presented = if let Some(bearer) = value.strip_prefix("Bearer ") {
            bearer.to_owned()
        } else if let Some(basic) = value.strip_prefix("Basic ") {
            // Any user name; the password is the token.
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(basic.trim())
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .unwrap_or_default();
            decoded
                .split_once(':')
                .map(|(_, password)| password.to_owned())
                .unwrap_or_default()
        } else {
            return false;
        };
        bool::from(presented.as_bytes().ct_eq(token.as_bytes()))
    }
}

/// Answers `401` (with a Basic challenge a browser prompts for) unless the
/// request carries the operator token.
pub(crate) async fn require_operator(
    State(console): State<Console>,
    request: Request,
    next: Next,
) -> Response {
    if console.guard.admits(&request) {
        return next.run(request).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(
            header::WWW_AUTHENTICATE,
            "Basic realm=\"tickets console\", charset=\"UTF-8\"",
        )],
        "The console needs the operator token (ADMIN_TOKEN): send it as the password of HTTP \
         Basic (any user name), or as a bearer token.",
    )
        .into_response()
}
