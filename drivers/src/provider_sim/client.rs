//! A typed client for the simulator's control and ground-truth endpoints.

use std::time::Duration;

use anyhow::{Context, ensure};
use reqwest::StatusCode;

use super::api::{Counts, FaultRule, SimTicket};

/// Talks to a running simulator (`/_sim/*`, and searches).
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

    /// Tickets with this external reference, oldest first (a search: it
    /// counts in `searches_received` and search faults apply).
    pub async fn tickets(&self, external_ref: &str) -> anyhow::Result<Vec<SimTicket>> {
        #[derive(serde::Deserialize)]
        struct Found {
            tickets: Vec<SimTicket>,
        }
        let mut url =
            reqwest::Url::parse(&self.url("/api/tickets")).context("search: bad base URL")?;
        url.query_pairs_mut()
            .append_pair("external_ref", external_ref);
        let sent = self.http.get(url).send().await;
        let response = Self::expect(sent, StatusCode::OK, "search").await?;
        let found: Found = response.json().await.context("search: bad body")?;
        ensure!(
            found.tickets.iter().all(|t| t.external_ref == external_ref),
            "search: a ticket with another external_ref came back"
        );
        Ok(found.tickets)
    }

    /// Whether it answers `/_sim/healthz`.
    pub async fn healthy(&self) -> bool {
        let sent = self.http.get(self.url("/_sim/healthz")).send().await;
        matches!(sent, Ok(r) if r.status().is_success())
    }
}
