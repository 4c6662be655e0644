//! The ticket lifecycle over MCP, through an rmcp client: update_ticket,
//! transition_ticket, add_comment and list_comments, each with its created
//! (updated), replayed, conflict, invalid and refused answers, and
//! get_operation_status for every action. A refused or invalid write leaves
//! its operation_id unused; a replay returns the first result even after
//! the ticket changed.

use std::sync::Arc;
use std::time::Duration;

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::fake_provider::{DispatchFault, FakeProvider};
use kitchen::testing::{DatabaseKind, TestDatabase};
use kitchen::{Action, KitchenConfig, RemoteSettings, TicketBackend};
use serde_json::{Value, json};

use crate::fresh_key;
use crate::mcp_support::{
    Client, Protocol, call, connect, content, error_fields, new_ticket, status_of,
};

/// Calls `tool` and returns whether it was a tool error, and its content.
async fn answer(client: &Client, tool: &'static str, args: Value) -> (bool, Value) {
    let result = call(client, tool, args).await;
    (result.is_error == Some(true), content(&result))
}

/// `get_ticket`'s ticket.
async fn ticket(client: &Client, id: &str) -> Value {
    content(&call(client, "get_ticket", json!({ "ticket_id": id })).await)["ticket"].clone()
}

/// The answer must be a tool error that changed nothing and kept the key
/// unused: nothing is recorded under it for `action`.
async fn refused_and_key_unused(client: &Client, action: &str, key: &str, body: &Value) {
    let step = body["next_step"].as_str().expect("a next_step");
    assert!(step.contains("the operation_id was not used"), "{step}");
    let status = status_of(client, action, key).await;
    assert_eq!(status["state"], "not_found", "{action} {key}: {status}");
}

async fn update_ticket_updates_replays_and_conflicts(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;
    let key = fresh_key();
    let args = json!({
        "ticket_id": id, "title": "Disk full on db-1", "assignee": "Ada",
        "expected_version": 1, "operation_id": key
    });

    let (error, updated) = answer(&client, "update_ticket", args.clone()).await;
    assert!(!error, "{updated}");
    assert_eq!(updated["status"], "updated");
    assert_eq!(updated["operation_id"], key.as_str());
    assert_eq!(updated["ticket"]["title"], "Disk full on db-1");
    assert_eq!(updated["ticket"]["assignee"], "Ada");
    assert_eq!(updated["ticket"]["version"], 2);
    assert!(updated["ticket"]["updated_at"].is_string(), "{updated}");
    assert_eq!(ticket(&client, &id).await, updated["ticket"]);

    let (error, replayed) = answer(&client, "update_ticket", args.clone()).await;
    assert!(!error);
    assert_eq!(replayed["status"], "replayed");
    assert_eq!(replayed["ticket"], updated["ticket"], "the first result");
    let step = replayed["next_step"].as_str().expect("a next_step");
    assert!(step.contains("nothing was changed again"), "{step}");

    // Someone changes the ticket; the replay still answers what the first
    // call did, not how the ticket is now.
    let (_, later) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "priority": "urgent", "operation_id": fresh_key()}),
    )
    .await;
    assert_eq!(later["ticket"]["version"], 3);
    assert_eq!(later["ticket"]["assignee"], "Ada", "left out: kept");
    let (_, again) = answer(&client, "update_ticket", args.clone()).await;
    assert_eq!(again["status"], "replayed");
    assert_eq!(again["ticket"], updated["ticket"], "frozen at version 2");
    assert_eq!(ticket(&client, &id).await["version"], 3, "no change again");

    // The same key with other arguments: a conflict that points back.
    let (error, conflict) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "title": "Something else", "operation_id": key}),
    )
    .await;
    assert!(error);
    assert_eq!(conflict["status"], "conflict");
    assert_eq!(conflict["original_operation"]["ticket_id"], id.as_str());
    let step = conflict["next_step"].as_str().expect("a next_step");
    assert!(
        step.starts_with("If you meant the same change, it was already made"),
        "{step}"
    );
    assert!(step.contains("action update_ticket"), "{step}");
    assert_eq!(ticket(&client, &id).await["title"], "Disk full on db-1");

    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_updated", updated);
        insta::assert_json_snapshot!("mcp_update_replayed", replayed);
        insta::assert_json_snapshot!("mcp_update_conflict", conflict);
    });
}

