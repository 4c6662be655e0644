//! MCP tasks (the 2026-07-28 `io.modelcontextprotocol/tasks` extension),
//! driven with rmcp's client: a write whose outcome is not final within the
//! bound answers with a task named after its operation record; `tasks/get`
//! reads the record (so any instance answers, after a restart too) and ends
//! with the tool's own result; `tasks/cancel` is refused with why; ids
//! outside the caller's tenant name nothing. Clients without the extension
//! wait for the answer as before.

use std::sync::Arc;
use std::time::{Duration, Instant};

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::fake_provider::{DispatchFault, FakeProvider, LookupFault};
use kitchen::testing::TestDatabase;
use kitchen::{KitchenConfig, RemoteSettings, TicketBackend};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, CreateTaskResult, ErrorData, GetTaskParams, GetTaskResult, Implementation,
    ProtocolVersion, ResultType, TaskPayload, TaskStatus, UpdateTaskParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::fresh_key;
use crate::mcp_support::{
    Client, Protocol, call, connect, content, metric, new_ticket, status, status_of,
};

/// A client at 2026-07-28 that declares the tasks extension (or, with
/// `tasks` false, declares nothing).
async fn client(app: &TestApp, token: &str, tasks: bool) -> Client {
    let capabilities = if tasks {
        ClientCapabilities::builder().enable_tasks().build()
    } else {
        ClientCapabilities::default()
    };
    let client = ClientConfig::new(capabilities, Implementation::new("e2e-tasks", "0"))
        .serve_with_lifecycle(
            transport(app, token),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("MCP client connects");
    let info = client.peer_info().expect("the server's discover answer");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    assert!(
        info.capabilities.supports_tasks(),
        "the server declares the tasks extension: {:?}",
        info.capabilities
    );
    client
}

fn transport(app: &TestApp, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(app.url("/mcp"))
            .auth_header(token.to_owned()),
    )
}

