use kitchen::{Expired, OperationRef, TicketStatus, UNKNOWN_RETRY_AFTER, Version};
use rmcp::handler::server::tool::schema_for_output;
use serde_json::Value;

use super::*;

const KEY: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79";

fn key() -> OperationKey {
    OperationKey::parse(KEY).expect("a key")
}

fn operation() -> OperationRef {
    OperationRef {
        action: Action::CreateTicket,
        key: key(),
        created_at: time::OffsetDateTime::UNIX_EPOCH,
        resource: None,
        replayable_until: time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(30),
        retained_until: time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(400),
    }
}

fn create(outcome: Outcome) -> CallToolResult {
    create_result(&key(), outcome).expect("a create's outcome is published")
}

fn update(outcome: Outcome) -> CallToolResult {
    ticket_write_result(Action::UpdateTicket, &key(), outcome).expect("published")
}

fn content(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

fn next_step(result: &CallToolResult) -> &str {
    content(result)["next_step"].as_str().expect("a next_step")
}

#[test]
fn an_unknown_outcome_is_not_an_error_and_keeps_the_operation_id() {
    let result = create(Outcome::Unknown {
        operation: operation(),
        gave_up: false,
        reason: "The provider's answer was lost.".into(),
    });
    assert_ne!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "unknown");
    assert_eq!(body["operation_id"], KEY);
    assert_eq!(body["ticket"], Value::Null);
    assert_eq!(body["reason"], "The provider's answer was lost.");
    assert_eq!(
        body["retry_after_seconds"],
        UNKNOWN_RETRY_AFTER.as_secs(),
        "the kitchen's wait"
    );
    let step = next_step(&result);
    assert!(step.contains("same operation_id"), "{step}");
    assert!(step.contains("get_operation_status"), "{step}");
    assert!(step.contains("do not invent a new operation_id"), "{step}");
}

#[test]
fn a_refused_ticket_is_an_error_that_keeps_the_operation_id() {
    let result = create(Outcome::NotCreated {
        operation: operation(),
        reason: NotCreatedReason::Rejected("title: too short".into()),
    });
    assert_eq!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "not_created");
    assert_eq!(body["operation_id"], KEY);
    assert_eq!(body["ticket"], Value::Null);
    assert_eq!(body["reason"], "title: too short");
    assert!(body.get("retry_after_seconds").is_none(), "{body}");
    let step = next_step(&result);
    assert!(step.contains("Nothing was created"), "{step}");
    assert!(step.contains("correct the arguments"), "{step}");
    assert!(step.contains("same operation_id"), "{step}");
}

/// Not the caller's mistake (the kitchen says so): a plain retry later
/// with the same key is the answer, so not a tool error.
#[test]
fn an_unreachable_provider_is_not_an_error_and_says_retry_later() {
    let result = create(Outcome::NotCreated {
        operation: operation(),
        reason: NotCreatedReason::Unavailable("connection refused".into()),
    });
    assert_ne!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "not_created");
    assert_eq!(body["operation_id"], KEY);
    assert_eq!(body["reason"], "connection refused");
    assert!(body["retry_after_seconds"].as_u64().is_some(), "{body}");
    let step = next_step(&result);
    assert!(step.contains("Nothing was created"), "{step}");
    assert!(step.contains("later"), "{step}");
    assert!(step.contains("same operation_id and arguments"), "{step}");
}

