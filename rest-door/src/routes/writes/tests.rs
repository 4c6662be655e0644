//! The write answers' headers and shapes, checked without a server.

use std::time::Duration;

use kitchen::{Refusal, TicketStatus, Version};

use super::*;

/// The answer to `outcome` (a write that made nothing), as status,
/// headers and problem body.
async fn refusal(outcome: Outcome<Ticket>) -> (StatusCode, HeaderMap, serde_json::Value) {
    let (response, _) = respond(Action::UpdateTicket, outcome, |_, _| {
        panic!("nothing was written, so there is no receipt to show")
    });
    let (parts, body) = response.into_parts();
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("a body");
    let problem = serde_json::from_slice(&bytes).expect("a problem document");
    (parts.status, parts.headers, problem)
}

fn version(n: i64) -> Version {
    Version::parse(n, "version").expect("a version")
}

#[tokio::test]
async fn a_stale_version_is_412_with_both_versions() {
    let (status, headers, problem) = refusal(Outcome::Refused(Refusal::VersionMismatch {
        expected: version(2),
        current: version(3),
    }))
    .await;
    assert_eq!(status, StatusCode::PRECONDITION_FAILED);
    assert_eq!(problem["type"], "/problems/version-mismatch");
    assert_eq!(problem["expected_version"], 2);
    assert_eq!(problem["current_version"], 3);
    assert!(headers.get(header::RETRY_AFTER).is_none());
}

#[tokio::test]
async fn a_forbidden_move_is_409_without_retry_after() {
    let from = TicketStatus::Closed;
    let (status, headers, problem) = refusal(Outcome::Refused(Refusal::TransitionNotAllowed {
        from,
        to: TicketStatus::Resolved,
        allowed: from.allowed_moves(),
    }))
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem["type"], "/problems/transition-not-allowed");
    assert_eq!(problem["from"], "closed");
    assert_eq!(problem["to"], "resolved");
    assert_eq!(problem["allowed_moves"], serde_json::json!(["open"]));
    assert!(
        headers.get(header::RETRY_AFTER).is_none(),
        "waiting does not help, so no Retry-After"
    );
}

#[tokio::test]
async fn in_progress_waits_as_long_as_the_kitchen_says() {
    let (status, headers, problem) = refusal(Outcome::InProgress {
        retry_after: Duration::from_secs(7),
    })
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem["type"], "/problems/operation-in-progress");
    assert_eq!(headers[header::RETRY_AFTER], "7");
    assert!(
        problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Nothing was changed by this one")),
        "{problem}"
    );
}

fn operation(action: Action) -> OperationRef {
    OperationRef {
        action,
        key: OperationKey::parse("0193a4f2-7c1e-7b8a").expect("a key"),
        created_at: time::macros::datetime!(2026-03-01 09:00:00.25 UTC),
        resource: None,
        replayable_until: time::macros::datetime!(2026-03-31 09:00:01 UTC),
        retained_until: time::macros::datetime!(2027-04-05 09:00:01 UTC),
    }
}

#[tokio::test]
async fn a_conflict_shows_the_original_operations_replay_horizon() {
    let (status, headers, problem) = refusal(Outcome::Conflict {
        original: operation(Action::UpdateTicket),
    })
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(problem["type"], "/problems/idempotency-key-reused");
    assert_eq!(
        headers[IDEMPOTENCY_REPLAYABLE_UNTIL],
        "2026-03-31T09:00:01Z"
    );
}

#[tokio::test]
async fn an_outcome_without_an_operation_shows_no_horizon() {
    let (_, headers, _) = refusal(Outcome::InProgress {
        retry_after: Duration::from_secs(1),
    })
    .await;
    assert!(headers.get(IDEMPOTENCY_REPLAYABLE_UNTIL).is_none());
}

#[tokio::test]
async fn an_expired_key_answers_the_ticket_as_it_is_now() {
    let ticket: Ticket = serde_json::from_value(serde_json::json!({
        "id": "01a22a26-e9e7-75b6-8d7f-025b02dea37c",
        "project_id": "ops",
        "title": "Changed meanwhile",
        "priority": "normal",
        "status": "open",
        "created_at": "2026-03-01T09:00:00.25Z",
        "version": 4,
    }))
    .expect("a ticket");
    let outcome = Outcome::Expired(kitchen::Expired {
        current: ticket,
        operation: operation(Action::CreateTicket),
    });
    let (response, failure) = respond(Action::CreateTicket, outcome, |_, _| {
        panic!("an expired key has no receipt: its first answer is gone")
    });
    assert_eq!(failure, None);
    let (parts, body) = response.into_parts();
    assert_eq!(parts.status, StatusCode::OK);
    let headers = &parts.headers;
    assert_eq!(headers[IDEMPOTENT_REPLAYED], "expired");
    assert_eq!(
        headers[IDEMPOTENCY_REPLAYABLE_UNTIL],
        "2026-03-31T09:00:01Z"
    );
    assert_eq!(
        headers[header::LOCATION],
        "/v1/tickets/01a22a26-e9e7-75b6-8d7f-025b02dea37c"
    );
    assert_eq!(headers[header::ETAG], "\"4\"");
    let bytes = axum::body::to_bytes(body, usize::MAX)
        .await
        .expect("a body");
    let shown: serde_json::Value = serde_json::from_slice(&bytes).expect("JSON");
    assert_eq!(shown["title"], "Changed meanwhile");
}

#[tokio::test]
async fn a_ticket_only_kept_here_is_409_on_the_remote_backend() {
    let ticket: kitchen::TicketId = "01a22a26-e9e7-75b6-8d7f-025b02dea37c"
        .parse()
        .expect("a ticket id");
    let (status, _, problem) = refusal(Outcome::Refused(Refusal::NotAtProvider {
        ticket_id: ticket,
    }))
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(problem["type"], "/problems/ticket-not-at-provider");
    let detail = problem["detail"].as_str().expect("a detail");
    assert!(
        detail.contains("01a22a26-e9e7-75b6-8d7f-025b02dea37c"),
        "{detail}"
    );
    assert!(detail.contains("not used up"), "{detail}");
}

#[tokio::test]
async fn a_refused_or_unsent_change_says_nothing_was_changed() {
    let operation = operation(Action::UpdateTicket);
    let (status, _, problem) = refusal(Outcome::NotCreated {
        operation: operation.clone(),
        reason: kitchen::NotCreatedReason::Rejected("412: at version 4, not 3".into()),
    })
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let detail = problem["detail"].as_str().expect("a detail");
    assert!(detail.contains("refused the change: 412"), "{detail}");
    assert!(detail.contains("Nothing was changed"), "{detail}");
    let (status, headers, problem) = refusal(Outcome::NotCreated {
        operation,
        reason: kitchen::NotCreatedReason::Unavailable("Connection refused.".into()),
    })
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(headers.get(header::RETRY_AFTER).is_some());
    let detail = problem["detail"].as_str().expect("a detail");
    assert!(detail.contains("Nothing was changed"), "{detail}");
}
