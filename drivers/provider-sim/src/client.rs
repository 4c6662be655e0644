//! A typed client for the simulator's control and ground-truth endpoints,
//! and thin helpers for its tracker API so tests need not spell URLs.

use std::time::Duration;

use anyhow::{Context, ensure};
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::api::{
    ChangesFound, CommentsFound, CopyRequest, Counts, FaultRule, SimChange, SimComment, SimObject,
    SimTicket, TicketsFound,
};

/// Talks to a running simulator (`/_sim/*`, searches, and the tracker API).
#[derive(Debug, Clone)]
pub struct SimClient {
    http: reqwest::Client,
    base_url: String,
}

impl SimClient {
    /// A client for the simulator at `base_url` (`http://host:port`).
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            http: reqwest::Client::new(),
            base_url: base_url.into(),
        }
    }

    /// A client for a simulator served over TLS with a certificate signed
    /// by `ca_pem`.
    ///
    /// # Panics
    /// If `ca_pem` is not a PEM certificate (it comes from
    /// [`TestCertificates`](super::TestCertificates)).
    pub fn trusting(base_url: impl Into<String>, ca_pem: &str) -> Self {
        let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes())
            .expect("the simulator's CA is a PEM certificate");
        let http = reqwest::Client::builder()
            .tls_certs_merge([ca])
            .build()
            .expect("an HTTP client trusting the simulator's CA");
        Self {
            http,
            base_url: base_url.into(),
        }
    }

    /// The simulator's base URL.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    async fn expect(
        response: reqwest::Result<reqwest::Response>,
        want: StatusCode,
        what: &str,
    ) -> anyhow::Result<reqwest::Response> {
        let response = response.with_context(|| format!("{what}: no answer"))?;
        let status = response.status();
        if status != want {
            let body = response.text().await.unwrap_or_default();
            anyhow::bail!("{what}: expected {want}, got {status}: {body}");
        }
        Ok(response)
    }

    /// Schedules a fault.
    pub async fn add_fault(&self, rule: &FaultRule) -> anyhow::Result<()> {
        let sent = self
            .http
            .post(self.url("/_sim/faults"))
            .json(rule)
            .send()
            .await;
        Self::expect(sent, StatusCode::CREATED, "add fault").await?;
        Ok(())
    }

    /// Removes every scheduled fault.
    pub async fn clear_faults(&self) -> anyhow::Result<()> {
        let sent = self.http.delete(self.url("/_sim/faults")).send().await;
        Self::expect(sent, StatusCode::NO_CONTENT, "clear faults").await?;
        Ok(())
    }

    /// Stops listening for `pause` (returns as soon as the simulator agreed;
    /// the outage starts right after).
    pub async fn outage(&self, pause: Duration) -> anyhow::Result<()> {
        let ms = u64::try_from(pause.as_millis()).context("outage too long")?;
        let sent = self
            .http
            .post(self.url("/_sim/outage"))
            .json(&serde_json::json!({ "ms": ms }))
            .send()
            .await;
        Self::expect(sent, StatusCode::ACCEPTED, "outage").await?;
        Ok(())
    }

    /// The ground truth.
    pub async fn counts(&self) -> anyhow::Result<Counts> {
        let sent = self.http.get(self.url("/_sim/counts")).send().await;
        let response = Self::expect(sent, StatusCode::OK, "counts").await?;
        response.json().await.context("counts: bad body")
    }

    /// Plants a duplicate "made by someone else" (`POST /_sim/copies`): one
    /// more object like the newest carrying `external_ref`, with a fresh id.
    pub async fn copy(&self, external_ref: &str) -> anyhow::Result<SimObject> {
        let request = CopyRequest {
            external_ref: external_ref.to_owned(),
        };
        let sent = self
            .http
            .post(self.url("/_sim/copies"))
            .json(&request)
            .send()
            .await;
        let response = Self::expect(sent, StatusCode::CREATED, "copy").await?;
        response.json().await.context("copy: bad body")
    }

    /// `GET path?external_ref=` (a search: it counts in `searches_received`
    /// and search faults apply).
    async fn search<T: DeserializeOwned>(
        &self,
        path: &str,
        external_ref: &str,
        what: &str,
    ) -> anyhow::Result<T> {
        let mut url = reqwest::Url::parse(&self.url(path))
            .with_context(|| format!("{what}: bad base URL"))?;
        url.query_pairs_mut()
            .append_pair("external_ref", external_ref);
        let sent = self.http.get(url).send().await;
        let response = Self::expect(sent, StatusCode::OK, what).await?;
        response
            .json()
            .await
            .with_context(|| format!("{what}: bad body"))
    }

    /// Tickets with this external reference, oldest first (a search: it
    /// counts in `searches_received` and search faults apply).
    pub async fn tickets(&self, external_ref: &str) -> anyhow::Result<Vec<SimTicket>> {
        let found: TicketsFound = self.search("/api/tickets", external_ref, "search").await?;
        ensure!(
            found.tickets.iter().all(|t| t.external_ref == external_ref),
            "search: a ticket with another external_ref came back"
        );
        Ok(found.tickets)
    }

    /// Change records with this external reference, oldest first (a
    /// search, like [`SimClient::tickets`]).
    pub async fn changes(&self, external_ref: &str) -> anyhow::Result<Vec<SimChange>> {
        let found: ChangesFound = self
            .search("/api/changes", external_ref, "change search")
            .await?;
        ensure!(
            found.changes.iter().all(|c| c.external_ref == external_ref),
            "change search: a change with another external_ref came back"
        );
        Ok(found.changes)
    }

    /// Comments with this external reference, oldest first (a search, like
    /// [`SimClient::tickets`]).
    pub async fn comments(&self, external_ref: &str) -> anyhow::Result<Vec<SimComment>> {
        let found: CommentsFound = self
            .search("/api/comments", external_ref, "comment search")
            .await?;
        ensure!(
            found
                .comments
                .iter()
                .all(|c| c.external_ref == external_ref),
            "comment search: a comment with another external_ref came back"
        );
        Ok(found.comments)
    }

    /// `GET /api/tickets/{id}`: the ticket as it is now, `None` if unknown.
    pub async fn ticket(&self, id: &str) -> anyhow::Result<Option<SimTicket>> {
        let sent = self
            .http
            .get(self.url(&format!("/api/tickets/{id}")))
            .send()
            .await
            .context("ticket: no answer")?;
        if sent.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = Self::expect(Ok(sent), StatusCode::OK, "ticket").await?;
        response.json().await.context("ticket: bad body")
    }

    /// Sends `body` with an optional `Idempotency-Key`; the raw answer, so
    /// a test can look at its status, headers, or its absence.
    async fn send_effect(
        &self,
        request: reqwest::RequestBuilder,
        body: &Value,
        key: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let mut request = request.json(body);
        if let Some(key) = key {
            request = request.header("Idempotency-Key", key);
        }
        request.send().await
    }

    /// `POST /api/tickets` with `body`; the raw answer.
    pub async fn create(
        &self,
        body: &Value,
        key: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let request = self.http.post(self.url("/api/tickets"));
        self.send_effect(request, body, key).await
    }

    /// `PATCH /api/tickets/{ticket_id}` with `body`; the raw answer.
    pub async fn update(
        &self,
        ticket_id: &str,
        body: &Value,
        key: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let request = self
            .http
            .patch(self.url(&format!("/api/tickets/{ticket_id}")));
        self.send_effect(request, body, key).await
    }

    /// `POST /api/tickets/{ticket_id}/transitions` with `body`; the raw answer.
    pub async fn transition(
        &self,
        ticket_id: &str,
        body: &Value,
        key: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let request = self
            .http
            .post(self.url(&format!("/api/tickets/{ticket_id}/transitions")));
        self.send_effect(request, body, key).await
    }

    /// `POST /api/tickets/{ticket_id}/comments` with `body`; the raw answer.
    pub async fn comment(
        &self,
        ticket_id: &str,
        body: &Value,
        key: Option<&str>,
    ) -> reqwest::Result<reqwest::Response> {
        let request = self
            .http
            .post(self.url(&format!("/api/tickets/{ticket_id}/comments")));
        self.send_effect(request, body, key).await
    }

    /// Whether it answers `/_sim/healthz`.
    pub async fn healthy(&self) -> bool {
        let sent = self.http.get(self.url("/_sim/healthz")).send().await;
        matches!(sent, Ok(r) if r.status().is_success())
    }
}