#[test]
fn a_conflict_leads_with_the_ticket_the_operation_id_already_made() {
    let made = OperationRef {
        resource: Some(TICKET.parse().expect("a ticket id")),
        ..operation()
    };
    let result = create(Outcome::Conflict { original: made });
    assert_eq!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "conflict");
    assert_eq!(
        body["original_operation"],
        serde_json::json!({"first_used_at": "1970-01-01T00:00:00Z", "ticket_id": TICKET})
    );
    let step = next_step(&result);
    assert!(
        step.starts_with(&format!(
            "If you meant the same ticket, it already exists (ticket_id {TICKET}): read it \
                 with get_operation_status using this same operation_id; only for a genuinely \
                 different ticket invent a new operation_id"
        )),
        "{step}"
    );

    // Not made yet (a provider's ticket still in flight): no id to give.
    let result = create(Outcome::Conflict {
        original: operation(),
    });
    let body = content(&result);
    assert_eq!(
        body["original_operation"],
        serde_json::json!({"first_used_at": "1970-01-01T00:00:00Z"})
    );
    let step = next_step(&result);
    assert!(
        step.starts_with("If you meant the same ticket, it was already requested"),
        "{step}"
    );
    assert!(step.contains("get_operation_status"), "{step}");
}

const TICKET: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a";
const COMMENT: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7b";

/// The ticket as it is now: changed since the first answer (version 3).
fn ticket_now() -> Ticket {
    serde_json::from_value(serde_json::json!({
        "id": TICKET,
        "project_id": "ops",
        "title": "Disk full on db-1 (renamed)",
        "description": null,
        "priority": "high",
        "status": "in_progress",
        "created_at": "1970-01-01T00:00:00Z",
        "version": 3,
        "updated_at": "1970-01-20T00:00:00Z",
    }))
    .expect("a ticket")
}

fn comment_now() -> Comment {
    serde_json::from_value(serde_json::json!({
        "id": COMMENT,
        "ticket_id": TICKET,
        "body": "Rebooted.",
        "created_at": "1970-01-01T00:00:00Z",
    }))
    .expect("a comment")
}

/// An operation that acted on [`TICKET`], past its window.
fn spent(action: Action) -> OperationRef {
    OperationRef {
        action,
        resource: Some(TICKET.parse().expect("a ticket id")),
        ..operation()
    }
}

#[test]
fn an_expired_create_is_not_an_error_and_shows_the_ticket_as_it_is_now() {
    let result = create(Outcome::Expired(Expired {
        current: ticket_now(),
        operation: spent(Action::CreateTicket),
    }));
    assert_ne!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "expired");
    assert_eq!(body["operation_id"], KEY);
    assert_eq!(body["ticket"]["id"], TICKET);
    assert_eq!(
        body["ticket"]["version"], 3,
        "the ticket now, not the first answer"
    );
    assert_eq!(body["replayable_until"], "1970-01-31T00:00:00Z");
    assert!(body.get("retry_after_seconds").is_none(), "{body}");
    assert!(body.get("original_operation").is_none(), "{body}");
    assert_eq!(
        next_step(&result),
        format!(
            "This operation_id already created this ticket (ticket_id {TICKET}) at \
                 1970-01-01T00:00:00Z; nothing new was created. Its first answer is no longer \
                 kept, so the ticket shown is as it is now: read it again with get_ticket. Do not \
                 retry this ticket with a new operation_id: that would make it a second time."
        )
    );
}

#[test]
fn an_expired_change_says_it_was_made_and_how_to_read_the_ticket() {
    for action in [Action::UpdateTicket, Action::TransitionTicket] {
        let result = ticket_write_result(
            action,
            &key(),
            Outcome::Expired(Expired {
                current: ticket_now(),
                operation: spent(action),
            }),
        )
        .expect("published");
        assert_ne!(result.is_error, Some(true));
        let body = content(&result);
        assert_eq!(body["status"], "expired", "{action}");
        assert_eq!(body["ticket"]["status"], "in_progress", "{action}");
        assert_eq!(body["replayable_until"], "1970-01-31T00:00:00Z");
        let step = next_step(&result);
        for words in [
            format!("already made this change to ticket_id {TICKET} at 1970-01-01T00:00:00Z"),
            "nothing new was made".into(),
            "the ticket shown is as it is now: read it again with get_ticket".into(),
            "Do not retry this change with a new operation_id".into(),
        ] {
            assert!(step.contains(&words), "{action}: {step}");
        }
    }
}