/// `null` removes a description or an assignee; left out keeps it.
async fn null_removes_and_left_out_keeps(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Legacy).await;
    let id = new_ticket(&client, "Disk full").await;
    let update = |args: Value| {
        let mut args = args;
        args["ticket_id"] = id.clone().into();
        args["operation_id"] = fresh_key().into();
        let client = &client;
        async move { answer(client, "update_ticket", args).await.1 }
    };
    let set = update(json!({"description": "db-1 at 100%", "assignee": "Ada"})).await;
    assert_eq!(set["ticket"]["description"], "db-1 at 100%");
    assert_eq!(set["ticket"]["assignee"], "Ada");
    let kept = update(json!({"title": "Disk full on db-1"})).await;
    assert_eq!(kept["ticket"]["description"], "db-1 at 100%");
    assert_eq!(kept["ticket"]["assignee"], "Ada");
    let removed = update(json!({"description": null, "assignee": null})).await;
    assert_eq!(removed["status"], "updated", "{removed}");
    assert_eq!(removed["ticket"]["description"], Value::Null);
    assert_eq!(removed["ticket"]["assignee"], Value::Null);
    // A null title or priority cannot remove anything: read as left out,
    // as on every tool whose schema does not admit null.
    let titled = update(json!({"title": null, "priority": "high"})).await;
    assert_eq!(titled["status"], "updated", "{titled}");
    assert_eq!(titled["ticket"]["title"], "Disk full on db-1");
    assert_eq!(titled["ticket"]["version"], 5);
}

async fn invalid_updates_change_nothing_and_keep_the_key(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;
    let key = fresh_key();
    let (error, invalid) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "title": "", "priority": "asap", "expected_version": 0,
               "assignee": 7, "status": "closed", "operation_id": key}),
    )
    .await;
    assert!(error);
    assert_eq!(invalid["status"], "invalid");
    assert_eq!(
        error_fields(&invalid),
        [
            "assignee",
            "status",
            "expected_version",
            "title",
            "priority"
        ],
        "argument problems first, then the kitchen's, each once"
    );
    refused_and_key_unused(&client, "update_ticket", &key, &invalid).await;
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_update_invalid", invalid));

    // Without a ticket_id, the other problems are still reported.
    let (_, missing) = answer(
        &client,
        "update_ticket",
        json!({"title": "", "operation_id": key}),
    )
    .await;
    assert_eq!(error_fields(&missing), ["ticket_id", "title"]);
    // Without an operation_id, nothing else is looked at.
    let (_, keyless) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "title": ""}),
    )
    .await;
    assert_eq!(error_fields(&keyless), ["operation_id"]);
    assert_eq!(keyless["operation_id"], Value::Null);

    let (_, fixed) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "title": "Disk full on db-1", "operation_id": key}),
    )
    .await;
    assert_eq!(fixed["status"], "updated", "the key was not used");
}

async fn a_version_mismatch_is_a_tool_error_that_keeps_the_key(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;
    let (_, first) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "priority": "high", "expected_version": 1,
               "operation_id": fresh_key()}),
    )
    .await;
    assert_eq!(first["ticket"]["version"], 2);

    let key = fresh_key();
    let stale = json!({"ticket_id": id, "title": "Disk full on db-1", "expected_version": 1,
                       "operation_id": key});
    let (error, mismatch) = answer(&client, "update_ticket", stale).await;
    assert!(error, "{mismatch}");
    assert_eq!(mismatch["status"], "version_mismatch");
    assert_eq!(mismatch["current_version"], 2);
    assert_eq!(mismatch["ticket"], Value::Null);
    assert!(mismatch.get("retry_after_seconds").is_none(), "{mismatch}");
    let step = mismatch["next_step"].as_str().expect("a next_step");
    assert!(step.contains("get_ticket"), "{step}");
    assert!(step.contains("expected_version 2"), "{step}");
    refused_and_key_unused(&client, "update_ticket", &key, &mismatch).await;
    assert_eq!(ticket(&client, &id).await["title"], "Disk full");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_version_mismatch", mismatch));

    // Having read the ticket again, the caller decides and sends the same
    // key with the version it now knows.
    let (_, decided) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "title": "Disk full on db-1", "expected_version": 2,
               "operation_id": key}),
    )
    .await;
    assert_eq!(decided["status"], "updated", "{decided}");
    assert_eq!(decided["ticket"]["version"], 3);
}

