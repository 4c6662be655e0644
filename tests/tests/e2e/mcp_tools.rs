//! The MCP door through an rmcp client: the six failure windows, status
//! lookups, previews and reads, in both protocol eras.

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::testing::TestDatabase;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::fresh_key;
use crate::mcp_support::{Protocol, call, connect, content, create, error_fields, metric, status};

async fn retry_with_the_same_operation_id_replays(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    // A tenant per protocol: the same ticket under a second operation_id
    // in one tenant would be a likely duplicate, and say so.
    for (protocol, name) in [(Protocol::Stateless, "acme"), (Protocol::Legacy, "globex")] {
        let tenant = app.tenant(name).await;
        let client = connect(&app, &tenant.token, protocol).await;
        let key = fresh_key();
        let first = create(&client, &key, "Disk full").await;
        assert_eq!(first.is_error, Some(false));
        let second = create(&client, &key, "Disk full").await;
        assert_eq!(second.is_error, Some(false));
        let (first, second) = (content(&first), content(&second));
        assert_eq!(first["status"], "created");
        assert_eq!(second["status"], "replayed");
        assert_eq!(first["ticket"], second["ticket"], "one stable ticket");
        snapshot_settings().bind(|| {
            insta::assert_json_snapshot!("mcp_created", first);
            insta::assert_json_snapshot!("mcp_replayed", second);
        });
        assert_eq!(
            app.ticket_count(&tenant).await,
            1,
            "one ticket per operation_id"
        );
    }
}

async fn reuse_with_changed_arguments_is_a_conflict(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let created = content(&create(&client, &key, "Disk full").await);
    let conflict = create(&client, &key, "Disk fuller").await;
    assert_eq!(conflict.is_error, Some(true));
    let body = content(&conflict);
    assert_eq!(body["status"], "conflict");
    // What the caller does not have: when its key was first used, and the
    // ticket that use made (a caller that lost the first answer finds it).
    let original = &body["original_operation"];
    assert_eq!(original["ticket_id"], created["ticket"]["id"]);
    assert_eq!(original["first_used_at"], created["ticket"]["created_at"]);
    assert!(body.get("original_operation_id").is_none(), "{body}");
    let step = body["next_step"].as_str().expect("a next_step");
    let id = created["ticket"]["id"].as_str().expect("an id");
    assert!(
        step.starts_with(&format!(
            "If you meant the same ticket, it already exists (ticket_id {id})"
        )),
        "the safe move first: {step}"
    );
    assert!(
        !body.to_string().contains("Disk full\""),
        "never the original's content"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);

    let status = status(&client, &key).await;
    assert_eq!(status["state"], "succeeded");
    assert_eq!(
        status["ticket"]["title"], "Disk full",
        "the status still shows the original"
    );
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_conflict", body);
        insta::assert_json_snapshot!("mcp_operation_status", status);
    });
}

async fn invalid_arguments_create_nothing_and_keep_the_key(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let invalid = call(
        &client,
        "create_ticket",
        json!({"operation_id": key, "project_id": "Ops!", "title": "", "tenant_id": "globex"}),
    )
    .await;
    assert_eq!(invalid.is_error, Some(true));
    let body = content(&invalid);
    assert_eq!(body["status"], "invalid");
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_invalid_unknown_argument", body));

    let invalid = call(
        &client,
        "create_ticket",
        json!({"project_id": "Ops!", "title": ""}),
    )
    .await;
    let body = content(&invalid);
    let fields: Vec<_> = body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["field"].clone())
        .collect();
    assert_eq!(fields, [json!("operation_id")], "the key is checked first");
    let invalid = call(
        &client,
        "create_ticket",
        json!({"operation_id": key, "project_id": "Ops!", "title": ""}),
    )
    .await;
    let body = content(&invalid);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_invalid", body));

    let status = status(&client, &key).await;
    assert_eq!(
        status["state"], "not_found",
        "an invalid call records nothing"
    );
    let step = status["next_step"].as_str().expect("a next_step");
    assert!(
        step.starts_with("Nothing is recorded under this operation_id yet"),
        "{step}"
    );
    assert_eq!(status["retry_safe"], true);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_operation_not_found", status));
    assert_eq!(app.ticket_count(&acme).await, 0);
    assert_eq!(
        content(&create(&client, &key, "Fixed").await)["status"],
        "created"
    );
}

