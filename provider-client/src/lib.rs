//! An HTTP adapter for the kitchen's [`TicketProvider`] port: it carries a
//! dispatch or a search to a hosted tracker's REST API and sorts the reply
//! into what the kitchen needs to know.
//!
//! Sorting is the whole job, and it errs one way only: anything that might
//! have made a ticket is [`Dispatched::Ambiguous`]. Only a connection that
//! was never made ([`Dispatched::NotSent`]) or a refusal on the merits
//! ([`Dispatched::Rejected`], a 4xx validation answer) proves that nothing
//! was made; a wrong "nothing was made" is how duplicates happen.
//!
//! The API it speaks is the one `drivers/`'s provider simulator serves
//! (`docs/provider-simulator.md`): `POST /api/tickets` with an
//! `Idempotency-Key`, and `GET /api/tickets?external_ref=`. An adapter for
//! another tracker is another implementation of the same trait.
//!
//! # Layout
//! - [`HttpProvider`]: the adapter; `classify` (private) holds the rules.

use std::time::Duration;

use kitchen::{
    DispatchRequest, Dispatched, Lookup, ProviderFuture, ProviderTicket, TicketProvider,
};
use reqwest::StatusCode;
use serde::{Deserialize, Serialize};

/// A hosted tracker reached over HTTP.
#[derive(Debug, Clone)]
pub struct HttpProvider {
    client: reqwest::Client,
    base_url: String,
}

/// The adapter could not be built.
#[derive(Debug, thiserror::Error)]
#[error("could not set up the HTTP client for the ticket provider: {0}")]
pub struct SetupError(#[from] reqwest::Error);

#[derive(Serialize)]
struct CreateBody<'a> {
    external_ref: &'a str,
    project_id: &'a str,
    title: &'a str,
    description: Option<&'a str>,
    priority: &'a str,
}

#[derive(Deserialize)]
struct TicketBody {
    id: String,
    external_ref: String,
}

#[derive(Deserialize)]
struct SearchBody {
    tickets: Vec<TicketBody>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: String,
}

impl From<TicketBody> for ProviderTicket {
    fn from(t: TicketBody) -> Self {
        Self {
            id: t.id,
            external_ref: t.external_ref,
        }
    }
}

impl HttpProvider {
    /// An adapter for the tracker at `base_url` (e.g. `http://127.0.0.1:9090`).
    /// `timeout` bounds each whole call; `connect_timeout` the connection.
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self, SetupError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()?;
        Ok(Self {
            client,
            base_url: base_url.trim_end_matches('/').to_owned(),
        })
    }

    async fn create(&self, request: &DispatchRequest) -> Dispatched {
        let body = CreateBody {
            external_ref: &request.external_ref,
            project_id: &request.project_id,
            title: &request.title,
            description: request.description.as_deref(),
            priority: &request.priority,
        };
        let sent = self
            .client
            .post(format!("{}/api/tickets", self.base_url))
            .header("idempotency-key", &request.external_ref)
            .json(&body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            // Refused or unresolvable: no byte of the request left us.
            Err(e) if e.is_connect() => return Dispatched::NotSent(describe(&e)),
            // Anything else (a timeout, a reset after sending) may have
            // been acted on.
            Err(e) => return Dispatched::Ambiguous(describe(&e)),
        };
        let status = response.status();
        let replayed = status == StatusCode::OK
            || response
                .headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => return Dispatched::Ambiguous(format!("{status}, then {}", describe(&e))),
        };
        classify(status, &text, replayed)
    }

    async fn search(&self, external_ref: &str) -> Lookup {
        let sent = self
            .client
            .get(format!("{}/api/tickets", self.base_url))
            .query(&[("external_ref", external_ref)])
            .send()
            .await;
        let response = match sent {
            Ok(r) if r.status() == StatusCode::OK => r,
            Ok(r) => return Lookup::Failed(format!("search answered {}", r.status())),
            Err(e) => return Lookup::Failed(describe(&e)),
        };
        match response.json::<SearchBody>().await {
            // The reference is the effect's name: any ticket carrying it is
            // the effect (there is at most one unless something else made
            // duplicates, and then the oldest is the original).
            Ok(found) => match found
                .tickets
                .into_iter()
                .find(|t| t.external_ref == external_ref)
            {
                Some(ticket) => Lookup::Found(ticket.into()),
                None => Lookup::Absent,
            },
            Err(e) => Lookup::Failed(format!("unreadable search answer: {}", describe(&e))),
        }
    }
}

/// What a create's answer proves.
fn classify(status: StatusCode, body: &str, replayed: bool) -> Dispatched {
    if status.is_success() {
        return match serde_json::from_str::<TicketBody>(body) {
            Ok(ticket) => Dispatched::Created {
                ticket: ticket.into(),
                replayed,
            },
            // It said yes, so something may well have been made.
            Err(e) => Dispatched::Ambiguous(format!("{status} with an unreadable ticket: {e}")),
        };
    }
    let said = serde_json::from_str::<ErrorBody>(body)
        .map(|b| b.error)
        .unwrap_or_else(|_| body.chars().take(200).collect());
    match status {
        // Throttled: turned away before any work.
        StatusCode::TOO_MANY_REQUESTS => Dispatched::NotSent(format!("{status}: {said}")),
        // A timeout or a conflict on the key says nothing about the effect.
        StatusCode::REQUEST_TIMEOUT | StatusCode::CONFLICT => {
            Dispatched::Ambiguous(format!("{status}: {said}"))
        }
        s if s.is_client_error() => Dispatched::Rejected(format!("{status}: {said}")),
        // 5xx (and anything stranger): the provider may have committed
        // before failing.
        _ => Dispatched::Ambiguous(format!("{status}: {said}")),
    }
}

/// The error and its causes on one line.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl TicketProvider for HttpProvider {
    fn dispatch<'a>(&'a self, request: &'a DispatchRequest) -> ProviderFuture<'a, Dispatched> {
        Box::pin(self.create(request))
    }

    fn find_by_reference<'a>(&'a self, external_ref: &'a str) -> ProviderFuture<'a, Lookup> {
        Box::pin(self.search(external_ref))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_refusal_on_the_merits_proves_nothing_was_made() {
        let ticket = r#"{"id":"SIM-1","external_ref":"r"}"#;
        assert!(matches!(
            classify(StatusCode::CREATED, ticket, false),
            Dispatched::Created {
                replayed: false,
                ..
            }
        ));
        assert!(matches!(
            classify(StatusCode::OK, ticket, true),
            Dispatched::Created { replayed: true, .. }
        ));
        assert!(matches!(
            classify(StatusCode::CREATED, "{", false),
            Dispatched::Ambiguous(_)
        ));
        assert!(matches!(
            classify(StatusCode::UNPROCESSABLE_ENTITY, r#"{"error":"title is empty"}"#, false),
            Dispatched::Rejected(m) if m.contains("title is empty")
        ));
        for status in [
            StatusCode::INTERNAL_SERVER_ERROR,
            StatusCode::BAD_GATEWAY,
            StatusCode::SERVICE_UNAVAILABLE,
            StatusCode::REQUEST_TIMEOUT,
            StatusCode::CONFLICT,
        ] {
            assert!(
                matches!(classify(status, "", false), Dispatched::Ambiguous(_)),
                "{status}"
            );
        }
        assert!(matches!(
            classify(StatusCode::TOO_MANY_REQUESTS, "", false),
            Dispatched::NotSent(_)
        ));
    }
}
