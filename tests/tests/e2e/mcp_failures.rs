//! The failure record in a tool result's `_meta`
//! (`retry-safe-tickets/failure`, the shape of the MCP proposal SEP-3313):
//! on a conflict, a likely-duplicate refusal, a held key's `in_progress`
//! and a read's `not_found`, through a real server and an rmcp client; on
//! no result that shows an effect.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use e2e_tests::TestApp;
use kitchen::testing::TestDatabase;
use kitchen::{Action, DuplicateGuard, GuardMode, KitchenConfig};
use mcp_door::FAILURE_META;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

use crate::fresh_key;
use crate::mcp_support::{Protocol, call, connect, content, create};

/// The failure record of `result`, if it carries one.
fn record(result: &CallToolResult) -> Option<Value> {
    result
        .meta
        .as_ref()
        .and_then(|meta| meta.get(FAILURE_META))
        .cloned()
}

/// The record of `result`, which must carry one.
fn failure(result: &CallToolResult) -> Value {
    record(result).unwrap_or_else(|| panic!("no {FAILURE_META} in {result:?}"))
}

/// The time now in Unix epoch milliseconds.
fn now_ms() -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970");
    u64::try_from(now.as_millis()).expect("fits")
}

/// A record's common fields: a server-made correlation id (a UUID), and
/// the tool and operation it concerns.
fn assert_names(record: &Value, tool: &str, operation_id: Option<&str>) {
    assert_eq!(record["tool"], tool, "{record}");
    assert_eq!(
        record.get("operationId").and_then(Value::as_str),
        operation_id,
        "{record}"
    );
    let correlation = record["correlationId"].as_str().expect("a correlationId");
    assert!(uuid::Uuid::parse_str(correlation).is_ok(), "{record}");
}

/// A success carries no record; a conflict carries one that says
/// retrying the same call cannot help, with the operation it concerns; a
/// read's `not_found` names its tool and no operation.
async fn a_conflict_carries_the_record_and_a_success_none(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let created = create(&client, &key, "Disk full").await;
    assert_eq!(content(&created)["status"], "created");
    assert_eq!(record(&created), None, "{created:?}");
    let replayed = create(&client, &key, "Disk full").await;
    assert_eq!(content(&replayed)["status"], "replayed");
    assert_eq!(record(&replayed), None, "{replayed:?}");

    let conflict = create(&client, &key, "Disk fuller").await;
    assert_eq!(conflict.is_error, Some(true));
    assert_eq!(content(&conflict)["status"], "conflict");
    let said = failure(&conflict);
    assert_eq!(said["class"], "capability", "{said}");
    assert_eq!(said["code"], "conflict", "{said}");
    assert_eq!(said["retryable"], false, "{said}");
    assert!(said.get("retryNotBefore").is_none(), "{said}");
    assert_names(&said, "create_ticket", Some(&key));
    // Each failure its own correlation id.
    let again = failure(&create(&client, &key, "Disk fuller").await);
    assert_ne!(again["correlationId"], said["correlationId"]);

    let missing = call(
        &client,
        "get_ticket",
        json!({"ticket_id": uuid::Uuid::now_v7().to_string()}),
    )
    .await;
    assert_eq!(missing.is_error, Some(true));
    let said = failure(&missing);
    assert_eq!(said["code"], "not_found", "{said}");
    assert_eq!(said["retryable"], false, "{said}");
    assert_names(&said, "get_ticket", None);
}

/// The likely-duplicate guard in `confirm`: the second create of the same
/// ticket under a fresh operation_id is refused, and its record says so
/// (a decision for the caller, not a retry), naming the refused call's
/// operation_id.
async fn a_possible_duplicate_refusal_carries_the_record(db: TestDatabase) {
    let config = KitchenConfig {
        duplicate_guard: DuplicateGuard {
            mode: GuardMode::Confirm,
            ..DuplicateGuard::default()
        },
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(&db, config, Duration::from_secs(30)).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let first = create(&client, &fresh_key(), "Disk full").await;
    assert_eq!(content(&first)["status"], "created");
    assert_eq!(record(&first), None, "{first:?}");

    let key = fresh_key();
    let refused = create(&client, &key, "Disk full").await;
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(content(&refused)["status"], "possible_duplicate");
    let said = failure(&refused);
    assert_eq!(said["class"], "governance", "{said}");
    assert_eq!(said["code"], "possible_duplicate", "{said}");
    assert_eq!(said["retryable"], false, "{said}");
    assert!(said.get("retryNotBefore").is_none(), "{said}");
    assert_names(&said, "create_ticket", Some(&key));

    // Meant as a second one: made, and no record.
    let meant = call(
        &client,
        "create_ticket",
        json!({"operation_id": key, "project_id": "ops", "title": "Disk full", "confirm_new": true}),
    )
    .await;
    assert_eq!(content(&meant)["status"], "created");
    assert_eq!(record(&meant), None, "{meant:?}");
}

/// A key another attempt holds past the wait bound: `in_progress` (not a
/// tool error), and the record says the same call can help, and from
/// when. PostgreSQL only: on SQLite the holder holds the file's write
/// lock, and the answer is the JSON-RPC database-locked error, not a tool
/// result (`mcp_lifecycle.rs` covers that one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_in_progress_is_retryable_not_before_the_kitchens_wait() {
    let db = TestDatabase::postgres().await;
    let config = KitchenConfig {
        wait_bound: Duration::from_millis(200),
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(&db, config, Duration::from_secs(30)).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let parsed = kitchen::OperationKey::parse(key.as_str()).expect("a key");
    let holder = app
        .kitchen
        .hold_action_key_for_test(acme.id, Action::CreateTicket, &parsed)
        .await;
    let before = now_ms();
    let waiting = create(&client, &key, "Disk full").await;
    let after = now_ms();
    holder.roll_back().await;
    assert_ne!(waiting.is_error, Some(true), "a wait is not an error");
    let body = content(&waiting);
    assert_eq!(body["status"], "in_progress", "{body}");
    let said = failure(&waiting);
    assert_eq!(said["class"], "reliability", "{said}");
    assert_eq!(said["code"], "in_progress", "{said}");
    assert_eq!(said["retryable"], true, "{said}");
    let wait_ms = body["retry_after_seconds"].as_u64().expect("a wait") * 1000;
    let not_before = said["retryNotBefore"].as_u64().expect("epoch milliseconds");
    assert!(
        before + wait_ms <= not_before && not_before <= after + wait_ms,
        "{said}: not before {before}+{wait_ms}..{after}+{wait_ms}"
    );
    assert_names(&said, "create_ticket", Some(&key));

    // Released: the same call now makes the ticket, with no record.
    let made = create(&client, &key, "Disk full").await;
    assert_eq!(content(&made)["status"], "created");
    assert_eq!(record(&made), None, "{made:?}");
}

kitchen::on_both_databases!(
    a_conflict_carries_the_record_and_a_success_none,
    a_possible_duplicate_refusal_carries_the_record,
);
