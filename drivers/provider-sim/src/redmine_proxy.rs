//! A fault proxy in front of a real Redmine: the simulator's faults, hitting
//! a tracker we did not write.
//!
//! It forwards every request to Redmine unchanged, and takes the same
//! `/_sim/faults` rules and `/_sim/outage` as the simulator (so
//! [`SimClient`](crate::SimClient) drives both). A rule's `on` is matched
//! against what the request is in Redmine's API (the marker line the
//! service's Redmine adapter writes names the write):
//!
//! | request | `on` | the title `title_contains` sees |
//! |---|---|---|
//! | `POST /issues.json` | `create` | the subject asked for |
//! | `PUT /issues/{id}.json` with `[tickets update …]` | `update` | the issue's subject now |
//! | … with `[tickets transition …]` | `transition` | the same |
//! | … with `[tickets comment …]` | `comment` | the same |
//! | any `GET` | `search` | none |
//!
//! "Commit" in a fault's name is forwarding the request to Redmine and
//! reading its answer: `commit_then_drop` forwards, then closes the
//! caller's connection without a byte; `hang` holds the request, then
//! forwards it even if the caller has gone; `fail_before_commit` answers
//! 503 (an HTML page, as a real proxy would) and forwards nothing.
//!
//! It keeps no counts of Redmine's (Redmine is the ground truth), only a
//! tally of what reached it: `GET /_sim/received` answers
//! `{"creates_received": N}`, the `POST /issues.json` requests that
//! arrived, faulted or not (the simulator's `creates_received`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use provider_client::redmine::marker_in;

use super::api::{Fault, FaultOn};
use super::faults::Faults;
use super::http::{drop_connection, schedule_fault, start_outage};
use super::listener::ConnKill;

/// Everything the handlers share.
#[derive(Clone)]
pub(crate) struct Proxy {
    pub(crate) upstream: String,
    pub(crate) client: reqwest::Client,
    pub(crate) faults: Arc<Faults>,
    pub(crate) outages: mpsc::UnboundedSender<(Duration, oneshot::Sender<()>)>,
    /// Creates that reached the proxy (`/_sim/received`).
    pub(crate) creates_received: Arc<AtomicU64>,
}

pub(crate) fn router(proxy: Proxy) -> Router {
    Router::new()
        .route(
            "/_sim/faults",
            post(|State(p): State<Proxy>, body: Bytes| async move {
                schedule_fault(&p.faults, &body)
            })
            .delete(|State(p): State<Proxy>| async move {
                p.faults.clear();
                StatusCode::NO_CONTENT
            }),
        )
        .route(
            "/_sim/outage",
            post(|State(p): State<Proxy>, body: Bytes| async move {
                start_outage(&p.outages, &body).await
            }),
        )
        .route(
            "/_sim/received",
            get(|State(p): State<Proxy>| async move {
                Json(json!({ "creates_received": p.creates_received.load(Ordering::SeqCst) }))
            }),
        )
        .route("/_sim/healthz", get(|| async { "ok" }))
        .fallback(forward)
        .with_state(proxy)
}

/// One request to Redmine as it left the caller.
struct Request {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
}

async fn forward(
    State(proxy): State<Proxy>,
    kill: Option<Extension<ConnKill>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = Request {
        method,
        uri,
        headers,
        body,
    };
    let aimed_at = proxy.aimed_at(&request).await;
    if matches!(aimed_at, Some((FaultOn::Create, ..))) {
        proxy.creates_received.fetch_add(1, Ordering::SeqCst);
    }
    let fault = match aimed_at {
        Some((on, title, reference)) => proxy.faults.take(
            on,
            title.as_deref(),
            reference.as_deref().unwrap_or_default(),
        ),
        None => None,
    };
    let send = {
        let proxy = proxy.clone();
        move || async move { proxy.send(&request).await }
    };
    match fault {
        None => send().await,
        Some(Fault::Latency { ms }) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            send().await
        }
        Some(Fault::FailBeforeCommit) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [("content-type", "text/html")],
            "<html><body><h1>503 Service Unavailable</h1>fault proxy</body></html>",
        )
            .into_response(),
        Some(Fault::Reject) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "errors": ["Simulated rejection (fault proxy)"] })),
        )
            .into_response(),
        Some(Fault::CommitThenDrop) => {
            let _ = send().await;
            drop_connection(kill).await
        }
        Some(Fault::CommitThen500) => {
            let _ = send().await;
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({ "status": 500, "error": "Internal Server Error" })),
            )
                .into_response()
        }
        Some(Fault::Hang { ms }) => {
            // Detached, so Redmine gets the request even if the caller has
            // given up and its connection (with this handler) is gone.
            let late = tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                send().await
            });
            late.await
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
    }
}

