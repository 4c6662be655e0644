use kitchen::{AttemptKind, AttemptResult, EffectAttempt, OperationState, Trigger};
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::status::{EffectSummary, Reconciliation};
use super::*;
use crate::result_text;

const KEY: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a79";

fn attempt(
    number: i32,
    kind: AttemptKind,
    trigger: Trigger,
    result: AttemptResult,
) -> EffectAttempt {
    EffectAttempt {
        number,
        kind,
        trigger,
        started_at: OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(number.into()),
        finished_at: None,
        result: Some(result),
        detail: None,
    }
}

fn status(state: OperationState, effect: Option<EffectSummary<'_>>) -> Value {
    let result = OperationStatusResult::in_state(
        state,
        Action::CreateTicket,
        KEY.into(),
        Some("2026-01-08T00:00:00Z".into()),
        None,
        effect,
    );
    assert!(result.retry_safe);
    serde_json::to_value(result).expect("json")
}

#[test]
fn an_unknown_operation_shows_its_ledger_compactly() {
    let attempts = [
        attempt(
            1,
            AttemptKind::Dispatch,
            Trigger::Request,
            AttemptResult::Ambiguous,
        ),
        attempt(
            2,
            AttemptKind::Lookup,
            Trigger::Background,
            AttemptResult::AbsentTooSoon,
        ),
        attempt(
            3,
            AttemptKind::Lookup,
            Trigger::Status,
            AttemptResult::LookupFailed,
        ),
    ];
    let body = status(
        OperationState::Unknown,
        Some(EffectSummary {
            detail: Some("The provider's answer was lost."),
            attempts: attempts.len(),
            last_reconciliation: attempts.last(),
            duplicates_at_provider: &[],
            given_up: false,
            settled_by_hand: &[],
        }),
    );
    let step = body["next_step"].as_str().expect("a next_step").to_owned();
    assert_eq!(
        body,
        json!({
            "state": "unknown",
            "action": "create_ticket",
            "operation_id": KEY,
            "ticket": null,
            "retained_until": "2026-01-08T00:00:00Z",
            "retry_safe": true,
            "detail": "The provider's answer was lost.",
            "attempts": 3,
            "last_reconciliation": {
                "result": "lookup_failed",
                "at": "1970-01-01T00:00:03Z",
                "trigger": "status",
            },
            "next_step": step,
        })
    );
    assert!(step.contains("same operation_id and arguments"), "{step}");
    assert!(step.contains("never invent a new operation_id"), "{step}");
}

#[test]
fn each_state_says_what_to_do() {
    for (state, words) in [
        (OperationState::Succeeded, "do not create it again"),
        (OperationState::InProgress, "check again shortly"),
        (OperationState::Unknown, "reconciled"),
        (OperationState::FailedBeforeEffect, "not used up"),
    ] {
        let body = status(state, None);
        assert_eq!(body["state"], state.as_str());
        let step = body["next_step"].as_str().expect("a next_step");
        assert!(step.contains(words), "{state:?}: {step}");
        if state != OperationState::Succeeded {
            assert!(step.contains("same operation_id"), "{state:?}: {step}");
        }
        // A ticket made locally has no ledger: nothing of it is shown.
        for field in ["detail", "attempts", "last_reconciliation"] {
            assert!(body.get(field).is_none(), "{state:?}: {body}");
        }
    }
}

#[test]
fn an_unfinished_lookup_has_a_null_result() {
    let mut lookup = attempt(2, AttemptKind::Lookup, Trigger::Retry, AttemptResult::Found);
    lookup.result = None;
    let shown = Reconciliation::from(&lookup);
    assert_eq!(shown.result, None);
    assert_eq!(shown.trigger, "retry");
}

/// Past its window a key is spent, not free: the status says the effect
/// happened, until when the key is kept, that a retry makes nothing new,
/// and how to read the resource.
#[test]
fn an_expired_status_says_the_key_is_spent_until_it_is_forgotten() {
    const TICKET: &str = "0193a4f2-7c1e-7b8a-9f00-4c2d1e5b6a7a";
    let step = result_text::status_expired(
        Action::CreateTicket,
        Some(TICKET),
        "2026-01-01T00:00:00Z",
        "2027-02-05T00:00:00Z",
    );
    assert_eq!(
        step,
        format!(
            "The ticket was created (ticket_id {TICKET}) at 2026-01-01T00:00:00Z; its first \
                 answer is no longer kept. This operation_id is spent until \
                 2027-02-05T00:00:00Z: calling create_ticket again with it and the same arguments \
                 makes nothing new and returns the ticket as it is now (read it with get_ticket). \
                 Do not retry with a new operation_id: that would make it a second time."
        )
    );
    let step = result_text::status_expired(
        Action::AddComment,
        Some(TICKET),
        "2026-01-01T00:00:00Z",
        "2027-02-05T00:00:00Z",
    );
    assert!(
        step.starts_with(&format!("The comment was added on ticket_id {TICKET} at")),
        "{step}"
    );
    assert!(
        step.contains("returns the comment as it is now (read it with list_comments)"),
        "{step}"
    );
}

/// "Nothing recorded" is safe advice only within the tombstone horizon:
/// the answer says so.
#[test]
fn nothing_recorded_names_the_tombstone_horizon() {
    let body = serde_json::to_value(OperationStatusResult::not_found(
        Action::UpdateTicket,
        KEY.into(),
    ))
    .expect("json");
    assert_eq!(body["state"], "not_found");
    for field in ["phase", "resource_id", "created_at", "replayable_until"] {
        assert!(body.get(field).is_none(), "{body}");
    }
    let step = body["next_step"].as_str().expect("a next_step");
    assert!(
        step.contains(
            "or the id was used more than the tombstone horizon ago: operation_ids are \
                 remembered until their retained_until"
        ) && step.contains("a call still on its way may yet record it"),
        "{step}"
    );
}

#[test]
fn the_output_schema_lists_every_phase() {
    let schema =
        serde_json::to_value(schemars::schema_for!(OperationStatusResult)).expect("a schema");
    assert_eq!(
        schema["properties"]["phase"]["enum"],
        json!(["replayable", "expired"])
    );
}

#[test]
fn the_output_schema_lists_every_state() {
    let schema =
        serde_json::to_value(schemars::schema_for!(OperationStatusResult)).expect("a schema");
    assert_eq!(
        schema["properties"]["state"]["enum"],
        json!([
            "succeeded",
            "in_progress",
            "unknown",
            "failed_before_effect",
            "not_found"
        ])
    );
}