async fn transition_moves_and_refuses_moves_not_allowed(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;
    let key = fresh_key();

    let (error, refused) = answer(
        &client,
        "transition_ticket",
        json!({"ticket_id": id, "to": "closed", "operation_id": key}),
    )
    .await;
    assert!(error, "{refused}");
    assert_eq!(refused["status"], "transition_not_allowed");
    assert_eq!(refused["current_status"], "open");
    assert_eq!(refused["allowed_moves"], json!(["in_progress"]));
    assert!(refused.get("retry_after_seconds").is_none(), "{refused}");
    refused_and_key_unused(&client, "transition_ticket", &key, &refused).await;
    assert_eq!(ticket(&client, &id).await["status"], "open");

    let args = json!({"ticket_id": id, "to": "in_progress", "reason": "On it",
                      "operation_id": key});
    let (error, moved) = answer(&client, "transition_ticket", args.clone()).await;
    assert!(!error, "{moved}");
    assert_eq!(moved["status"], "updated");
    assert_eq!(moved["ticket"]["status"], "in_progress");
    assert_eq!(moved["ticket"]["version"], 2);
    let (_, replayed) = answer(&client, "transition_ticket", args).await;
    assert_eq!(replayed["status"], "replayed");
    assert_eq!(replayed["ticket"], moved["ticket"]);

    let (error, conflict) = answer(
        &client,
        "transition_ticket",
        json!({"ticket_id": id, "to": "resolved", "operation_id": key}),
    )
    .await;
    assert!(error);
    assert_eq!(conflict["status"], "conflict");
    let (error, invalid) = answer(
        &client,
        "transition_ticket",
        json!({"ticket_id": id, "to": "done", "reason": 5, "operation_id": fresh_key()}),
    )
    .await;
    assert!(error);
    assert_eq!(error_fields(&invalid), ["reason", "to"]);
    assert_eq!(invalid["errors"][1]["code"], "unknown_value");
    assert_eq!(ticket(&client, &id).await["version"], 2);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_transition_not_allowed", refused);
        insta::assert_json_snapshot!("mcp_transitioned", moved);
        insta::assert_json_snapshot!("mcp_transition_replayed", replayed);
        insta::assert_json_snapshot!("mcp_transition_conflict", conflict);
        insta::assert_json_snapshot!("mcp_transition_invalid", invalid);
    });
}

async fn comments_are_added_once_and_listed(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Legacy).await;
    let id = new_ticket(&client, "Disk full").await;
    let key = fresh_key();
    let args = json!({"ticket_id": id, "body": "Freed 20 GB.\nWatching it.",
                      "operation_id": key});

    let (error, created) = answer(&client, "add_comment", args.clone()).await;
    assert!(!error, "{created}");
    assert_eq!(created["status"], "created");
    assert_eq!(created["comment"]["ticket_id"], id.as_str());
    assert_eq!(created["comment"]["body"], "Freed 20 GB.\nWatching it.");
    let (error, replayed) = answer(&client, "add_comment", args).await;
    assert!(!error);
    assert_eq!(replayed["status"], "replayed");
    assert_eq!(replayed["comment"], created["comment"], "one comment");

    let (error, conflict) = answer(
        &client,
        "add_comment",
        json!({"ticket_id": id, "body": "Something else", "operation_id": key}),
    )
    .await;
    assert!(error);
    assert_eq!(conflict["status"], "conflict");
    assert_eq!(conflict["original_operation"]["ticket_id"], id.as_str());
    let blank_key = fresh_key();
    let (error, invalid) = answer(
        &client,
        "add_comment",
        json!({"ticket_id": id, "body": "  ", "operation_id": blank_key}),
    )
    .await;
    assert!(error);
    assert_eq!(error_fields(&invalid), ["body"]);
    refused_and_key_unused(&client, "add_comment", &blank_key, &invalid).await;

    let (_, second) = answer(
        &client,
        "add_comment",
        json!({"ticket_id": id, "body": "Fixed.", "operation_id": fresh_key()}),
    )
    .await;
    let (error, page) = answer(
        &client,
        "list_comments",
        json!({"ticket_id": id, "limit": 1}),
    )
    .await;
    assert!(!error);
    assert_eq!(
        page["comments"],
        json!([created["comment"]]),
        "oldest first"
    );
    let cursor = page["next_cursor"].as_str().expect("a next page");
    let (_, rest) = answer(
        &client,
        "list_comments",
        json!({"ticket_id": id, "cursor": cursor}),
    )
    .await;
    assert_eq!(rest["comments"], json!([second["comment"]]));
    assert_eq!(rest["next_cursor"], Value::Null);
    let (error, bad) = answer(
        &client,
        "list_comments",
        json!({"ticket_id": id, "limit": 0}),
    )
    .await;
    assert!(error);
    assert_eq!(error_fields(&bad), ["limit"]);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_comment_created", created);
        insta::assert_json_snapshot!("mcp_comment_replayed", replayed);
        insta::assert_json_snapshot!("mcp_comment_conflict", conflict);
        insta::assert_json_snapshot!("mcp_comment_invalid", invalid);
        insta::assert_json_snapshot!("mcp_comment_list", page);
    });
}

