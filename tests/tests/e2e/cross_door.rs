//! One key namespace per action: a key first used on one door and retried
//! on the other replays (same meaning) or conflicts (other meaning). For
//! update_ticket, the REST `If-Match` and the MCP `expected_version` are
//! one meaning, and so are the merge patch and the tool's arguments.

use e2e_tests::{TestApp, TestTenant};
use kitchen::testing::TestDatabase;
use serde_json::{Value, json};

use crate::mcp_support::{Protocol, call, connect, content, create, new_ticket};
use crate::{DISK_FULL, fresh_key};

/// `PATCH /v1/tickets/{id}` with a merge patch, the key and, if given, an
/// `If-Match` version (the door contract in docs/contract.md).
async fn rest_patch(
    app: &TestApp,
    tenant: &TestTenant,
    id: &str,
    key: &str,
    if_match: Option<i64>,
    patch: &Value,
) -> reqwest::Response {
    let mut request = app
        .client
        .patch(app.url(&format!("/v1/tickets/{id}")))
        .bearer_auth(&tenant.token)
        .header("content-type", "application/merge-patch+json")
        .header("idempotency-key", key)
        .body(patch.to_string());
    if let Some(version) = if_match {
        request = request.header("if-match", format!("\"{version}\""));
    }
    request.send().await.expect("server answers")
}

async fn rest_then_mcp_replays_and_conflicts(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let rest: serde_json::Value = app
        .post_ticket(&acme, Some(&key), DISK_FULL)
        .await
        .json()
        .await
        .expect("json");
    let mcp = content(&create(&client, &key, "Disk full on db-1").await);
    assert_eq!(mcp["status"], "replayed");
    assert_eq!(mcp["ticket"]["id"], rest["id"]);
    let other = create(&client, &key, "Something else").await;
    assert_eq!(other.is_error, Some(true));
    assert_eq!(content(&other)["status"], "conflict");
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn mcp_then_rest_replays_and_conflicts(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Legacy).await;
    let key = fresh_key();
    let mcp = content(&create(&client, &key, "Disk full on db-1").await);
    let rest = app.post_ticket(&acme, Some(&key), DISK_FULL).await;
    assert_eq!(rest.status(), 201);
    assert_eq!(rest.headers()["idempotent-replayed"], "true");
    let rest: serde_json::Value = rest.json().await.expect("json");
    assert_eq!(rest["id"], mcp["ticket"]["id"]);
    let other = app
        .post_ticket(
            &acme,
            Some(&key),
            r#"{"project_id":"ops","title":"Something else"}"#,
        )
        .await;
    assert_eq!(other.status(), 422);
    assert_eq!(app.ticket_count(&acme).await, 1);
}

/// An update made over REST, retried over MCP with its Idempotency-Key as
/// the operation_id: the same change, replayed, even after the ticket
/// changed again; other arguments under that key conflict.
async fn rest_update_then_mcp_replays_and_conflicts(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;
    let key = fresh_key();
    let patch = json!({"title": "Disk full on db-1", "assignee": "Ada", "description": null});
    let rest = rest_patch(&app, &acme, &id, &key, Some(1), &patch).await;
    assert_eq!(rest.status(), 200, "PATCH /v1/tickets/{{id}} with If-Match");
    assert_eq!(rest.headers()["etag"], "\"2\"");
    let rest: Value = rest.json().await.expect("json");
    assert_eq!(rest["version"], 2);

    // Someone moves the ticket on; the retry still answers the first change.
    let moved = content(
        &call(
            &client,
            "transition_ticket",
            json!({"ticket_id": id, "to": "in_progress", "operation_id": fresh_key()}),
        )
        .await,
    );
    assert_eq!(moved["ticket"]["version"], 3);

    let mut args = patch.clone();
    args["ticket_id"] = id.clone().into();
    args["expected_version"] = 1.into();
    args["operation_id"] = key.clone().into();
    let mcp = call(&client, "update_ticket", args).await;
    assert_eq!(mcp.is_error, Some(false));
    let mcp = content(&mcp);
    assert_eq!(mcp["status"], "replayed", "{mcp}");
    for field in ["id", "title", "assignee", "version", "status", "updated_at"] {
        assert_eq!(mcp["ticket"][field], rest[field], "{field}");
    }
    assert_eq!(
        mcp["ticket"]["status"], "open",
        "as the REST change left it"
    );

    let other = call(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "title": "Something else", "operation_id": key}),
    )
    .await;
    assert_eq!(other.is_error, Some(true));
    assert_eq!(content(&other)["status"], "conflict");
    let now = content(&call(&client, "get_ticket", json!({"ticket_id": id})).await);
    assert_eq!(now["ticket"]["version"], 3, "neither retry changed it");
}

/// An update made over MCP, retried over REST: replayed, as create is.
async fn mcp_update_then_rest_replays(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Legacy).await;
    let id = new_ticket(&client, "Disk full").await;
    let key = fresh_key();
    let mcp = content(
        &call(
            &client,
            "update_ticket",
            json!({"ticket_id": id, "priority": "urgent", "operation_id": key}),
        )
        .await,
    );
    assert_eq!(mcp["status"], "updated");
    let rest = rest_patch(&app, &acme, &id, &key, None, &json!({"priority": "urgent"})).await;
    assert_eq!(rest.status(), 200);
    assert_eq!(rest.headers()["idempotent-replayed"], "true");
    let rest: Value = rest.json().await.expect("json");
    assert_eq!(rest["version"], mcp["ticket"]["version"]);
    assert_eq!(rest["priority"], "urgent");
}

/// A comment added over REST, retried over MCP: the same comment.
async fn rest_comment_then_mcp_replays(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;
    let key = fresh_key();
    let rest = app
        .client
        .post(app.url(&format!("/v1/tickets/{id}/comments")))
        .bearer_auth(&acme.token)
        .header("content-type", "application/json")
        .header("idempotency-key", &key)
        .body(json!({"body": "Freed 20 GB."}).to_string())
        .send()
        .await
        .expect("server answers");
    assert_eq!(rest.status(), 201);
    let rest: Value = rest.json().await.expect("json");
    let mcp = content(
        &call(
            &client,
            "add_comment",
            json!({"ticket_id": id, "body": "Freed 20 GB.", "operation_id": key}),
        )
        .await,
    );
    assert_eq!(mcp["status"], "replayed", "{mcp}");
    assert_eq!(mcp["comment"]["id"], rest["id"]);
    let listed = content(&call(&client, "list_comments", json!({"ticket_id": id})).await);
    assert_eq!(listed["comments"].as_array().map(Vec::len), Some(1));
}

kitchen::on_both_databases!(
    rest_then_mcp_replays_and_conflicts,
    mcp_then_rest_replays_and_conflicts,
    rest_update_then_mcp_replays_and_conflicts,
    mcp_update_then_rest_replays,
    rest_comment_then_mcp_replays,
);
