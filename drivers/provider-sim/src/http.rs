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
use serde_json::json;
use tokio::sync::{mpsc, oneshot};

use super::api::{
    ChangesFound, CommentsFound, CopyRequest, Fault, FaultOn, FaultRule, TicketsFound,
};
use super::faults::Faults;
use super::listener::ConnKill;
use super::requests::{self, Request};
use super::store::{Arrival, Outcome, Refusal, Store};

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
        .route("/api/tickets", post(create).get(search_tickets))
        .route("/api/tickets/{id}", get(ticket).patch(update))
        .route("/api/tickets/{id}/transitions", post(transition))
        .route("/api/tickets/{id}/comments", post(comment))
        .route("/api/changes", get(search_changes))
        .route("/api/comments", get(search_comments))
        .route("/_sim/faults", post(add_fault).delete(clear_faults))
        .route("/_sim/copies", post(copy))
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
pub(crate) async fn drop_connection(kill: Option<Extension<ConnKill>>) -> Response {
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
    app.store.note(Arrival::Create);
    // Bodies are taken as bytes so a bad one gets our `{"error"}` 422, not
    // axum's plain-text rejection.
    let request = requests::new_ticket(&body).map(Request::Create);
    act(app, kill, &headers, FaultOn::Create, request).await
}

async fn update(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    Path(ticket_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    app.store.note(Arrival::Update);
    let request = requests::ticket_patch(&body).map(|patch| Request::Update { ticket_id, patch });
    act(app, kill, &headers, FaultOn::Update, request).await
}

async fn transition(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    Path(ticket_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    app.store.note(Arrival::Transition);
    let request = requests::new_transition(&body).map(|transition| Request::Transition {
        ticket_id,
        transition,
    });
    act(app, kill, &headers, FaultOn::Transition, request).await
}

async fn comment(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    Path(ticket_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    app.store.note(Arrival::Comment);
    let request =
        requests::new_comment(&body).map(|comment| Request::Comment { ticket_id, comment });
    act(app, kill, &headers, FaultOn::Comment, request).await
}

/// Every write goes through here: refusals on its merits first (they spend
/// no fault hit), then the fault if a rule matches, around the commit.
async fn act(
    app: App,
    kill: Option<Extension<ConnKill>>,
    headers: &HeaderMap,
    on: FaultOn,
    request: Result<Request, String>,
) -> Response {
    let request = match request {
        Ok(request) => request,
        Err(message) => return invalid(message),
    };
    let key = match headers.get(IDEMPOTENCY_KEY).map(HeaderValue::to_str) {
        None => None,
        Some(Ok(key)) if !key.is_empty() => Some(key.to_owned()),
        Some(_) => return invalid("Idempotency-Key must be non-empty visible ASCII"),
    };
    let title = match app.store.admit(&request, key.as_deref()) {
        Ok(title) => title,
        Err(refusal) => return refused(&refusal),
    };
    let fault = app.faults.take(on, Some(&title), request.external_ref());
    let store = app.store.clone();
    // What the request does without a fault: with a remembered key that
    // is a replay, and a precondition that no longer holds is a refusal.
    let commit = move || answer(store.commit(request, key.as_deref()));
    match fault {
        None => commit(),
        Some(Fault::Latency { ms }) => {
            sleep_ms(ms).await;
            commit()
        }
        Some(Fault::FailBeforeCommit) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "simulated failure before commit",
        ),
        Some(Fault::Reject) => invalid("simulated rejection"),
        Some(Fault::CommitThenDrop) => {
            commit();
            drop_connection(kill).await
        }
        Some(Fault::CommitThen500) => {
            commit();
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "simulated failure after commit",
            )
        }
        Some(Fault::Hang { ms }) => {
            // Detached, so the commit happens even if the client gives up
            // and the connection (with this handler) is dropped.
            let committed = tokio::spawn(async move {
                sleep_ms(ms).await;
                commit()
            });
            match committed.await {
                Ok(answer) => answer,
                Err(_) => error(StatusCode::INTERNAL_SERVER_ERROR, "commit task failed"),
            }
        }
    }
}

fn answer(outcome: Outcome) -> Response {
    match outcome {
        Outcome::Made(made) => (StatusCode::CREATED, Json(made)).into_response(),
        Outcome::Replayed(answer) => (
            StatusCode::OK,
            [(REPLAYED, HeaderValue::from_static("true"))],
            Json(answer),
        )
            .into_response(),
        Outcome::Refused(refusal) => refused(&refusal),
    }
}

fn refused(refusal: &Refusal) -> Response {
    let status = match refusal {
        Refusal::NoTicket(_) => StatusCode::NOT_FOUND,
        Refusal::StaleVersion { .. } => StatusCode::PRECONDITION_FAILED,
        Refusal::KeyReused | Refusal::AlreadyInStatus { .. } => StatusCode::UNPROCESSABLE_ENTITY,
    };
    error(status, refusal.to_string())
}

#[derive(Deserialize)]
struct SearchQuery {
    external_ref: Option<String>,
    /// Narrows a search of changes or comments to one ticket.
    ticket_id: Option<String>,
}

async fn search_tickets(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    Query(query): Query<SearchQuery>,
) -> Response {
    app.store.note(Arrival::TicketSearch);
    search(app, kill, query, |store, external_ref, _| {
        let tickets = store.tickets(external_ref);
        Json(TicketsFound { tickets }).into_response()
    })
    .await
}

async fn search_changes(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    Query(query): Query<SearchQuery>,
) -> Response {
    app.store.note(Arrival::ChangeSearch);
    search(app, kill, query, |store, external_ref, ticket_id| {
        let changes = store.changes(external_ref, ticket_id);
        Json(ChangesFound { changes }).into_response()
    })
    .await
}

async fn search_comments(
    State(app): State<App>,
    kill: Option<Extension<ConnKill>>,
    Query(query): Query<SearchQuery>,
) -> Response {
    app.store.note(Arrival::CommentSearch);
    search(app, kill, query, |store, external_ref, ticket_id| {
        let comments = store.comments(external_ref, ticket_id);
        Json(CommentsFound { comments }).into_response()
    })
    .await
}

/// Every search goes through here: `find` answers it when no fault says
/// otherwise.
async fn search(
    app: App,
    kill: Option<Extension<ConnKill>>,
    query: SearchQuery,
    find: impl FnOnce(&Store, &str, Option<&str>) -> Response + Send,
) -> Response {
    let external_ref = match query.external_ref {
        Some(r) if !r.is_empty() => r,
        _ => return invalid("external_ref is required"),
    };
    // An empty `ticket_id=` narrows nothing, like one left out.
    let ticket_id = query.ticket_id.filter(|id| !id.is_empty());
    let found = || find(&app.store, &external_ref, ticket_id.as_deref());
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
    schedule_fault(&app.faults, &body)
}

async fn clear_faults(State(app): State<App>) -> StatusCode {
    app.faults.clear();
    StatusCode::NO_CONTENT
}

async fn outage(State(app): State<App>, body: Bytes) -> Response {
    start_outage(&app.outages, &body).await
}

/// `POST /_sim/faults`: schedules the rule in `body` (the simulator's and
/// the Redmine fault proxy's).
pub(crate) fn schedule_fault(faults: &Faults, body: &[u8]) -> Response {
    let rule: FaultRule = match serde_json::from_slice(body) {
        Ok(rule) => rule,
        Err(e) => return invalid(format!("not a fault rule: {e}")),
    };
    match faults.add(rule.clone()) {
        Ok(()) => (StatusCode::CREATED, Json(rule)).into_response(),
        Err(message) => invalid(message),
    }
}

#[derive(Deserialize)]
struct Outage {
    ms: u64,
}

/// `POST /_sim/outage`: asks the accept loop behind `outages` to stop
/// listening for `{"ms": N}`.
pub(crate) async fn start_outage(
    outages: &mpsc::UnboundedSender<(Duration, oneshot::Sender<()>)>,
    body: &[u8],
) -> Response {
    let outage: Outage = match serde_json::from_slice(body) {
        Ok(outage) => outage,
        Err(e) => return invalid(format!("expected {{\"ms\": N}}: {e}")),
    };
    let (closed, port_closed) = oneshot::channel();
    if outages
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

/// Plants a duplicate "made by someone else"; it counts in no `*_received`.
async fn copy(State(app): State<App>, body: Bytes) -> Response {
    let request: CopyRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return invalid(format!("expected {{\"external_ref\": REF}}: {e}")),
    };
    match app.store.copy(&request.external_ref) {
        Some(copied) => (StatusCode::CREATED, Json(copied)).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            format!("nothing carries external_ref {:?}", request.external_ref),
        ),
    }
}

async fn counts(State(app): State<App>) -> Response {
    Json(app.store.counts()).into_response()
}