/// Another tenant's ticket, and a string that is no ticket id, are "not
/// found" for every tool that names a ticket: the same answer as for a
/// ticket that never existed, revealing nothing, changing nothing, and
/// leaving the key unused.
async fn another_tenants_ticket_is_not_found(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let globex = app.tenant("globex").await;
    let a = connect(&app, &acme.token, Protocol::Stateless).await;
    let g = connect(&app, &globex.token, Protocol::Stateless).await;
    let theirs = new_ticket(&a, "Acme secret").await;
    let never = uuid::Uuid::now_v7().to_string();
    let mut answers = Vec::new();
    for id in [theirs.as_str(), never.as_str(), "not-a-ticket"] {
        for (tool, action, mut args) in [
            (
                "update_ticket",
                "update_ticket",
                json!({"title": "Globex now", "expected_version": 1}),
            ),
            (
                "transition_ticket",
                "transition_ticket",
                json!({"to": "in_progress"}),
            ),
            ("add_comment", "add_comment", json!({"body": "Peek"})),
        ] {
            let key = fresh_key();
            args["ticket_id"] = id.into();
            args["operation_id"] = key.clone().into();
            let (error, body) = answer(&g, tool, args).await;
            assert!(error, "{tool} {id}: {body}");
            assert_eq!(body["status"], "not_found", "{tool} {id}: {body}");
            let step = body["next_step"].as_str().expect("a next_step");
            assert!(step.starts_with("No ticket has this ticket_id."), "{step}");
            assert!(step.contains("list_tickets"), "{step}");
            refused_and_key_unused(&g, action, &key, &body).await;
            answers.push((tool, body));
        }
        let (error, listed) = answer(&g, "list_comments", json!({ "ticket_id": id })).await;
        assert!(error, "{listed}");
        assert_eq!(listed["error"], "not_found");
    }
    // One answer per tool whatever the id: nothing tells "someone else's"
    // from "no such ticket".
    let redact = |body: &Value| {
        let mut body = body.clone();
        body["operation_id"] = Value::Null;
        body
    };
    for (tool, body) in &answers {
        let first = answers.iter().find(|(t, _)| t == tool).expect("one");
        assert_eq!(redact(body), redact(&first.1), "{tool}");
    }
    let mine = ticket(&a, &theirs).await;
    assert_eq!(
        (mine["title"].clone(), mine["version"].clone()),
        (json!("Acme secret"), json!(1)),
        "unchanged"
    );
    let (_, comments) = answer(&a, "list_comments", json!({ "ticket_id": theirs })).await;
    assert_eq!(comments["comments"], json!([]));
    let update = &answers[0].1;
    let comment = &answers[2].1;
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_update_not_found", update);
        insta::assert_json_snapshot!("mcp_comment_not_found", comment);
    });
}