impl Proxy {
    /// What a rule may match this request as: its kind, the title of the
    /// issue it makes or acts on, and the reference it carries. `None` for
    /// anything else (forwarded untouched).
    async fn aimed_at(
        &self,
        request: &Request,
    ) -> Option<(FaultOn, Option<String>, Option<String>)> {
        let path = request.uri.path();
        if request.method == Method::GET {
            return Some((FaultOn::Search, None, None));
        }
        let body: Value = serde_json::from_slice(&request.body).ok()?;
        let issue = body.get("issue")?;
        if request.method == Method::POST && path == "/issues.json" {
            let title = issue.get("subject").and_then(Value::as_str);
            let reference = issue
                .get("custom_fields")
                .and_then(|f| f.get(0))
                .and_then(|f| f.get("value"))
                .and_then(Value::as_str);
            return Some((
                FaultOn::Create,
                title.map(str::to_owned),
                reference.map(str::to_owned),
            ));
        }
        let id = path.strip_prefix("/issues/")?.strip_suffix(".json")?;
        if request.method != Method::PUT || id.parse::<u64>().is_err() {
            return None;
        }
        let notes = issue.get("notes").and_then(Value::as_str).unwrap_or("");
        let (verb, reference) = marker_in(notes)?;
        let on = match verb {
            "update" => FaultOn::Update,
            "transition" => FaultOn::Transition,
            "comment" => FaultOn::Comment,
            _ => return None,
        };
        let reference = reference.to_owned();
        Some((
            on,
            self.subject(id, &request.headers).await,
            Some(reference),
        ))
    }

    /// The subject of issue `id` now, read with the caller's API key.
    async fn subject(&self, id: &str, headers: &HeaderMap) -> Option<String> {
        let mut read = self
            .client
            .get(format!("{}/issues/{id}.json", self.upstream));
        if let Some(key) = headers.get("x-redmine-api-key") {
            read = read.header("x-redmine-api-key", key.as_bytes());
        }
        let issue: Value = read.send().await.ok()?.json().await.ok()?;
        issue
            .pointer("/issue/subject")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// Sends `request` to Redmine and passes its answer on; 502 if Redmine
    /// gave none.
    async fn send(&self, request: &Request) -> Response {
        let target = match request.uri.path_and_query() {
            Some(pq) => format!("{}{pq}", self.upstream),
            None => self.upstream.clone(),
        };
        let mut out = self
            .client
            .request(request.method.clone(), target)
            .body(request.body.clone());
        for (name, value) in &request.headers {
            if !matches!(name.as_str(), "host" | "content-length" | "connection") {
                out = out.header(name.as_str(), value.as_bytes());
            }
        }
        let answer = match out.send().await {
            Ok(answer) => answer,
            Err(e) => {
                return (
                    StatusCode::BAD_GATEWAY,
                    [("content-type", "text/html")],
                    format!("<html><body>502 Bad Gateway: {e}</body></html>"),
                )
                    .into_response();
            }
        };
        let status = answer.status().as_u16();
        let content_type = answer.headers().get("content-type").cloned();
        let body = answer.bytes().await.unwrap_or_default();
        let mut response = (
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
            body,
        )
            .into_response();
        if let Some(content_type) = content_type
            && let Ok(value) = content_type.to_str()
            && let Ok(value) = value.parse()
        {
            response.headers_mut().insert("content-type", value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use crate::{FaultRule, spawn_redmine_proxy};

    use super::*;

    /// A stand-in for Redmine that answers every request 201.
    async fn upstream() -> String {
        let app = Router::new().fallback(|| async { (StatusCode::CREATED, "{}") });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn the_tally_counts_every_create_that_arrived_faulted_or_not() {
        let proxy = spawn_redmine_proxy(
            "127.0.0.1:0".parse().expect("an address"),
            &upstream().await,
        )
        .await
        .expect("the proxy starts");
        let rule = FaultRule::create(Fault::FailBeforeCommit).title_contains("first");
        proxy.client().add_fault(&rule).await.expect("a fault");
        let http = reqwest::Client::new();
        let base = proxy.base_url();
        for subject in ["first", "second"] {
            http.post(format!("{base}/issues.json"))
                .json(&json!({ "issue": { "project_id": 1, "subject": subject } }))
                .send()
                .await
                .expect("an answer");
        }
        http.get(format!("{base}/issues.json"))
            .send()
            .await
            .expect("an answer");
        let received: Value = http
            .get(format!("{base}/_sim/received"))
            .send()
            .await
            .expect("an answer")
            .json()
            .await
            .expect("JSON");
        assert_eq!(
            received,
            json!({ "creates_received": 2 }),
            "a search is no create"
        );
    }
}