#[test]
fn an_expired_comment_says_it_was_added_and_how_to_read_it() {
    let result = comment_write_result(
        &key(),
        Outcome::Expired(Expired {
            current: comment_now(),
            operation: spent(Action::AddComment),
        }),
    )
    .expect("published");
    assert_ne!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "expired");
    assert_eq!(body["comment"]["id"], COMMENT);
    assert_eq!(body["replayable_until"], "1970-01-31T00:00:00Z");
    let step = next_step(&result);
    for words in [
        format!("already added this comment on ticket_id {TICKET} at 1970-01-01T00:00:00Z"),
        "nothing new was added".into(),
        "the comment shown is as it is now: read it again with list_comments".into(),
        "Do not retry this comment with a new operation_id".into(),
    ] {
        assert!(step.contains(&words), "{step}");
    }
    assert!(!step.contains("get_ticket"), "{step}");
}

/// Every answer that knows its operation advertises the replay horizon
/// (a conflict: the original's, which owns the key); one that did not
/// touch the key has none to give.
#[test]
fn the_replay_horizon_is_on_every_answer_that_has_an_operation() {
    let with = [
        create(Outcome::Conflict {
            original: spent(Action::CreateTicket),
        }),
        create(Outcome::Unknown {
            operation: operation(),
            gave_up: false,
            reason: "lost".into(),
        }),
        create(Outcome::NotCreated {
            operation: operation(),
            reason: NotCreatedReason::Unavailable("down".into()),
        }),
    ];
    for result in &with {
        assert_eq!(
            content(result)["replayable_until"],
            "1970-01-31T00:00:00Z",
            "{result:?}"
        );
    }
    let without = [
        create(Outcome::Invalid { violations: vec![] }),
        create(Outcome::InProgress {
            retry_after: kitchen::RETRY_AFTER,
        }),
        update(Outcome::Refused(Refusal::TicketNotFound {
            ticket_id: TICKET.parse().expect("an id"),
        })),
    ];
    for result in &without {
        assert!(
            content(result).get("replayable_until").is_none(),
            "{result:?}"
        );
    }
}

#[test]
fn the_output_schema_lists_every_status() {
    let schema =
        serde_json::to_value(schema_for_output::<CreateTicketResult>().as_ref()).expect("a schema");
    let statuses = &schema["properties"]["status"]["enum"];
    for status in [
        "created",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "in_progress",
        "not_created",
        "unknown",
    ] {
        assert!(
            statuses
                .as_array()
                .is_some_and(|s| s.contains(&status.into())),
            "{status} in {statuses}"
        );
    }
}

#[test]
fn a_version_mismatch_is_an_error_with_the_current_version() {
    let result = update(Outcome::Refused(Refusal::VersionMismatch {
        expected: Version::parse(2, "expected_version").expect("a version"),
        current: Version::parse(3, "expected_version").expect("a version"),
    }));
    assert_eq!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "version_mismatch");
    assert_eq!(body["current_version"], 3);
    assert_eq!(body["ticket"], Value::Null);
    assert!(body.get("retry_after_seconds").is_none(), "{body}");
    let step = next_step(&result);
    assert!(step.contains("get_ticket"), "{step}");
    assert!(step.contains("expected_version 3"), "{step}");
    assert!(step.contains("operation_id was not used"), "{step}");
}

#[test]
fn a_move_not_allowed_lists_the_allowed_moves() {
    let result = ticket_write_result(
        Action::TransitionTicket,
        &key(),
        Outcome::Refused(Refusal::TransitionNotAllowed {
            from: TicketStatus::Open,
            to: TicketStatus::Closed,
            allowed: TicketStatus::Open.allowed_moves(),
        }),
    )
    .expect("published");
    assert_eq!(result.is_error, Some(true));
    let body = content(&result);
    assert_eq!(body["status"], "transition_not_allowed");
    assert_eq!(body["current_status"], "open");
    assert_eq!(body["allowed_moves"], serde_json::json!(["in_progress"]));
    assert!(body.get("retry_after_seconds").is_none(), "{body}");
    assert!(next_step(&result).contains("in_progress"));
}