/// Each action has its own key namespace, and get_operation_status finds
/// each one's result by its action.
async fn operation_status_answers_for_every_action(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let created = content(&crate::mcp_support::create(&client, &key, "Disk full").await);
    let id = created["ticket"]["id"].as_str().expect("an id").to_owned();
    let (_, updated) = answer(
        &client,
        "update_ticket",
        json!({"ticket_id": id, "priority": "high", "operation_id": key}),
    )
    .await;
    let (_, moved) = answer(
        &client,
        "transition_ticket",
        json!({"ticket_id": id, "to": "in_progress", "operation_id": key}),
    )
    .await;
    let (_, commented) = answer(
        &client,
        "add_comment",
        json!({"ticket_id": id, "body": "On it", "operation_id": key}),
    )
    .await;
    let (_, labelled) = answer(
        &client,
        "add_label",
        json!({"ticket_id": id, "label": "disk", "operation_id": key}),
    )
    .await;
    let (_, unlabelled) = answer(
        &client,
        "remove_label",
        json!({"ticket_id": id, "label": "disk", "operation_id": key}),
    )
    .await;
    assert_eq!(labelled["ticket"]["labels"], json!(["disk"]));
    assert_eq!(unlabelled["ticket"]["labels"], json!([]));
    for (action, result) in [
        ("update_ticket", &updated),
        ("transition_ticket", &moved),
        ("add_comment", &commented),
        ("add_label", &labelled),
        ("remove_label", &unlabelled),
    ] {
        assert_ne!(
            result["status"], "replayed",
            "{action}: one namespace per action"
        );
    }

    let by_default = content(
        &call(
            &client,
            "get_operation_status",
            json!({ "operation_id": key }),
        )
        .await,
    );
    assert_eq!(by_default["action"], "create_ticket");
    assert_eq!(by_default["ticket"], created["ticket"]);
    let mut statuses = Vec::new();
    for action in Action::ALL {
        let status = status_of(&client, action.as_str(), &key).await;
        assert_eq!(status["state"], "succeeded", "{action}: {status}");
        assert_eq!(status["action"], action.as_str());
        assert_eq!(status["retry_safe"], true);
        let step = status["next_step"].as_str().expect("a next_step");
        assert!(step.contains(action.as_str()), "{action}: {step}");
        statuses.push(status);
    }
    assert_eq!(statuses[0]["ticket"], created["ticket"]);
    assert_eq!(statuses[1]["ticket"], updated["ticket"]);
    assert_eq!(statuses[2]["ticket"], moved["ticket"]);
    assert_eq!(statuses[3]["ticket"], Value::Null);
    assert_eq!(statuses[3]["comment"], commented["comment"]);
    assert_eq!(statuses[4]["ticket"], labelled["ticket"]);
    assert_eq!(statuses[5]["ticket"], unlabelled["ticket"]);

    let unused = status_of(&client, "add_comment", &fresh_key()).await;
    assert_eq!(unused["state"], "not_found");
    let step = unused["next_step"].as_str().expect("a next_step");
    assert!(
        step.contains("that call has added nothing so far"),
        "{step}"
    );
    let (error, bad) = answer(
        &client,
        "get_operation_status",
        json!({"operation_id": key, "action": "delete_ticket"}),
    )
    .await;
    assert!(error);
    assert_eq!(error_fields(&bad), ["action"]);
    assert_eq!(bad["errors"][0]["code"], "unknown_value");
    let message = bad["errors"][0]["message"].as_str().expect("a message");
    assert!(message.contains(&Action::names()), "{message}");
    let (update_status, comment_status) = (&statuses[1], &statuses[3]);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_operation_status_update", update_status);
        insta::assert_json_snapshot!("mcp_operation_status_comment", comment_status);
        insta::assert_json_snapshot!("mcp_operation_status_not_found_comment", unused);
        insta::assert_json_snapshot!("mcp_operation_status_unknown_action", bad);
    });
}

/// A key another attempt holds past the wait bound: `in_progress`, not an
/// error, with the kitchen's wait, and nothing written by this attempt. (On
/// SQLite the test's holder holds the file's write lock, as another
/// program would: the database-locked error instead.)
async fn a_held_key_answers_in_progress(db: TestDatabase) {
    let config = KitchenConfig {
        wait_bound: Duration::from_millis(200),
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(&db, config, Duration::from_secs(30)).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;
    let mut answers = Vec::new();
    for (action, tool, args) in [
        (
            Action::UpdateTicket,
            "update_ticket",
            json!({"title": "Disk full on db-1"}),
        ),
        (
            Action::TransitionTicket,
            "transition_ticket",
            json!({"to": "in_progress"}),
        ),
        (Action::AddComment, "add_comment", json!({"body": "On it"})),
    ] {
        let key = fresh_key();
        let parsed = kitchen::OperationKey::parse(key.as_str()).expect("a key");
        let holder = app
            .kitchen
            .hold_action_key_for_test(acme.id, action, &parsed)
            .await;
        let mut args = args;
        args["ticket_id"] = id.clone().into();
        args["operation_id"] = key.into();
        if db.backend() == DatabaseKind::Sqlite {
            // The holder holds the file's write lock, as another program
            // would: the database is locked, a retryable JSON-RPC error.
            let refused = client
                .call_tool(
                    rmcp::model::CallToolRequestParams::new(tool)
                        .with_arguments(args.as_object().cloned().expect("an object")),
                )
                .await;
            holder.roll_back().await;
            match refused {
                Err(rmcp::ServiceError::McpError(e)) => {
                    assert_eq!(
                        i64::from(e.code.0),
                        mcp_door::http_edge::DATABASE_UNAVAILABLE,
                        "{tool}: {e:?}"
                    );
                    assert_eq!(
                        e.data.as_ref().map(|d| &d["reason"]),
                        Some(&json!("database_locked"))
                    );
                }
                other => panic!("{tool}: expected the database locked, got {other:?}"),
            }
            continue;
        }
        let (error, body) = answer(&client, tool, args).await;
        holder.roll_back().await;
        assert!(!error, "{tool}: a wait is not an error: {body}");
        assert_eq!(body["status"], "in_progress", "{tool}: {body}");
        assert_eq!(
            body["retry_after_seconds"],
            kitchen::RETRY_AFTER.as_secs(),
            "{tool}: the kitchen's wait"
        );
        answers.push(body);
    }
    assert_eq!(ticket(&client, &id).await["version"], 1, "nothing written");
    if db.backend() == DatabaseKind::Sqlite {
        return;
    }
    let (update, comment) = (&answers[0], &answers[2]);
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_update_in_progress", update);
        insta::assert_json_snapshot!("mcp_comment_in_progress", comment);
    });
}

