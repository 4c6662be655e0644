//! One attempt at a create, over the wire, and what the caller hears: to
//! this service (`POST /v1/tickets`), straight to the provider
//! (`POST /api/tickets`), or to Redmine through the service's own Redmine
//! adapter (`POST /issues.json`). Strategies (a) to (c) decide what to do
//! next from [`Heard`] alone, as a client that reads only status codes and
//! headers would; nothing here counts as ground truth.

use std::time::Duration;

use kitchen::{DispatchRequest, Dispatched, ProviderWrite, TicketProvider};
use provider_client::redmine::RedmineProvider;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The ticket an intent asks for. Its title is unique to the intent: it is
/// how faults pick the intent's requests out and how its effects are
/// counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ask {
    /// The cell's project.
    pub(crate) project_id: String,
    /// Unique per intent.
    pub(crate) title: String,
    /// The field a repair changes.
    pub(crate) description: String,
    /// Says `"confirm_new": true` (this service only): the caller means a
    /// new ticket even if one with the same content was just made.
    pub(crate) confirm_new: bool,
}

/// Where an attempt goes.
#[derive(Debug, Clone)]
pub(crate) enum Door {
    /// This service's REST door, with a bearer token.
    Service {
        /// Base URL (the proxy's).
        base: String,
        /// The tenant's token.
        token: String,
    },
    /// The provider's tracker API, directly.
    Provider {
        /// Base URL (the proxy's).
        base: String,
    },
    /// Redmine, through the service's own Redmine adapter (connected
    /// through the proxy): the simple adapter with the best Redmine client
    /// we have, so that what it loses is the policy's, not the client's.
    Redmine(Box<RedmineProvider>),
}

/// What one attempt came back with, as a status-code-reading client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Heard {
    /// Made now (`201`). `flagged`: with `Possible-Duplicate-Of` (our
    /// guard in `warn` saw a write with the same content under another
    /// key).
    Made {
        /// The answer carried `Possible-Duplicate-Of`.
        flagged: bool,
    },
    /// The effect exists from an earlier attempt: a replay (`Idempotent-
    /// Replayed: true`) or, past our replay window, `expired`.
    Replayed,
    /// Refused on its merits; nothing made by this attempt. `dedup`: the
    /// key was already used for another request (this service's
    /// `idempotency-key-reused`, the provider's "already used with a
    /// different request").
    Refused {
        /// The status.
        status: u16,
        /// Refused as a reuse of the key.
        dedup: bool,
    },
    /// Refused by our guard in `confirm`: `409 possible-duplicate`, nothing
    /// made, the answer pointing at an earlier write with the same content
    /// (it says the effect already exists, as a replay does).
    PossibleDuplicate,
    /// Taken, not settled: `202` (outcome unknown, reconciling) or `409`
    /// `operation-in-progress`.
    Pending {
        /// `Retry-After`, when sent.
        retry_after: Option<Duration>,
    },
    /// A `5xx`: it may or may not have happened.
    ServerError {
        /// The status.
        status: u16,
        /// `Retry-After`, when sent.
        retry_after: Option<Duration>,
    },
    /// No connection was made: provably nothing sent.
    NotConnected,
    /// The connection failed after the request may have left.
    Cut,
    /// The caller's own timeout fired first.
    TimedOut,
}

/// Sends one create through `door` with `key` (or none), giving up after
/// `timeout`.
pub(crate) async fn create(
    http: &reqwest::Client,
    door: &Door,
    key: Option<&str>,
    ask: &Ask,
    timeout: Duration,
) -> Heard {
    let request = match door {
        Door::Redmine(adapter) => return to_redmine(adapter, key, ask, timeout).await,
        Door::Service { base, token } => {
            let mut body = json!({
                "project_id": ask.project_id,
                "title": ask.title,
                "description": ask.description,
            });
            if ask.confirm_new {
                body["confirm_new"] = Value::Bool(true);
            }
            http.post(format!("{base}/v1/tickets"))
                .bearer_auth(token)
                .json(&body)
        }
        Door::Provider { base } => http.post(format!("{base}/api/tickets")).json(&json!({
            // The provider needs a reference; the caller's key serves, or
            // the title when it sends none. Nothing searches for it.
            "external_ref": key.unwrap_or(&ask.title),
            "project_id": ask.project_id,
            "title": ask.title,
            "description": ask.description,
            "priority": "normal",
        })),
    };
    let request = match key {
        Some(key) => request.header("Idempotency-Key", key),
        None => request,
    };
    let exchange = async {
        let response = request.send().await?;
        let status = response.status();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let replayed = header("idempotent-replayed");
        let flagged = header(POSSIBLE_DUPLICATE_OF).is_some();
        let retry_after = header("retry-after")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response.text().await?;
        let headers = Answered {
            replayed: replayed.as_deref(),
            flagged,
            retry_after,
        };
        Ok::<_, reqwest::Error>(classify(status, &headers, &body))
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => Heard::TimedOut,
        Ok(Ok(heard)) => heard,
        Ok(Err(e)) if e.is_connect() => Heard::NotConnected,
        Ok(Err(_)) => Heard::Cut,
    }
}

