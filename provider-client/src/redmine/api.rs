//! One call to Redmine's REST API, and what its failure proves.
//!
//! Redmine answers JSON only on `.json` paths, and a proxy in front of it
//! answers with its own HTML pages: an answer is judged by its status, and
//! its body read as JSON only when it says it is JSON.

use kitchen::error_chain;
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::wire::Errors;

/// The API key header (Redmine also takes `?key=`, which would put the key
/// in access logs).
const API_KEY: &str = "x-redmine-api-key";

/// A client for one Redmine, acting as one user.
#[derive(Clone)]
pub(crate) struct Api {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
}

/// A call that got no answer.
#[derive(Debug)]
pub(crate) enum Failure {
    /// No byte of the request left (refused, unresolvable, TLS handshake
    /// failed): provably nothing was done.
    NotSent(String),
    /// It may have arrived: a timeout, a connection cut after sending.
    MaybeSent(String),
}

impl Failure {
    pub(crate) fn into_reason(self) -> String {
        match self {
            Self::NotSent(why) | Self::MaybeSent(why) => why,
        }
    }
}

/// An answer, read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    json: bool,
    body: String,
}

impl Api {
    pub(crate) fn new(client: reqwest::Client, base_url: &str, api_key: &str) -> Self {
        Self {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
        }
    }

    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    /// `method path?query` with a JSON `body`.
    pub(crate) async fn call(
        &self,
        method: Method,
        path: &str,
        query: &[(String, String)],
        body: Option<Value>,
    ) -> Result<Answer, Failure> {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base_url))
            .header(API_KEY, &self.api_key)
            .header(reqwest::header::ACCEPT, "application/json");
        if !query.is_empty() {
            request = request.query(query);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_connect() => {
                return Err(Failure::NotSent(error_chain(&e.without_url())));
            }
            Err(e) => return Err(Failure::MaybeSent(error_chain(&e.without_url()))),
        };
        let status = response.status();
        let json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("json"));
        match response.text().await {
            Ok(body) => Ok(Answer { status, json, body }),
            Err(e) => Err(Failure::MaybeSent(format!(
                "{status}, then {}",
                error_chain(&e.without_url())
            ))),
        }
    }
}

impl Answer {
    /// The body as `T`, if it is JSON and reads as one.
    pub(crate) fn json<T: DeserializeOwned>(&self) -> Result<T, String> {
        if !self.json {
            return Err(format!("{} is not JSON", self.status));
        }
        serde_json::from_str(&self.body).map_err(|e| format!("{}: {e}", self.status))
    }

    /// The status with what Redmine said: its validation errors, or the
    /// start of a body that is not an HTML page.
    pub(crate) fn describe(&self) -> String {
        if let Ok(Errors { errors }) = self.json::<Errors>() {
            return format!("{}: {}", self.status.as_u16(), errors.join("; "));
        }
        let text = self.body.trim();
        if text.is_empty() || !self.json && text.starts_with('<') {
            self.status.to_string()
        } else {
            format!(
                "{}: {}",
                self.status,
                text.chars().take(200).collect::<String>()
            )
        }
    }
}

#[cfg(test)]
pub(crate) fn answer(status: u16, json: bool, body: &str) -> Answer {
    Answer {
        status: StatusCode::from_u16(status).expect("a status"),
        json,
        body: body.to_owned(),
    }
}
