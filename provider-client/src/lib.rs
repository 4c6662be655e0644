//! An HTTP adapter for the kitchen's [`TicketProvider`] port: it carries a
//! write or a search to a hosted tracker's REST API and sorts the reply
//! into what the kitchen needs to know.
//!
//! Sorting is the whole job, and it errs one way only: anything that might
//! have done the write is [`Dispatched::Ambiguous`]. Only a connection that
//! was never made ([`Dispatched::NotSent`]) or a refusal on the merits
//! ([`Dispatched::Rejected`], a 4xx answer) proves that nothing was made; a
//! wrong "nothing was made" is how duplicates happen.
//!
//! [`HttpProvider`] speaks the API `drivers/`'s provider simulator serves
//! (`docs/provider-simulator.md`): `POST /api/tickets`, `PATCH
//! /api/tickets/{id}`, `POST /api/tickets/{id}/transitions` and `POST
//! /api/tickets/{id}/comments`, each with an `Idempotency-Key`, and a
//! search by `external_ref` in `/api/tickets`, `/api/changes` and
//! `/api/comments`. [`redmine::RedmineProvider`] speaks Redmine's, which
//! takes no idempotency key (`docs/providers.md` walks through it, as the
//! example for the next tracker).
//!
//! TLS is rustls (no OpenSSL, no system TLS library): an `https://`
//! provider is verified against the system's roots plus, when given, an
//! extra CA bundle ([`ProviderTls::extra_roots_pem`]), for a tracker behind
//! a private CA. A handshake that fails proves that no byte of a request
//! left, so it is [`Dispatched::NotSent`], like a refused connection.
//!
//! # Layout
//! - this file: [`HttpProvider`], the adapter, and [`ProviderTls`], which
//!   certificates it trusts;
//! - `wire.rs`: the tracker's JSON and its reading into the port's types;
//! - `classify.rs`: what an answer proves (the rules);
//! - `redmine/`: the Redmine adapter.

mod classify;
pub mod redmine;
mod wire;

use std::time::Duration;

use kitchen::error_chain;
use kitchen::{
    DispatchRequest, Dispatched, EffectKind, Lookup, ProviderFuture, SearchRequest, TicketProvider,
};
use reqwest::StatusCode;

/// A hosted tracker reached over HTTP.
#[derive(Clone)]
pub struct HttpProvider {
    client: reqwest::Client,
    base_url: String,
}

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry the provider's credentials.
        f.debug_struct("HttpProvider")
            .field("base_url", &redacted(&self.base_url))
            .finish_non_exhaustive()
    }
}

/// `url` with any user name and password replaced by `***`, for logs: the
/// provider's credentials may be in its URL (`PROVIDER_URL`).
pub fn redacted(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut parsed) if !parsed.username().is_empty() || parsed.password().is_some() => {
            let _ = parsed.set_username("***");
            let _ = parsed.set_password(None);
            parsed.to_string()
        }
        Ok(_) => url.to_owned(),
        Err(_) => "(an unreadable URL)".to_owned(),
    }
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
        Ok(Self {
            client: http_client(timeout, tls)?,
            base_url: base_url.trim_end_matches('/').to_owned(),
        })
    }

    async fn write(&self, request: &DispatchRequest) -> Dispatched {
        let (method, path, body) = wire::request(&request.write, &request.external_ref);
        let sent = self
            .client
            .request(method, format!("{}{path}", self.base_url))
            .header("idempotency-key", &request.external_ref)
            .json(&body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            // Refused or unresolvable: no byte of the request left us.
            Err(e) if e.is_connect() => return Dispatched::NotSent(error_chain(&e.without_url())),
            // Anything else (a timeout, a reset after sending) may have
            // been acted on.
            Err(e) => return Dispatched::Ambiguous(error_chain(&e.without_url())),
        };
        let status = response.status();
        let replayed = status == StatusCode::OK
            || response
                .headers()
                .get("idempotent-replayed")
                .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
        let text = match response.text().await {
            Ok(text) => text,
            Err(e) => {
                return Dispatched::Ambiguous(format!(
                    "{status}, then {}",
                    error_chain(&e.without_url())
                ));
            }
        };
        classify::dispatched(
            request.write.kind(),
            request.write.ticket(),
            status,
            &text,
            replayed,
            &request.external_ref,
        )
    }

    async fn search(&self, request: &SearchRequest) -> Lookup {
        let path = match request.kind {
            EffectKind::Ticket => "/api/tickets",
            EffectKind::Change => "/api/changes",
            EffectKind::Comment => "/api/comments",
        };
        let mut query = vec![("external_ref", request.external_ref.as_str())];
        if let Some(ticket) = &request.ticket {
            query.push(("ticket_id", ticket));
        }
        let sent = self
            .client
            .get(format!("{}{path}", self.base_url))
            .query(&query)
            .send()
            .await;
        let response = match sent {
            Ok(r) if r.status() == StatusCode::OK => r,
            Ok(r) => return Lookup::Failed(format!("search answered {}", r.status())),
            Err(e) => return Lookup::Failed(error_chain(&e.without_url())),
        };
        match response.text().await {
            Ok(body) => classify::searched(request.kind, &body, &request.external_ref),
            Err(e) => Lookup::Failed(format!(
                "unreadable search answer: {}",
                error_chain(&e.without_url())
            )),
        }
    }
}

/// An HTTP client whose every call takes at most `timeout` (the connection,
/// TLS handshake included, at most 5 s of it), trusting the system's roots
/// and what `tls` adds.
pub(crate) fn http_client(
    timeout: Duration,
    tls: &ProviderTls,
) -> Result<reqwest::Client, SetupError> {
    let mut builder = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout.min(Duration::from_secs(5)));
    if let Some(pem) = &tls.extra_roots_pem {
        let roots = reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| SetupError::ExtraRoots(error_chain(&e)))?;
        if roots.is_empty() {
            return Err(SetupError::ExtraRoots("none found".into()));
        }
        builder = builder.tls_certs_merge(roots);
    }
    Ok(builder.build()?)
}

impl TicketProvider for HttpProvider {
    fn dispatch<'a>(&'a self, request: &'a DispatchRequest) -> ProviderFuture<'a, Dispatched> {
        Box::pin(self.write(request))
    }

    fn find_by_reference<'a>(&'a self, request: &'a SearchRequest) -> ProviderFuture<'a, Lookup> {
        Box::pin(self.search(request))
    }
}