/// `tool` with `arguments`, without resolving a task.
async fn call_once(client: &Client, tool: &'static str, arguments: Value) -> CallToolResponse {
    let arguments = arguments.as_object().cloned().expect("an object");
    client
        .call_tool_once(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .expect("tool call answered")
}

fn task(response: CallToolResponse) -> CreateTaskResult {
    match response {
        CallToolResponse::Task(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn complete(response: CallToolResponse) -> CallToolResult {
    match response {
        CallToolResponse::Complete(result) => result,
        other => panic!("expected a plain tool result, got {other:?}"),
    }
}

async fn get(client: &Client, id: &str) -> GetTaskResult {
    client
        .get_task(GetTaskParams::new(id))
        .await
        .expect("tasks/get answered")
}

/// The tool result a completed task carries.
fn result(got: &GetTaskResult) -> CallToolResult {
    match &got.task.payload {
        TaskPayload::Completed { result } => {
            serde_json::from_value(Value::Object(result.clone())).expect("a CallToolResult")
        }
        other => panic!("expected a completed task, got {other:?}"),
    }
}

/// Polls `tasks/get` (faster than the advertised interval: this is a test)
/// until the task is over; the last answer.
async fn settled(client: &Client, id: &str) -> GetTaskResult {
    for _ in 0..100 {
        let got = get(client, id).await;
        if got.task.status().is_terminal() {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} still working after 100 polls");
}

/// The JSON-RPC error of a refused request.
fn refused<T: std::fmt::Debug>(answer: Result<T, ServiceError>) -> ErrorData {
    match answer {
        Err(ServiceError::McpError(e)) => e,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

/// A server over `db` whose tickets are in `provider`, reconciling only
/// when asked; a search proves absence at once unless `settings` say
/// otherwise.
async fn remote(db: &TestDatabase, provider: &FakeProvider, settings: RemoteSettings) -> TestApp {
    remote_timed(db, provider, settings, Duration::from_secs(30)).await
}

async fn remote_timed(
    db: &TestDatabase,
    provider: &FakeProvider,
    settings: RemoteSettings,
    request_timeout: Duration,
) -> TestApp {
    let config = KitchenConfig {
        backend: TicketBackend::Remote {
            provider: Arc::new(provider.clone()),
            settings,
        },
        ..KitchenConfig::default()
    };
    TestApp::spawn_with(db, config, request_timeout).await
}

fn settings() -> RemoteSettings {
    RemoteSettings {
        max_inflight: Duration::ZERO,
        reconcile_every: Duration::from_secs(3600),
        ..RemoteSettings::default()
    }
}

fn create_args(key: &str, title: &str) -> Value {
    json!({"operation_id": key, "project_id": "ops", "title": title})
}

/// Milliseconds from one RFC 3339 time to another.
fn millis_between(from: &Value, to: &Value) -> u64 {
    let at = |v: &Value| {
        time::OffsetDateTime::parse(
            v.as_str().expect("a time"),
            &time::format_description::well_known::Rfc3339,
        )
        .expect("RFC 3339")
    };
    u64::try_from((at(to) - at(from)).whole_milliseconds()).expect("not negative")
}

async fn a_lost_answer_is_a_task_that_ends_with_the_tools_result(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let app = remote(&db, &provider, settings()).await;
    let acme = app.tenant("acme").await;
    let client = client(&app, &acme.token, true).await;
    // A write whose answer comes within the bound is answered as ever.
    let plain = content(&complete(
        call_once(&client, "create_ticket", create_args(&fresh_key(), "Plain")).await,
    ));
    assert_eq!(plain["status"], "created", "{plain}");

    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let key = fresh_key();
    let created = task(call_once(&client, "create_ticket", create_args(&key, "Disk full")).await);
    let id = format!("create_ticket/{key}");
    assert_eq!(created.result_type, ResultType::TASK);
    assert_eq!(created.task.task_id, id);
    assert_eq!(created.task.status, TaskStatus::Working);
    assert_eq!(created.task.poll_interval_ms, Some(2000));
    let message = created.task.status_message.clone().unwrap_or_default();
    assert!(message.contains("answer was lost"), "{message}");

    // The first read settles it (the provider is searched, nothing is sent):
    // the tool's own answer for a create that happened.
    let got = get(&client, &id).await;
    assert_eq!(got.task.status(), TaskStatus::Completed, "{got:?}");
    let done = result(&got);
    assert_ne!(done.is_error, Some(true));
    let body = content(&done);
    let recorded = status(&client, &key).await;
    assert_eq!(recorded["state"], "succeeded", "{recorded}");
    assert_eq!(body["status"], "created", "{body}");
    assert_eq!(body["operation_id"], key.as_str());
    assert_eq!(body["ticket"], recorded["ticket"], "the record's ticket");
    assert_eq!(body["ticket"]["title"], "Disk full");
    assert_eq!(body["replayable_until"], recorded["replayable_until"]);
    assert_eq!(
        body["next_step"], plain["next_step"],
        "the create's own words"
    );
    assert_eq!(
        created.task.ttl_ms,
        Some(millis_between(
            &recorded["created_at"],
            &recorded["replayable_until"]
        )),
        "kept for the replay window"
    );
    assert_eq!(got.task.task.created_at, created.task.created_at);
    // The retry is final at once: the replay, not a task.
    let retry = content(&complete(
        call_once(&client, "create_ticket", create_args(&key, "Disk full")).await,
    ));
    assert_eq!(retry["status"], "replayed", "{retry}");
    assert_eq!(retry["ticket"]["id"], body["ticket"]["id"]);

    // A lifecycle write: the same, with the comment.
    let ticket = body["ticket"]["id"].as_str().expect("an id").to_owned();
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let comment_key = fresh_key();
    let comment_args = json!({"ticket_id": ticket, "body": "On it", "operation_id": comment_key});
    let comment_task = task(call_once(&client, "add_comment", comment_args).await);
    let comment_id = format!("add_comment/{comment_key}");
    assert_eq!(comment_task.task.task_id, comment_id);
    let comment_done = result(&settled(&client, &comment_id).await);
    let comment = content(&comment_done);
    let comment_status = status_of(&client, "add_comment", &comment_key).await;
    assert_eq!(comment["status"], "created", "{comment}");
    assert_eq!(comment["comment"], comment_status["comment"]);
    assert_eq!(comment["comment"]["body"], "On it");
    assert_eq!(comment["comment"]["ticket_id"], ticket.as_str());

    assert_eq!(provider.total(), 3, "two tickets and a comment, no more");
    for (tool, outcome, n) in [
        ("create_ticket", "created", 1.0),
        ("create_ticket", "unknown", 1.0),
        ("create_ticket", "replayed", 1.0),
        ("add_comment", "unknown", 1.0),
    ] {
        assert_eq!(
            metric(
                &app,
                "tickets_write_outcomes_total",
                &[("door", "mcp"), ("action", tool), ("outcome", outcome)]
            )
            .await,
            n,
            "{tool} {outcome}"
        );
    }
    let created = serde_json::to_value(&created).expect("JSON");
    let got = serde_json::to_value(&got).expect("JSON");
    // ttlMs is asserted above: the replay window, which the stored times
    // round.
    snapshot_settings().bind(|| {
        insta::assert_json_snapshot!("mcp_task_created", created, {".ttlMs" => "[ttl]"});
        insta::assert_json_snapshot!("mcp_task_completed", got, {".ttlMs" => "[ttl]"});
    });
}

async fn a_task_is_answered_by_another_instance_and_after_a_restart(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let first = remote(&db, &provider, settings()).await;
    let second = remote(&db, &provider, settings()).await;
    let acme = first.tenant("acme").await;
    let on_first = client(&first, &acme.token, true).await;
    let ticket = new_ticket(&on_first, "Disk full").await;
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let key = fresh_key();
    let args = json!({"ticket_id": ticket, "priority": "urgent", "operation_id": key});
    let created = task(call_once(&on_first, "update_ticket", args).await);
    let id = format!("update_ticket/{key}");
    assert_eq!(created.task.task_id, id);

    // Another instance, which never saw the call.
    let on_second = client(&second, &acme.token, true).await;
    let there = result(&settled(&on_second, &id).await);
    let body = content(&there);
    assert_eq!(body["status"], "updated", "{body}");
    assert_eq!(body["ticket"]["id"], ticket.as_str());
    assert_eq!(body["ticket"]["priority"], "urgent");
    assert_eq!(body["ticket"]["version"], 2);

    // Every instance gone, then a new one: the task is in the database.
    drop((on_first, on_second));
    first.stop().await;
    second.stop().await;
    let restarted = remote(&db, &provider, settings()).await;
    let on_restarted = client(&restarted, &acme.token, true).await;
    let after = result(&get(&on_restarted, &id).await);
    assert_eq!(content(&after), body, "the same answer after the restart");
    assert_eq!(
        status_of(&on_restarted, "update_ticket", &key).await["ticket"],
        body["ticket"]
    );
    assert_eq!(provider.total(), 2, "the ticket and one change");
}

async fn cancel_is_acknowledged_and_other_ids_are_not_found(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    // A search cannot prove absence for a while: a request lost before the
    // provider made anything stays unknown.
    let app = remote(
        &db,
        &provider,
        RemoteSettings {
            max_inflight: Duration::from_secs(600),
            ..settings()
        },
    )
    .await;
    let acme = app.tenant("acme").await;
    let globex = app.tenant("globex").await;
    let client = client(&app, &acme.token, true).await;
    provider.fail_next_dispatch(DispatchFault::FailBeforeCommit);
    let key = fresh_key();
    let created = task(call_once(&client, "create_ticket", create_args(&key, "Disk full")).await);
    let id = created.task.task_id.clone();

    let working = get(&client, &id).await;
    assert_eq!(working.task.status(), TaskStatus::Working, "{working:?}");
    let message = working.task.task.status_message.clone().unwrap_or_default();
    // What the ledger says: the provider has nothing yet, and a search
    // cannot tell yet whether it ever will.
    assert!(message.contains("provider"), "{message}");

    // Acknowledged, as the tasks extension requires, and nothing more: the
    // write was recorded and sent, so it goes on.
    client
        .cancel_task(CancelTaskParams::new(id.clone()))
        .await
        .expect("tasks/cancel acknowledged");
    assert_eq!(
        get(&client, &id).await.task.status(),
        TaskStatus::Working,
        "an acknowledged cancel changes nothing"
    );
    client
        .update_task(UpdateTaskParams::new(id.clone(), Default::default()))
        .await
        .expect("tasks/update acknowledged");

    // Ids that name nothing this tenant recorded: -32602, saying how to
    // find out what a write did.
    let other_tenant = self::client(&app, &globex.token, true).await;
    let never_used = fresh_key();
    let nothing = [
        (&client, "nope".to_owned()),
        (&client, "create_ticket/short".to_owned()),
        (&client, format!("delete_ticket/{key}")),
        (&client, format!("update_ticket/{key}")),
        (&client, format!("create_ticket/{never_used}")),
        (&other_tenant, id.clone()),
    ];
    for (asking, raw) in nothing {
        let e = refused(asking.get_task(GetTaskParams::new(raw.clone())).await);
        assert_eq!(e.code.0, -32602, "{raw}: {e:?}");
        assert!(
            e.message
                .starts_with("Failed to retrieve task: Task not found")
                && e.message.contains("get_operation_status"),
            "{raw}: {e:?}"
        );
        let e = refused(asking.cancel_task(CancelTaskParams::new(raw.clone())).await);
        assert_eq!(e.code.0, -32602, "{raw}: {e:?}");
        assert!(
            e.message
                .starts_with("Failed to cancel task: Task not found"),
            "{raw}: {e:?}"
        );
        let update = UpdateTaskParams::new(raw.clone(), Default::default());
        assert_eq!(
            refused(asking.update_task(update).await).code.0,
            -32602,
            "{raw}"
        );
    }

    // A finished task has nothing left to cancel.
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let done_key = fresh_key();
    let done = task(call_once(&client, "create_ticket", create_args(&done_key, "Other")).await);
    let done_id = done.task.task_id.clone();
    assert_eq!(
        settled(&client, &done_id).await.task.status(),
        TaskStatus::Completed
    );
    client
        .cancel_task(CancelTaskParams::new(done_id.clone()))
        .await
        .expect("tasks/cancel of a finished task acknowledged");
    assert_eq!(
        get(&client, &done_id).await.task.status(),
        TaskStatus::Completed,
        "still completed, with its result"
    );
    // Reads, cancels and refusals sent nothing: one dispatch per create.
    assert_eq!(provider.calls().0, 2, "dispatches");
}

async fn a_client_without_the_extension_waits_for_the_answer(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let app = remote(&db, &provider, settings()).await;
    let acme = app.tenant("acme").await;
    let plain = client(&app, &acme.token, false).await;
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let key = fresh_key();
    let lost = content(&complete(
        call_once(&plain, "create_ticket", create_args(&key, "Disk full")).await,
    ));
    assert_eq!(lost["status"], "unknown", "{lost}");
    assert!(
        lost["next_step"]
            .as_str()
            .is_some_and(|s| s.contains("get_operation_status")),
        "{lost}"
    );
    // tasks/* need the extension declared (rmcp's gate: -32021).
    let e = refused(
        plain
            .get_task(GetTaskParams::new(format!("create_ticket/{key}")))
            .await,
    );
    assert_eq!(e.code.0, -32021, "{e:?}");

    // The older, initialize-based protocol cannot carry a task, whatever
    // the client declares.
    let legacy = ClientConfig::new(
        ClientCapabilities::builder().enable_tasks().build(),
        Implementation::new("e2e-tasks-legacy", "0"),
    )
    .with_protocol_version(ProtocolVersion::V_2025_11_25)
    .serve_with_lifecycle(
        transport(&app, &acme.token),
        ClientLifecycleMode::Initialize,
    )
    .await
    .expect("connects");
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let legacy_key = fresh_key();
    let lost = content(&complete(
        call_once(&legacy, "create_ticket", create_args(&legacy_key, "Old")).await,
    ));
    assert_eq!(lost["status"], "unknown", "{lost}");
    // And the plain tool (which cannot read a task) as the other suites use it.
    let stateless = connect(&app, &acme.token, Protocol::Stateless).await;
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let answer = call(
        &stateless,
        "create_ticket",
        create_args(&fresh_key(), "Third"),
    )
    .await;
    assert_eq!(content(&answer)["status"], "unknown");
    assert_eq!(
        metric(
            &app,
            "tickets_write_outcomes_total",
            &[("door", "mcp"), ("outcome", "unknown")]
        )
        .await,
        3.0
    );
}

/// A `tools/call` of create_ticket posted by hand at protocol `version`,
/// declaring the tasks extension in its `_meta`; the JSON-RPC result.
async fn raw_create(app: &TestApp, token: &str, version: &str, key: &str) -> Value {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    });
    let body = json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "create_ticket", "arguments": create_args(key, "Raw"), "_meta": meta},
    });
    let answer: Value = app
        .client
        .post(app.url("/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .header("mcp-method", "tools/call")
        .header("mcp-name", "create_ticket")
        .json(&body)
        .send()
        .await
        .expect("answered")
        .json()
        .await
        .expect("JSON");
    answer["result"].clone()
}

async fn only_a_2026_request_gets_a_task(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    let app = remote(&db, &provider, settings()).await;
    let acme = app.tenant("acme").await;
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let key = fresh_key();
    let modern = raw_create(&app, &acme.token, "2026-07-28", &key).await;
    assert_eq!(modern["resultType"], "task", "{modern}");
    assert_eq!(modern["taskId"], format!("create_ticket/{key}"));
    // The same declaration at an older version: that client could not read
    // a task, so it waits for the answer.
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    let older = raw_create(&app, &acme.token, "2025-11-25", &fresh_key()).await;
    assert_eq!(older["structuredContent"]["status"], "unknown", "{older}");
    assert!(older.get("taskId").is_none(), "{older}");
}

async fn a_local_write_answers_within_the_bound(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = client(&app, &acme.token, true).await;
    let created = content(&complete(
        call_once(
            &client,
            "create_ticket",
            create_args(&fresh_key(), "Disk full"),
        )
        .await,
    ));
    assert_eq!(created["status"], "created", "{created}");
    let ticket = created["ticket"]["id"].as_str().expect("an id");
    let updated = content(&complete(
        call_once(
            &client,
            "update_ticket",
            json!({"ticket_id": ticket, "priority": "high", "operation_id": fresh_key()}),
        )
        .await,
    ));
    assert_eq!(updated["status"], "updated", "{updated}");
    let comment = content(&complete(
        call_once(
            &client,
            "add_comment",
            json!({"ticket_id": ticket, "body": "On it", "operation_id": fresh_key()}),
        )
        .await,
    ));
    assert_eq!(comment["status"], "created", "{comment}");
    // A task id for a local write still reads (its record is the same).
    let key = created["operation_id"].as_str().expect("a key");
    let got = result(&get(&client, &format!("create_ticket/{key}")).await);
    assert_eq!(content(&got)["ticket"], created["ticket"]);
}

async fn a_write_slower_than_the_bound_is_a_task_while_it_runs(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    // A 3 s request timeout keeps the bound at 1.5 s; the provider's 2 s
    // call timeout ends a dispatch that gets no answer.
    let app = remote_timed(
        &db,
        &provider,
        RemoteSettings {
            call_timeout: Duration::from_secs(2),
            ..settings()
        },
        Duration::from_secs(3),
    )
    .await;
    let acme = app.tenant("acme").await;
    let client = client(&app, &acme.token, true).await;
    provider.stop_answering();
    let key = fresh_key();
    let started = Instant::now();
    let created = task(call_once(&client, "create_ticket", create_args(&key, "Disk full")).await);
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(1400), "{waited:?}");
    let message = created.task.status_message.clone().unwrap_or_default();
    assert!(
        message.contains("being sent to the ticket provider")
            && message.contains("create a duplicate"),
        "{message}"
    );
    assert_eq!(
        metric(
            &app,
            "tickets_mcp_tool_calls_total",
            &[("tool", "create_ticket"), ("outcome", "task")]
        )
        .await,
        1.0
    );
    let id = created.task.task_id.clone();
    assert_eq!(get(&client, &id).await.task.status(), TaskStatus::Working);

    // The provider made nothing; once it answers searches, a search proves
    // it: the create's own not_created answer, and the key is not spent.
    provider.resume_answering();
    let done = result(&settled(&client, &id).await);
    let body = content(&done);
    assert_eq!(body["status"], "not_created", "{body}");
    assert_ne!(
        done.is_error,
        Some(true),
        "a provider not reached is no mistake"
    );
    assert!(body["retry_after_seconds"].as_u64().is_some(), "{body}");
    let retry = content(&complete(
        call_once(&client, "create_ticket", create_args(&key, "Disk full")).await,
    ));
    assert_eq!(retry["status"], "created", "{retry}");
    assert_eq!(provider.total(), 1);
}

async fn an_effect_given_up_on_ends_unknown(db: TestDatabase) {
    let provider = FakeProvider::ignoring_keys();
    // Two calls per effect: the dispatch, whose answer is lost, and one
    // search of the reconciler's, which fails. (A search made for a
    // caller's status read is not counted: the budget is the
    // reconciler's.)
    let app = remote(
        &db,
        &provider,
        RemoteSettings {
            max_attempts: 2,
            reconcile_every: Duration::ZERO,
            ..settings()
        },
    )
    .await;
    let acme = app.tenant("acme").await;
    let client = client(&app, &acme.token, true).await;
    provider.fail_next_dispatch(DispatchFault::CommitThenLose);
    // Several failing searches, not one: the task's status reads may
    // search before the reconciler does (on a loaded machine they did,
    // took the one failure, and the reconciler's search then found the
    // ticket). Whichever search comes first, the reconciler's fails.
    for _ in 0..4 {
        provider.fail_next_lookup(LookupFault::Fail);
    }
    let key = fresh_key();
    let created = task(call_once(&client, "create_ticket", create_args(&key, "Disk full")).await);
    // The server's reconciler (every millisecond here) makes that search.
    let got = settled(&client, &created.task.task_id).await;
    assert_eq!(got.task.status(), TaskStatus::Completed, "{got:?}");
    let done = result(&got);
    let body = content(&done);
    assert_eq!(body["status"], "unknown", "{body}");
    assert_ne!(done.is_error, Some(true));
    let reason = body["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("Reconciliation gave up") && reason.contains("operator"),
        "{reason}"
    );
    // Its retry is final too: the same unknown, not another task.
    let retry = content(&complete(
        call_once(&client, "create_ticket", create_args(&key, "Disk full")).await,
    ));
    assert_eq!(retry["status"], "unknown", "{retry}");
    let again = retry["reason"].as_str().unwrap_or_default();
    assert!(again.starts_with("Reconciliation gave up"), "{again}");
}

kitchen::on_both_databases!(
    a_lost_answer_is_a_task_that_ends_with_the_tools_result,
    a_task_is_answered_by_another_instance_and_after_a_restart,
    cancel_is_acknowledged_and_other_ids_are_not_found,
    a_client_without_the_extension_waits_for_the_answer,
    only_a_2026_request_gets_a_task,
    a_local_write_answers_within_the_bound,
    a_write_slower_than_the_bound_is_a_task_while_it_runs,
    an_effect_given_up_on_ends_unknown,
);
