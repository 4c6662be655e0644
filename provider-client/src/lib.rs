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
//! TLS is rustls (no OpenSSL, no system TLS library): an `https://`
//! provider is verified against the system's roots plus, when given, an
//! extra CA bundle ([`ProviderTls::extra_roots_pem`]), for a tracker behind
//! a private CA. A handshake that fails proves that no byte of a request
//! left, so it is [`Dispatched::NotSent`], like a refused connection.
//!
//! # Layout
//! - [`HttpProvider`]: the adapter; `classify` (private) holds the rules.
//! - [`ProviderTls`]: which certificates the adapter trusts.

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
pub enum SetupError {
    /// The HTTP client refused its settings.
    #[error("could not set up the HTTP client for the ticket provider: {0}")]
    Client(#[from] reqwest::Error),
    /// The extra CA bundle holds no certificate it could read.
    #[error(
        "the provider's extra CA bundle holds no PEM certificate (expected one or more \
         -----BEGIN CERTIFICATE----- blocks): {0}"
    )]
    ExtraRoots(String),
}

/// Which certificates an `https://` provider may present.
#[derive(Debug, Clone, Default)]
pub struct ProviderTls {
    /// PEM certificates trusted besides the system's roots (a private CA).
    pub extra_roots_pem: Option<Vec<u8>>,
}

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
    /// An adapter for the tracker at `base_url` (e.g. `http://127.0.0.1:9090`
    /// or `https://tracker.example`), trusting the system's roots.
    /// `timeout` bounds each whole call, and the connection (TLS handshake
    /// included) at most 5 s of it.
    pub fn new(base_url: &str, timeout: Duration) -> Result<Self, SetupError> {
        Self::with_tls(base_url, timeout, &ProviderTls::default())
    }

    /// As [`HttpProvider::new`], also trusting what `tls` adds.
    pub fn with_tls(
        base_url: &str,
        timeout: Duration,
        tls: &ProviderTls,
    ) -> Result<Self, SetupError> {
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)));
        if let Some(pem) = &tls.extra_roots_pem {
            let roots = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| SetupError::ExtraRoots(describe(&e)))?;
            if roots.is_empty() {
                return Err(SetupError::ExtraRoots("none found".into()));
            }
            builder = builder.tls_certs_merge(roots);
        }
        let client = builder.build()?;
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
        classify(status, &text, replayed, &request.external_ref)
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
        match response.text().await {
            Ok(body) => read_search(&body, external_ref),
            Err(e) => Lookup::Failed(format!("unreadable search answer: {}", describe(&e))),
        }
    }
}

/// What a search's answer proves. Only an answer that is well formed and
/// about this reference settles anything: tickets that all carry another
/// reference mean the provider did not search for ours (a filter it
/// ignored, a broken index), which proves no absence.
fn read_search(body: &str, external_ref: &str) -> Lookup {
    let found = match serde_json::from_str::<SearchBody>(body) {
        Ok(found) => found,
        Err(e) => return Lookup::Failed(format!("unreadable search answer: {e}")),
    };
    let strangers = found
        .tickets
        .iter()
        .filter(|t| t.external_ref != external_ref)
        .count();
    // The reference is the effect's name: any ticket carrying it is the
    // effect (there is at most one unless something else made duplicates,
    // and then the oldest, listed first, is the original).
    match found
        .tickets
        .into_iter()
        .find(|t| t.external_ref == external_ref)
    {
        Some(ticket) => Lookup::Found(ticket.into()),
        None if strangers > 0 => Lookup::Failed(format!(
            "the search for {external_ref} answered {strangers} tickets for other references \
             and none for it: the provider did not search for it, so absence is not proven"
        )),
        None => Lookup::Absent,
    }
}

/// What a create's answer proves, for the create of `external_ref`.
fn classify(status: StatusCode, body: &str, replayed: bool, external_ref: &str) -> Dispatched {
    if status.is_success() {
        return match serde_json::from_str::<TicketBody>(body) {
            Ok(ticket) if ticket.external_ref == external_ref => Dispatched::Created {
                ticket: ticket.into(),
                replayed,
            },
            // A yes about another ticket says nothing about ours, which may
            // or may not have been made: only a search can tell.
            Ok(ticket) => Dispatched::Ambiguous(format!(
                "{status} with ticket {} for another reference ({}, not {external_ref})",
                ticket.id, ticket.external_ref
            )),
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

    fn classify(status: StatusCode, body: &str, replayed: bool) -> Dispatched {
        super::classify(status, body, replayed, "r")
    }

    #[test]
    fn a_yes_that_is_not_about_this_ticket_is_ambiguous() {
        for body in [
            r#"{"id":"SIM-1","external_ref":"someone-else"}"#,
            "not json",
            "",
            r#"{"id":"SIM-1"}"#,
            r#"[{"id":"SIM-1","external_ref":"r"}]"#,
        ] {
            assert!(
                matches!(
                    classify(StatusCode::CREATED, body, false),
                    Dispatched::Ambiguous(_)
                ),
                "{body}"
            );
        }
    }

    #[test]
    fn a_search_proves_absence_only_when_it_answered_about_this_reference() {
        let ours = r#"{"id":"SIM-1","external_ref":"r"}"#;
        let theirs = r#"{"id":"SIM-2","external_ref":"q"}"#;
        assert_eq!(read_search(r#"{"tickets":[]}"#, "r"), Lookup::Absent);
        assert!(matches!(
            read_search(&format!(r#"{{"tickets":[{theirs},{ours}]}}"#), "r"),
            Lookup::Found(t) if t.id == "SIM-1"
        ));
        for garbage in [
            format!(r#"{{"tickets":[{theirs}]}}"#),
            "not json".to_owned(),
            String::new(),
            r#"{"tickets":[{"id":"SIM-1"}]}"#.to_owned(),
            r#"{"results":[]}"#.to_owned(),
        ] {
            assert!(
                matches!(read_search(&garbage, "r"), Lookup::Failed(_)),
                "{garbage}"
            );
        }
    }

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