/// One create through the Redmine adapter, read as a status-reading client
/// reads an answer: what the adapter proved is kept, nothing more.
async fn to_redmine(
    adapter: &RedmineProvider,
    key: Option<&str>,
    ask: &Ask,
    timeout: Duration,
) -> Heard {
    let request = DispatchRequest {
        // Redmine takes no key; the reference field needs a value, and
        // nothing searches for it.
        external_ref: key.unwrap_or(&ask.title).to_owned(),
        write: ProviderWrite::CreateTicket {
            project_id: ask.project_id.clone(),
            title: ask.title.clone(),
            description: Some(ask.description.clone()),
            priority: "normal".into(),
        },
    };
    match tokio::time::timeout(timeout, adapter.dispatch(&request)).await {
        Err(_) => Heard::TimedOut,
        Ok(Dispatched::Done { .. }) => Heard::Made { flagged: false },
        // A refusal on the merits (Redmine's 4xx): nothing made. The
        // adapter keeps only its text; 422 is what Redmine answers.
        Ok(Dispatched::Rejected(_)) => Heard::Refused {
            status: 422,
            dedup: false,
        },
        // No byte of the request left (a refused connection).
        Ok(Dispatched::NotSent(_)) => Heard::NotConnected,
        // A 5xx, a cut, the adapter's own timeout: it may have been made.
        Ok(Dispatched::Ambiguous(_)) => Heard::Cut,
    }
}

/// The header our guard in `warn` adds to a write it made although one
/// with the same content was made under another key.
pub(crate) const POSSIBLE_DUPLICATE_OF: &str = "possible-duplicate-of";

/// The headers of an answer a status-reading client looks at.
#[derive(Debug, Clone, Copy, Default)]
struct Answered<'a> {
    /// `Idempotent-Replayed`.
    replayed: Option<&'a str>,
    /// `Possible-Duplicate-Of` was there.
    flagged: bool,
    /// `Retry-After`.
    retry_after: Option<Duration>,
}

/// What an answer means to a client that reads statuses, the replay and
/// guard headers, and the problem type (or the provider's error text).
fn classify(status: StatusCode, headers: &Answered<'_>, body: &str) -> Heard {
    let Answered {
        replayed,
        flagged,
        retry_after,
    } = *headers;
    let code = status.as_u16();
    match code {
        200 | 201 if replayed.is_some() => Heard::Replayed,
        // A 200 without the header is the provider's replay in honour mode
        // (it always sends the header) or nothing we send: read it as made.
        200 | 201 => Heard::Made { flagged },
        202 => Heard::Pending { retry_after },
        409 if problem_type(body) == "operation-in-progress" => Heard::Pending { retry_after },
        409 if possible_duplicate(body) => Heard::PossibleDuplicate,
        500..=599 => Heard::ServerError {
            status: code,
            retry_after,
        },
        _ => Heard::Refused {
            status: code,
            dedup: key_reused(body),
        },
    }
}

fn problem_type(body: &str) -> String {
    serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| {
            v["type"]
                .as_str()
                .map(|t| t.rsplit('/').next().unwrap_or(t).to_owned())
        })
        .unwrap_or_default()
}

/// This service's `409 possible-duplicate` (our guard in `confirm`).
pub(crate) fn possible_duplicate(body: &str) -> bool {
    problem_type(body) == "possible-duplicate"
}

/// This service's `idempotency-key-reused`, or the provider's refusal of a
/// key remembered with another request.
fn key_reused(body: &str) -> bool {
    problem_type(body) == "idempotency-key-reused"
        || body.contains("Idempotency-Key was already used")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_as_a_status_reading_client_would() {
        assert_eq!(
            classify(StatusCode::CREATED, &Answered::default(), "{}"),
            Heard::Made { flagged: false }
        );
        let replayed = |value| Answered {
            replayed: Some(value),
            ..Answered::default()
        };
        assert_eq!(
            classify(StatusCode::CREATED, &replayed("true"), "{}"),
            Heard::Replayed
        );
        assert_eq!(
            classify(StatusCode::OK, &replayed("expired"), "{}"),
            Heard::Replayed
        );
        let flagged = Answered {
            flagged: true,
            ..Answered::default()
        };
        assert_eq!(
            classify(StatusCode::CREATED, &flagged, "{}"),
            Heard::Made { flagged: true },
            "made, and our guard in warn pointed at an earlier write"
        );
        let conflict = r#"{"type":"https://x/problems/idempotency-key-reused"}"#;
        assert_eq!(
            classify(
                StatusCode::UNPROCESSABLE_ENTITY,
                &Answered::default(),
                conflict
            ),
            Heard::Refused {
                status: 422,
                dedup: true
            }
        );
        let provider = r#"{"error":"Idempotency-Key was already used with a different request"}"#;
        assert_eq!(
            classify(
                StatusCode::UNPROCESSABLE_ENTITY,
                &Answered::default(),
                provider
            ),
            Heard::Refused {
                status: 422,
                dedup: true
            }
        );
        let invalid = r#"{"type":"/problems/validation-failed"}"#;
        assert_eq!(
            classify(StatusCode::BAD_REQUEST, &Answered::default(), invalid),
            Heard::Refused {
                status: 400,
                dedup: false
            }
        );
        let busy = r#"{"type":"/problems/operation-in-progress"}"#;
        let wait = Some(Duration::from_secs(1));
        assert_eq!(
            classify(
                StatusCode::CONFLICT,
                &Answered {
                    retry_after: wait,
                    ..Answered::default()
                },
                busy
            ),
            Heard::Pending { retry_after: wait }
        );
        assert_eq!(
            classify(
                StatusCode::ACCEPTED,
                &Answered {
                    retry_after: wait,
                    ..Answered::default()
                },
                "{}"
            ),
            Heard::Pending { retry_after: wait }
        );
        let guarded = r#"{"type":"/problems/possible-duplicate","original_operation":"/v1/operations/create_ticket/k"}"#;
        assert_eq!(
            classify(StatusCode::CONFLICT, &Answered::default(), guarded),
            Heard::PossibleDuplicate,
            "our guard's refusal says the effect exists: not a mere refusal"
        );
        assert_eq!(
            classify(StatusCode::SERVICE_UNAVAILABLE, &Answered::default(), "{}"),
            Heard::ServerError {
                status: 503,
                retry_after: None
            }
        );
    }
}