/// With tickets kept in a provider, every write goes there: a change whose
/// answer the provider lost is `unknown` (not a tool error: it names what
/// to do with the operation_id), and its retry replays once reconciled. A
/// ticket made before the deployment kept its tickets there is
/// `not_at_provider`, a tool error that leaves the operation_id unused.
async fn lifecycle_writes_reach_the_provider_on_the_remote_backend(db: TestDatabase) {
    // First the deployment keeps its tickets itself...
    let local = TestApp::spawn(&db).await;
    let acme = local.tenant("acme").await;
    let here_only = new_ticket(
        &connect(&local, &acme.token, Protocol::Stateless).await,
        "Old",
    )
    .await;
    // ...then it moves them to a provider.
    let provider = FakeProvider::ignoring_keys();
    let config = KitchenConfig {
        backend: TicketBackend::Remote {
            provider: Arc::new(provider.clone()),
            settings: RemoteSettings {
                max_inflight: Duration::ZERO,
                reconcile_every: Duration::from_secs(3600),
                ..RemoteSettings::default()
            },
        },
        ..KitchenConfig::default()
    };
    let app = TestApp::spawn_with(&db, config, Duration::from_secs(30)).await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let id = new_ticket(&client, "Disk full").await;

    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let key = fresh_key();
    let args = json!({"ticket_id": id, "priority": "urgent", "operation_id": key});
    let (error, unknown) = answer(&client, "update_ticket", args.clone()).await;
    assert!(!error, "an unknown outcome is not an error: {unknown}");
    assert_eq!(unknown["status"], "unknown", "{unknown}");
    assert!(unknown["reason"].as_str().is_some(), "{unknown}");
    let step = unknown["next_step"].as_str().expect("a next_step");
    assert!(step.contains("same operation_id"), "{step}");
    let (_, replayed) = answer(&client, "update_ticket", args).await;
    assert_eq!(replayed["status"], "replayed", "{replayed}");
    assert_eq!(replayed["ticket"]["version"], 2);

    let moved_key = fresh_key();
    let (_, moved) = answer(
        &client,
        "transition_ticket",
        json!({"ticket_id": id, "to": "in_progress", "operation_id": moved_key}),
    )
    .await;
    assert_eq!(moved["status"], "updated", "{moved}");

    let comment_key = fresh_key();
    let (error, refused) = answer(
        &client,
        "add_comment",
        json!({"ticket_id": here_only, "body": "On it", "operation_id": comment_key}),
    )
    .await;
    assert!(error, "{refused}");
    assert_eq!(refused["status"], "not_at_provider", "{refused}");
    assert_eq!(
        status_of(&client, "add_comment", &comment_key).await["state"],
        "not_found"
    );
    assert_eq!(provider.total(), 3, "the ticket, the update and the move");
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_update_unknown", unknown);
        insta::assert_json_snapshot!("mcp_comment_not_at_provider", refused);
    });
}

kitchen::on_both_databases!(
    update_ticket_updates_replays_and_conflicts,
    null_removes_and_left_out_keeps,
    invalid_updates_change_nothing_and_keep_the_key,
    a_version_mismatch_is_a_tool_error_that_keeps_the_key,
    transition_moves_and_refuses_moves_not_allowed,
    comments_are_added_once_and_listed,
    another_tenants_ticket_is_not_found,
    operation_status_answers_for_every_action,
    a_held_key_answers_in_progress,
    lifecycle_writes_reach_the_provider_on_the_remote_backend,
);
