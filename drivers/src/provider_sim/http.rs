//! The routes: the tracker API and the `/_sim` control endpoints.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use super::api::{Fault, FaultOn, FaultRule};
use super::faults::Faults;
use super::listener::ConnKill;
use super::store::{Created, NewTicket, Store};

const IDEMPOTENCY_KEY: &str = "idempotency-key";
const REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");

/// Everything the handlers share.
#[derive(Clone)]
pub(crate) struct App {
    pub store: Arc<Store>,
    pub faults: Arc<Faults>,
    /// Asks the accept loop to stop listening for a while; it says when
    /// the port is closed.
    pub outages: mpsc::UnboundedSender<(Duration, oneshot::Sender<()>)>,
}

pub(crate) fn router(app: App) -> Router {
    Router::new()
        .route("/api/tickets", post(create).get(search))
        .route("/api/tickets/{id}", get(ticket))
        .route("/_sim/faults", post(add_fault).delete(clear_faults))
        .route("/_sim/outage", post(outage))
        .route("/_sim/counts", get(counts))
        .route("/_sim/healthz", get(|| async { "ok" }))
        .with_state(app)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

fn invalid(message: impl Into<String>) -> Response {
    error(StatusCode::UNPROCESSABLE_ENTITY, message)
}

/// Closes this request's connection without a byte of answer. The future
/// never finishes: the connection task drops it along with the socket.
async fn drop_connection(kill: Option<Extension<ConnKill>>) -> Response {
    match kill {
        Some(Extension(kill)) => {
            kill.fire();
            std::future::pending().await
        }
        // Only reachable if the router is served by something other than
        // our accept loop.
        None => error(StatusCode::INTERNAL_SERVER_ERROR, "no connection to drop"),
    }
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

async fn create(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    app.store.note_create();
    // Take the body as bytes so a bad body gets our `{"error"}` 422, not
    // axum's plain-text rejection.
    let request = match parse_new_ticket(&body) {
        Ok(request) => request,
        Err(message) => return invalid(message),
    };
    let key = match headers.get(IDEMPOTENCY_KEY).map(HeaderValue::to_str) {
        None => None,
        Some(Ok(key)) if !key.is_empty() => Some(key.to_owned()),
        Some(_) => return invalid("Idempotency-Key must be non-empty visible ASCII"),
    };
    let fault = app
        .faults
        .take(FaultOn::Create, Some(&request.title), &request.external_ref);
    match fault {
        None => answer(app.store.create(request, key.as_deref())),
        Some(Fault::Latency { ms }) => {
            sleep_ms(ms).await;
            answer(app.store.create(request, key.as_deref()))
        }
        Some(Fault::FailBeforeCommit) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "simulated failure before commit",
        ),
        Some(Fault::Reject) => invalid("simulated rejection"),
        Some(Fault::CommitThenDrop) => {
            app.store.create(request, key.as_deref());
            drop_connection(kill).await
        }
        Some(Fault::CommitThen500) => {
            app.store.create(request, key.as_deref());
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "simulated failure after commit",
            )
        }
        Some(Fault::Hang { ms }) => {
            // Detached, so the commit happens even if the client gives up
            // and the connection (with this handler) is dropped.
            let store = app.store.clone();
            let commit = tokio::spawn(async move {
                sleep_ms(ms).await;
                store.create(request, key.as_deref())
            });
            match commit.await {
                Ok(created) => answer(created),
                Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "commit task failed"),
            }
        }
    }
}

fn answer(created: Created) -> Response {
    match created {
        Created::New(ticket) => (StatusCode::CREATED, Json(ticket)).into_response(),
        Created::Replayed(ticket) => (
            StatusCode::OK,
            [(REPLAYED, HeaderValue::from_static("true"))],
            Json(ticket),
        )
            .into_response(),
        Created::KeyReused => invalid("Idempotency-Key was already used with a different request"),
    }
}

fn parse_new_ticket(body: &[u8]) -> Result<NewTicket, String> {
    let fields: Map<String, Value> =
        serde_json::from_slice(body).map_err(|e| format!("body must be a JSON object: {e}"))?;
    let required = |name: &str| match fields.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(format!("{name} must not be empty")),
        None | Some(Value::Null) => Err(format!("{name} is required")),
        Some(_) => Err(format!("{name} must be a string")),
    };
    let description = match fields.get("description") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("description must be a string or null".into()),
    };
    Ok(NewTicket {
        external_ref: required("external_ref")?,
        project_id: required("project_id")?,
        title: required("title")?,
        description,
        priority: required("priority")?,
    })
}

#[derive(Deserialize)]
struct SearchQuery {
    external_ref: Option<String>,
}

async fn search(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    Query(query): Query<SearchQuery>,
) -> Response {
    app.store.note_search();
    let external_ref = match query.external_ref {
        Some(r) if !r.is_empty() => r,
        _ => return invalid("external_ref is required"),
    };
    let found = || Json(json!({ "tickets": app.store.search(&external_ref) })).into_response();
    // A search commits nothing, so each fault keeps only its answer part.
    match app.faults.take(FaultOn::Search, None, &external_ref) {
        None => found(),
        Some(Fault::Latency { ms } | Fault::Hang { ms }) => {
            sleep_ms(ms).await;
            found()
        }
        Some(Fault::FailBeforeCommit) => {
            error(StatusCode::SERVICE_UNAVAILABLE, "simulated search failure")
        }
        Some(Fault::Reject) => invalid("simulated rejection"),
        Some(Fault::CommitThenDrop) => drop_connection(kill).await,
        Some(Fault::CommitThen500) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "simulated search failure",
        ),
    }
}

async fn ticket(State(app): State<App>, Path(id): Path<String>) -> Response {
    match app.store.get(&id) {
        Some(ticket) => Json(ticket).into_response(),
        None => error(StatusCode::NOT_FOUND, format!("no ticket {id}")),
    }
}

async fn add_fault(State(app): State<App>, body: Bytes) -> Response {
    let rule: FaultRule = match serde_json::from_slice(&body) {
        Ok(rule) => rule,
        Err(e) => return invalid(format!("not a fault rule: {e}")),
    };
    match app.faults.add(rule.clone()) {
        Ok(()) => (StatusCode::CREATED, Json(rule)).into_response(),
        Err(message) => invalid(message),
    }
}

async fn clear_faults(State(app): State<App>) -> StatusCode {
    app.faults.clear();
    StatusCode::NO_CONTENT
}

#[derive(Deserialize)]
struct Outage {
    ms: u64,
}

async fn outage(State(app): State<App>, body: Bytes) -> Response {
    let outage: Outage = match serde_json::from_slice(&body) {
        Ok(outage) => outage,
        Err(e) => return invalid(format!("expected {{\"ms\": N}}: {e}")),
    };
    let (closed, port_closed) = oneshot::channel();
    if app
        .outages
        .send((Duration::from_millis(outage.ms), closed))
        .is_err()
    {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "the listener is gone");
    }
    // Answer only once new connections are refused, so a caller can count
    // on the outage having begun when it reads the 202.
    match port_closed.await {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "the listener is gone"),
    }
}

async fn counts(State(app): State<App>) -> Response {
    Json(app.store.counts()).into_response()
}