#[test]
fn every_write_refused_for_its_ticket_answers_not_found() {
    let gone = || Refusal::TicketNotFound {
        ticket_id: "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a"
            .parse()
            .expect("an id"),
    };
    let answers = [
        update(Outcome::Refused(gone())),
        ticket_write_result(Action::TransitionTicket, &key(), Outcome::Refused(gone()))
            .expect("published"),
        comment_write_result(&key(), Outcome::Refused(gone())).expect("published"),
    ];
    for result in answers {
        assert_eq!(result.is_error, Some(true));
        let body = content(&result);
        assert_eq!(body["status"], "not_found");
        assert_eq!(body["operation_id"], KEY);
        let step = next_step(&result);
        assert!(step.starts_with("No ticket has this ticket_id."), "{step}");
        assert!(step.contains("list_tickets"), "{step}");
    }
}

/// The statuses a tool publishes are the ones it can answer: what it
/// cannot (a refusal of a create, a status refusal of a comment) is an
/// internal error, never an answer outside its schema.
#[test]
fn an_outcome_a_tool_does_not_publish_is_an_internal_error() {
    let refused = Outcome::Refused(Refusal::NotAtProvider {
        ticket_id: ticket_now().id,
    });
    assert!(create_result(&key(), refused).is_err());
    let from = TicketStatus::Closed;
    let not_allowed = Outcome::<Comment>::Refused(Refusal::TransitionNotAllowed {
        from,
        to: TicketStatus::Resolved,
        allowed: from.allowed_moves(),
    });
    assert!(comment_write_result(&key(), not_allowed).is_err());
}

/// A conditional comment on a ticket that moved on is refused as a
/// conditional update is: the ticket's version now, and what to do.
#[test]
fn a_stale_comment_is_a_version_mismatch_with_the_current_version() {
    let mismatch = Outcome::<Comment>::Refused(Refusal::VersionMismatch {
        expected: Version::FIRST,
        current: Version::parse(2, "version").expect("a version"),
    });
    let result = comment_write_result(&key(), mismatch).expect("published");
    assert_eq!(result.is_error, Some(true));
    let shown = result.structured_content.expect("structured");
    assert_eq!(shown["status"], "version_mismatch");
    assert_eq!(shown["current_version"], 2);
    let step = shown["next_step"].as_str().expect("a next step");
    assert!(step.starts_with("Nothing was added"), "{step}");
    assert!(step.contains("expected_version 2"), "{step}");
}