async fn concurrent_identical_calls_make_one_ticket(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let a = connect(&app, &acme.token, Protocol::Stateless).await;
    let b = connect(&app, &acme.token, Protocol::Legacy).await;
    let key = fresh_key();
    let (x, y) = tokio::join!(create(&a, &key, "Disk full"), create(&b, &key, "Disk full"));
    let (x, y) = (content(&x), content(&y));
    assert_eq!(x["ticket"]["id"], y["ticket"]["id"]);
    let mut statuses = [
        x["status"].as_str().unwrap_or_default(),
        y["status"].as_str().unwrap_or_default(),
    ];
    statuses.sort_unstable();
    assert_eq!(statuses, ["created", "replayed"]);
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn a_client_that_disconnects_before_the_reply_gets_the_original_on_retry(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    // Hold the key so that the create is still running when the client goes.
    let holder = app.hold_key(&acme, &key).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "create_ticket",
        "arguments": {"operation_id": key, "project_id": "ops", "title": "Disk full"}}})
    .to_string();
    let address = app.address.trim_start_matches("http://");
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{body}",
        acme.token,
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    socket
        .write_all(request.as_bytes())
        .await
        .expect("send the call");
    // Give the server a moment to start the create (it then waits on the
    // held key), and hang up before any reply.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    drop(socket);
    holder.roll_back().await;

    // The abandoned call commits once, on its own, before any retry...
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let mut committed = false;
    for _ in 0..250 {
        let status = status(&client, &key).await;
        if status["state"] == "succeeded" {
            committed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(committed, "the call whose client hung up still committed");
    // ...and the retry replays it.
    let retry = content(&create(&client, &key, "Disk full").await);
    assert_eq!(
        retry["status"], "replayed",
        "the disconnected call committed: {retry}"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
}

async fn the_same_operation_id_under_another_tenant_is_separate(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let globex = app.tenant("globex").await;
    let a = connect(&app, &acme.token, Protocol::Stateless).await;
    let g = connect(&app, &globex.token, Protocol::Legacy).await;
    let key = fresh_key();
    let mine = content(&create(&a, &key, "Acme secret").await);

    let theirs_before = status(&g, &key).await;
    assert_eq!(
        theirs_before["state"], "not_found",
        "acme's operation is invisible to globex"
    );
    let theirs = content(&create(&g, &key, "Globex ticket").await);
    assert_eq!(theirs["status"], "created");
    assert_ne!(theirs["ticket"]["id"], mine["ticket"]["id"]);
    let peek = call(&g, "get_ticket", json!({"ticket_id": mine["ticket"]["id"]})).await;
    assert_eq!(peek.is_error, Some(true));
    assert_eq!(content(&peek)["error"], "not_found");
    assert_eq!(app.ticket_count(&acme).await, 1);
    assert_eq!(app.ticket_count(&globex).await, 1);
}

async fn preview_and_reads(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let preview = content(
        &call(
            &client,
            "preview_ticket",
            json!({"project_id": "ops", "title": "Disk full", "priority": "high"}),
        )
        .await,
    );
    assert_eq!(preview["valid"], true);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_preview", preview));
    let bad = content(
        &call(
            &client,
            "preview_ticket",
            json!({"project_id": "ops", "title": " "}),
        )
        .await,
    );
    assert_eq!(bad["valid"], false);
    assert_eq!(
        app.ticket_count(&acme).await,
        0,
        "a preview creates nothing"
    );

    let created = content(&create(&client, &fresh_key(), "Disk full").await);
    let id = created["ticket"]["id"].clone();
    let got = content(&call(&client, "get_ticket", json!({"ticket_id": id})).await);
    assert_eq!(got["ticket"], created["ticket"]);
    let listed = content(
        &call(
            &client,
            "list_tickets",
            json!({"project_id": "ops", "limit": 10}),
        )
        .await,
    );
    assert_eq!(listed["tickets"][0], created["ticket"]);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_list", listed));
    let bad_list = call(&client, "list_tickets", json!({"limit": 0})).await;
    assert_eq!(bad_list.is_error, Some(true));
}

/// An id that cannot be an operation key was never recorded, and the
/// answer must not advise a create_ticket retry that would be refused.
async fn a_status_lookup_with_an_impossible_id_says_so(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    for id in ["x", "has a space", &"k".repeat(256)] {
        let result = call(
            &client,
            "get_operation_status",
            json!({ "operation_id": id }),
        )
        .await;
        assert_eq!(result.is_error, Some(true), "{id}");
        let body = content(&result);
        assert_eq!(body["error"], "invalid");
        assert_eq!(error_fields(&body), ["operation_id"]);
        assert_eq!(body["errors"][0]["code"], "malformed");
        let message = body["errors"][0]["message"].as_str().expect("a message");
        assert!(message.contains("not a valid operation_id"), "{message}");
        assert!(
            message.contains("nothing can have been recorded"),
            "{message}"
        );
        let step = body["next_step"].as_str().expect("a next_step");
        assert!(!step.contains("call create_ticket again"), "{step}");
        if id == "x" {
            snapshot_settings()
                .bind(|| insta::assert_json_snapshot!("mcp_operation_id_not_a_key", body));
        }
    }
    let missing = content(&call(&client, "get_operation_status", json!({})).await);
    assert_eq!(missing["errors"][0]["code"], "required");
}

/// Every wrong-typed or unknown argument, on every tool, is the contract's
/// `invalid` answer naming the argument (never rmcp's bare "failed to
/// deserialize parameters"), is counted, and leaves the key untouched.
async fn wrong_typed_and_unknown_arguments_are_invalid_by_name(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();

    // create_ticket: status invalid, the argument by name, nothing created.
    let creates = [
        (
            json!({"operation_id": 12_345_678, "project_id": "ops", "title": "Disk full"}),
            vec!["operation_id"],
            "wrong_type",
        ),
        (
            json!({"operation_id": key, "project_id": "ops", "title": 5}),
            vec!["title"],
            "wrong_type",
        ),
        (
            json!({"operation_id": key, "project_id": "ops", "title": "Disk full",
                   "priority": ["high"]}),
            vec!["priority"],
            "wrong_type",
        ),
        (
            json!({"operation_id": key, "project_id": "ops", "title": "Disk full",
                   "tenant_id": "globex"}),
            vec!["tenant_id"],
            "unknown_argument",
        ),
    ];
    for (args, fields, code) in &creates {
        let result = call(&client, "create_ticket", args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{args}");
        let body = content(&result);
        assert_eq!(body["status"], "invalid", "{args}");
        assert_eq!(&error_fields(&body), fields, "{args}");
        assert_eq!(body["errors"][0]["code"], *code, "{args}");
        let step = body["next_step"].as_str().expect("a next_step");
        assert!(
            step.starts_with("Nothing was created and the operation_id was not used"),
            "{step}"
        );
        if args["title"] == 5 {
            snapshot_settings()
                .bind(|| insta::assert_json_snapshot!("mcp_invalid_wrong_type", body));
        }
    }
    // A wrong type and a bad value are reported together, once each.
    let both = content(
        &call(
            &client,
            "create_ticket",
            json!({"operation_id": key, "project_id": "Ops!", "title": 5}),
        )
        .await,
    );
    assert_eq!(error_fields(&both), ["title", "project_id"]);
    assert_eq!(app.ticket_count(&acme).await, 0);
    assert_eq!(
        status(&client, &key).await["state"],
        "not_found",
        "nothing touched the key"
    );
    assert_eq!(
        content(&create(&client, &key, "Disk full").await)["status"],
        "created"
    );

    // preview_ticket: valid false, the argument by name.
    let preview = call(
        &client,
        "preview_ticket",
        json!({"project_id": "ops", "title": 5}),
    )
    .await;
    assert_ne!(
        preview.is_error,
        Some(true),
        "a preview's verdict is not an error"
    );
    let preview = content(&preview);
    assert_eq!(preview["valid"], false);
    assert_eq!(error_fields(&preview), ["title"]);
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_preview_wrong_type", preview));

    // The read tools: the invalid ToolProblem, the argument by name.
    let reads = [
        (
            "get_operation_status",
            json!({"operation_id": 12_345_678}),
            "operation_id",
            "wrong_type",
        ),
        (
            "get_operation_status",
            json!({"operation_id": key, "verbose": true}),
            "verbose",
            "unknown_argument",
        ),
        (
            "get_ticket",
            json!({"ticket_id": 1}),
            "ticket_id",
            "wrong_type",
        ),
        (
            "get_ticket",
            json!({"ticket_id": "x", "tenant_id": "globex"}),
            "tenant_id",
            "unknown_argument",
        ),
        (
            "list_tickets",
            json!({"limit": -1}),
            "limit",
            "out_of_range",
        ),
        ("list_tickets", json!({"limit": 1.5}), "limit", "wrong_type"),
        ("list_tickets", json!({"limit": "5"}), "limit", "wrong_type"),
        (
            "list_tickets",
            json!({"limit": 1e12}),
            "limit",
            "out_of_range",
        ),
        (
            "list_tickets",
            json!({"limit": 10, "tenant": "globex"}),
            "tenant",
            "unknown_argument",
        ),
    ];
    for (tool, args, field, code) in &reads {
        let result = call(&client, tool, args.clone()).await;
        assert_eq!(result.is_error, Some(true), "{tool} {args}");
        let body = content(&result);
        assert_eq!(body["error"], "invalid", "{tool} {args}");
        assert_eq!(error_fields(&body), [*field], "{tool} {args}");
        assert_eq!(body["errors"][0]["code"], *code, "{tool} {args}");
        if args["limit"] == "5" {
            snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_read_wrong_type", body));
        }
    }

    // Every one of them was counted: creates as write outcomes (with the
    // contract failure's kind), reads as tool errors.
    let mcp = ("door", "mcp");
    assert_eq!(
        metric(
            &app,
            "tickets_write_outcomes_total",
            &[mcp, ("outcome", "invalid")]
        )
        .await,
        5.0
    );
    for (kind, n) in [
        ("idempotency_key_malformed", 1.0),
        ("validation_failed", 4.0),
    ] {
        assert_eq!(
            metric(
                &app,
                "tickets_contract_failures_total",
                &[mcp, ("kind", kind)]
            )
            .await,
            n,
            "{kind}"
        );
    }
    for (tool, n) in [
        ("get_operation_status", 2.0),
        ("get_ticket", 2.0),
        ("list_tickets", 5.0),
    ] {
        assert_eq!(
            metric(
                &app,
                "tickets_mcp_tool_calls_total",
                &[("tool", tool), ("outcome", "tool_error")]
            )
            .await,
            n,
            "{tool}"
        );
    }
    assert_eq!(
        metric(
            &app,
            "tickets_mcp_tool_calls_total",
            &[("tool", "preview_ticket"), ("outcome", "ok")]
        )
        .await,
        1.0
    );
}

/// A read tool's error keeps to its output schema: its problem goes as
/// JSON text, with no structured content (which the schema, describing
/// what the tool reads, could not admit: the MCP Inspector failed such
/// calls). A write tool's error stays structured: its schema includes it.
async fn read_tool_errors_send_no_structured_content(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let missing = uuid::Uuid::now_v7().to_string();
    for (tool, args, error) in [
        ("get_ticket", json!({"ticket_id": missing}), "not_found"),
        ("list_comments", json!({"ticket_id": missing}), "not_found"),
        ("list_tickets", json!({"limit": 0}), "invalid"),
        (
            "get_operation_status",
            json!({"operation_id": "x"}),
            "invalid",
        ),
    ] {
        let result = call(&client, tool, args).await;
        assert_eq!(result.is_error, Some(true), "{tool}");
        assert!(
            result.structured_content.is_none(),
            "{tool}: a problem outside the tool's output schema: {result:?}"
        );
        let body = content(&result);
        assert_eq!(body["error"], error, "{tool}: {body}");
        assert!(body["next_step"].is_string(), "{tool}: {body}");
    }
    let write = call(
        &client,
        "create_ticket",
        json!({"operation_id": fresh_key(), "project_id": "ops"}),
    )
    .await;
    assert_eq!(write.is_error, Some(true));
    assert!(
        write.structured_content.is_some(),
        "a write's problem is structured"
    );
}

kitchen::on_both_databases!(
    read_tool_errors_send_no_structured_content,
    a_status_lookup_with_an_impossible_id_says_so,
    wrong_typed_and_unknown_arguments_are_invalid_by_name,
    retry_with_the_same_operation_id_replays,
    reuse_with_changed_arguments_is_a_conflict,
    invalid_arguments_create_nothing_and_keep_the_key,
    concurrent_identical_calls_make_one_ticket,
    a_client_that_disconnects_before_the_reply_gets_the_original_on_retry,
    the_same_operation_id_under_another_tenant_is_separate,
    preview_and_reads,
);