#[test]
fn every_status_a_write_answers_is_in_its_output_schema() {
    fn statuses<T: schemars::JsonSchema + 'static>() -> Vec<Value> {
        let schema = serde_json::to_value(schema_for_output::<T>().as_ref()).expect("a schema");
        schema["properties"]["status"]["enum"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
    let ticket_writes = statuses::<TicketWriteResult>();
    let comments = statuses::<CommentWriteResult>();
    for status in [
        "updated",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "not_found",
        "version_mismatch",
        "transition_not_allowed",
        "in_progress",
        "not_at_provider",
        "not_created",
        "unknown",
    ] {
        assert!(ticket_writes.contains(&status.into()), "{status}");
    }
    for status in [
        "created",
        "replayed",
        "expired",
        "conflict",
        "invalid",
        "not_found",
        "version_mismatch",
        "in_progress",
        "not_at_provider",
        "not_created",
        "unknown",
    ] {
        assert!(comments.contains(&status.into()), "{status}");
    }
}

#[test]
fn a_change_or_comment_whose_answer_was_lost_is_unknown_not_an_error() {
    let lost = || Outcome::Unknown {
        operation: operation(),
        gave_up: false,
        reason: "The provider's answer was lost.".into(),
    };
    let update = ticket_write_result(Action::UpdateTicket, &key(), lost()).expect("published");
    assert_ne!(update.is_error, Some(true));
    assert_eq!(content(&update)["status"], "unknown");
    assert_eq!(
        content(&update)["reason"],
        "The provider's answer was lost."
    );
    assert!(next_step(&update).contains("make the change twice"));
    let comment = comment_write_result(
        &key(),
        Outcome::<Comment>::Unknown {
            operation: operation(),
            gave_up: false,
            reason: "lost".into(),
        },
    )
    .expect("published");
    assert_eq!(content(&comment)["status"], "unknown");
    assert!(next_step(&comment).contains("add it twice"));
    let refused = ticket_write_result(
        Action::TransitionTicket,
        &key(),
        Outcome::NotCreated {
            operation: operation(),
            reason: NotCreatedReason::Rejected("422: ticket SIM-1 is already closed".into()),
        },
    )
    .expect("published");
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(content(&refused)["status"], "not_created");
    assert!(next_step(&refused).starts_with("Nothing was changed"));
}

/// The failure record (`_meta`, see `failure.rs`) is on every answer that
/// shows no effect, retryable exactly when the kitchen gives a wait, and
/// on none that shows one.
#[test]
fn every_answer_without_an_effect_carries_the_failure_record() {
    let record = |result: &CallToolResult| {
        result
            .meta
            .as_ref()
            .and_then(|meta| meta.get(crate::FAILURE_META))
            .cloned()
    };
    let failed = [
        (
            create(Outcome::Conflict {
                original: operation(),
            }),
            "conflict",
            false,
        ),
        (
            create(Outcome::Invalid { violations: vec![] }),
            "invalid",
            false,
        ),
        (
            create(Outcome::InProgress {
                retry_after: kitchen::RETRY_AFTER,
            }),
            "in_progress",
            true,
        ),
        (
            create(Outcome::Unknown {
                operation: operation(),
                gave_up: false,
                reason: "lost".into(),
            }),
            "unknown",
            true,
        ),
        (
            create(Outcome::NotCreated {
                operation: operation(),
                reason: NotCreatedReason::Rejected("no".into()),
            }),
            "not_created",
            false,
        ),
        (
            update(Outcome::Refused(Refusal::VersionMismatch {
                expected: Version::FIRST,
                current: Version::parse(2, "version").expect("a version"),
            })),
            "version_mismatch",
            false,
        ),
        (
            invalid_write(Action::AddComment, Some(KEY.into()), vec![]),
            "invalid",
            false,
        ),
    ];
    for (result, code, retryable) in &failed {
        let record = record(result).unwrap_or_else(|| panic!("a record on {result:?}"));
        assert_eq!(record["code"], *code, "{record}");
        assert_eq!(content(result)["status"], *code);
        assert_eq!(record["retryable"], *retryable, "{record}");
        assert_eq!(
            record.get("retryNotBefore").is_some(),
            *retryable,
            "{record}"
        );
        assert_eq!(record["operationId"], KEY, "{record}");
    }
    let done = create(Outcome::Expired(Expired {
        current: ticket_now(),
        operation: spent(Action::CreateTicket),
    }));
    assert_eq!(record(&done), None, "{done:?}");
    // An operation_id that is no key names no operation.
    let malformed = invalid_write(Action::CreateTicket, Some("x".into()), vec![]);
    let malformed = record(&malformed).expect("a record");
    assert!(malformed.get("operationId").is_none(), "{malformed}");
    // A read's problem names its tool and no operation.
    let read = problem("get_ticket", "not_found", vec![], "Check the id.");
    let read = record(&read).expect("a record");
    assert_eq!(read["tool"], "get_ticket");
    assert_eq!(read["code"], "not_found");
    assert!(read.get("operationId").is_none(), "{read}");
}
