//! Telemetry: every counter moves by exactly what a scripted sequence
//! should move it by, and spans reach an OTLP receiver with the three
//! identities of an attempt as separate attributes.

use std::sync::{Arc, Mutex};

use axum::routing::post;
use e2e_tests::TestApp;
use kitchen::testing::TestDatabase;
use serde_json::{Value, json};

use crate::mcp_support::{Protocol, call, connect, metrics_text, sample};
use crate::{DISK_FULL, fresh_key};

async fn a_scripted_sequence_moves_each_counter_exactly(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    // REST: create, replay, conflict, invalid.
    let key = fresh_key();
    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        201
    );
    assert_eq!(
        app.post_ticket(&acme, Some(&key), DISK_FULL).await.status(),
        201
    );
    assert_eq!(
        app.post_ticket(&acme, Some(&key), r#"{"project_id":"ops","title":"other"}"#)
            .await
            .status(),
        422
    );
    assert_eq!(
        app.post_ticket(
            &acme,
            Some(&fresh_key()),
            r#"{"project_id":"Ops!","title":"x"}"#
        )
        .await
        .status(),
        400
    );
    // A refusal: a comment on a ticket the tenant does not have.
    let missing = uuid::Uuid::now_v7();
    let refused = app
        .client
        .post(app.url(&format!("/v1/tickets/{missing}/comments")))
        .bearer_auth(&acme.token)
        .header("idempotency-key", fresh_key())
        .json(&json!({"body": "anyone there?"}))
        .send()
        .await
        .expect("server answers");
    assert_eq!(refused.status(), 404);
    // MCP: the same five.
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let key = fresh_key();
    let args = json!({"operation_id": key, "project_id": "ops", "title": "Disk"});
    for expected in ["created", "replayed"] {
        let r = call(&client, "create_ticket", args.clone()).await;
        assert_eq!(r.structured_content.expect("content")["status"], expected);
    }
    call(
        &client,
        "create_ticket",
        json!({"operation_id": key, "project_id": "ops", "title": "Other"}),
    )
    .await;
    call(
        &client,
        "create_ticket",
        json!({"operation_id": fresh_key(), "project_id": "Ops!", "title": "x"}),
    )
    .await;
    let r = call(
        &client,
        "add_comment",
        json!({"operation_id": fresh_key(), "ticket_id": missing.to_string(), "body": "anyone there?"}),
    )
    .await;
    assert_eq!(
        r.structured_content.expect("content")["status"],
        "not_found"
    );

    let text = metrics_text(&app).await;
    for door in ["rest", "mcp"] {
        for outcome in ["created", "replayed", "conflict", "invalid"] {
            let n = sample(
                &text,
                "tickets_write_outcomes_total",
                &[
                    ("door", door),
                    ("outcome", outcome),
                    ("action", "create_ticket"),
                ],
            );
            assert_eq!(n, 1.0, "{door} {outcome}\n{text}");
        }
        assert_eq!(
            sample(
                &text,
                "tickets_write_outcomes_total",
                &[("door", door), ("outcome", "in_progress")]
            ),
            0.0
        );
        let reused = sample(
            &text,
            "tickets_contract_failures_total",
            &[("door", door), ("kind", "idempotency_key_reused")],
        );
        assert_eq!(reused, 1.0, "conflicts are their own sentinel ({door})");
        let invalid = sample(
            &text,
            "tickets_contract_failures_total",
            &[("door", door), ("kind", "validation_failed")],
        );
        assert_eq!(invalid, 1.0);
        // A refusal is the same broken contract on both doors.
        let not_found = sample(
            &text,
            "tickets_contract_failures_total",
            &[
                ("door", door),
                ("action", "add_comment"),
                ("kind", "ticket_not_found"),
            ],
        );
        assert_eq!(not_found, 1.0, "a refusal is counted on {door}\n{text}");
        assert_eq!(
            sample(
                &text,
                "tickets_write_duration_seconds_count",
                &[("door", door)]
            ),
            5.0
        );
    }
    // Tool calls carry the contract hash that tools/list publishes.
    let tools = client.list_all_tools().await.expect("tools/list");
    let create = tools
        .iter()
        .find(|t| t.name == "create_ticket")
        .expect("listed");
    let hash = create
        .meta
        .as_ref()
        .and_then(|m| m.get(mcp_door::contract::CONTRACT_HASH_META))
        .and_then(Value::as_str)
        .expect("hash");
    assert_eq!(
        sample(
            &text,
            "tickets_mcp_tool_calls_total",
            &[("tool", "create_ticket"), ("contract", hash)]
        ),
        4.0
    );

    let stats: Value = app
        .get(&acme, "/v1/stats")
        .await
        .json()
        .await
        .expect("json");
    for entry in stats["doors"].as_array().expect("doors") {
        if entry["action"] == "add_comment" {
            assert_eq!(entry["refused"], 1, "{entry}");
            continue;
        }
        assert_eq!(
            (
                entry["created"].clone(),
                entry["replayed"].clone(),
                entry["conflict"].clone(),
                entry["invalid"].clone(),
                entry["in_progress"].clone()
            ),
            (json!(1), json!(1), json!(1), json!(1), json!(0)),
            "{entry}"
        );
        assert_eq!(entry["retry_rate"], 0.5);
    }
    assert_eq!(
        stats["doors"].as_array().map(Vec::len),
        Some(4),
        "rest and mcp, create and the refused comment"
    );
    e2e_tests::snapshot_settings().bind(|| insta::assert_json_snapshot!("stats", stats));
    let globex = app.tenant("globex").await;
    let theirs: Value = app
        .get(&globex, "/v1/stats")
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(theirs["doors"], json!([]), "stats are per tenant");
}

/// The server's own retention sweep reports what it did: a server started
/// on a database holding records past their replay window tombstones them
/// in its first sweep, and `/metrics` counts them by kind.
async fn the_retention_sweep_is_counted_by_kind(db: TestDatabase) {
    let clock = kitchen::Clock::manual(time::OffsetDateTime::now_utc());
    let config = kitchen::KitchenConfig {
        clock: clock.clone(),
        replay_window: time::Duration::days(1),
        ..kitchen::KitchenConfig::default()
    };
    let before = TestApp::spawn_with(&db, config.clone(), std::time::Duration::from_secs(30)).await;
    let acme = before.tenant("acme").await;
    let keys: Vec<String> = (0..3).map(|_| fresh_key()).collect();
    for key in &keys {
        assert_eq!(
            before
                .post_ticket(&acme, Some(key), DISK_FULL)
                .await
                .status(),
            201
        );
    }
    before.stop().await;
    clock.advance(time::Duration::days(2));
    // Its first sweep runs as it starts; wait for it to be counted.
    let app = TestApp::spawn_with(&db, config, std::time::Duration::from_secs(30)).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let counted = loop {
        let text = metrics_text(&app).await;
        let n = sample(
            &text,
            "tickets_sweep_records_total",
            &[("kind", "tombstoned")],
        );
        if n == 3.0 || std::time::Instant::now() > deadline {
            break n;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(
        counted, 3.0,
        "three records past the window, tombstoned once"
    );
    let text = metrics_text(&app).await;
    assert_eq!(
        sample(&text, "tickets_sweep_records_total", &[("kind", "deleted")]),
        0.0
    );
    // It got through everything due just now (what the stalled-sweep alert
    // watches).
    let last = sample(&text, "tickets_sweep_last_success_seconds", &[]);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    assert!(
        (now - last).abs() < 60.0,
        "last sweep at {last}, now {now}\n{text}"
    );
    // A retry after the window is counted as `expired`, and as a retry.
    let late = app.post_ticket(&acme, Some(&keys[0]), DISK_FULL).await;
    assert_eq!(late.status(), 200);
    let stats: Value = app
        .get(&acme, "/v1/stats")
        .await
        .json()
        .await
        .expect("json");
    let entry = &stats["doors"][0];
    assert_eq!(
        (
            entry["created"].clone(),
            entry["expired"].clone(),
            entry["error"].clone()
        ),
        (json!(0), json!(1), json!(0)),
        "{stats}"
    );
    assert_eq!(entry["retry_rate"], 1.0);
}

/// The semantic conventions' durations, next to ours: every HTTP request
/// by method, route template and status; every MCP request by method, tool
/// and how it failed.
async fn standard_durations_carry_the_conventions_attributes(db: TestDatabase) {
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let made: Value = app
        .post_ticket(&acme, Some(&fresh_key()), DISK_FULL)
        .await
        .json()
        .await
        .expect("json");
    let id = made["id"].as_str().expect("an id");
    assert_eq!(
        app.get(&acme, &format!("/v1/tickets/{id}")).await.status(),
        200
    );
    assert_eq!(app.get(&acme, "/v1/no-such-thing").await.status(), 404);
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let ok = call(
        &client,
        "create_ticket",
        json!({"operation_id": fresh_key(), "project_id": "ops", "title": "Disk"}),
    )
    .await;
    assert_ne!(ok.is_error, Some(true));
    let failed = call(&client, "get_ticket", json!({"ticket_id": "not-a-ticket"})).await;
    assert_eq!(failed.is_error, Some(true));

    let text = metrics_text(&app).await;
    let http = "http_server_request_duration_seconds_count";
    for (method, route, status) in [
        ("POST", "/v1/tickets", "201"),
        ("GET", "/v1/tickets/{id}", "200"),
    ] {
        let labels = [
            ("http_request_method", method),
            ("http_route", route),
            ("http_response_status_code", status),
            ("url_scheme", "http"),
        ];
        assert_eq!(
            sample(&text, http, &labels),
            1.0,
            "{method} {route}\n{text}"
        );
    }
    assert!(
        !text.contains("/v1/no-such-thing"),
        "an unmatched path makes no label"
    );
    assert_eq!(
        sample(&text, http, &[("http_response_status_code", "404")]),
        1.0
    );
    let mcp = "mcp_server_operation_duration_seconds_count";
    let tool_call = |tool| {
        [
            ("mcp_method_name", "tools/call"),
            ("gen_ai_tool_name", tool),
        ]
    };
    assert_eq!(
        sample(&text, mcp, &tool_call("create_ticket")),
        1.0,
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            mcp,
            &[
                &tool_call("create_ticket")[..],
                &[("error_type", "tool_error")]
            ]
            .concat()
        ),
        0.0
    );
    assert_eq!(
        sample(
            &text,
            mcp,
            &[
                &tool_call("get_ticket")[..],
                &[("error_type", "tool_error")]
            ]
            .concat()
        ),
        1.0,
        "{text}"
    );
    // The handshake of this protocol revision is measured too.
    assert_eq!(
        sample(&text, mcp, &[("mcp_method_name", "server/discover")]),
        1.0,
        "{text}"
    );
}

kitchen::on_both_databases!(
    a_scripted_sequence_moves_each_counter_exactly,
    standard_durations_carry_the_conventions_attributes,
    the_retention_sweep_is_counted_by_kind,
);

/// Every exported span, as OTLP/JSON resource-span documents.
type Received = Arc<Mutex<Vec<Value>>>;

/// The attributes of every exported span named `name`.
fn spans_named(received: &Received, name: &str) -> Vec<std::collections::HashMap<String, String>> {
    let mut found = Vec::new();
    for doc in received.lock().expect("lock").iter() {
        for rs in doc["resourceSpans"].as_array().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for span in ss["spans"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|s| s["name"] == name)
                {
                    let attrs = span["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|a| {
                            let v = &a["value"];
                            let text = v["stringValue"]
                                .as_str()
                                .map(str::to_owned)
                                .unwrap_or_else(|| v.to_string());
                            (a["key"].as_str().unwrap_or_default().to_owned(), text)
                        })
                        .collect();
                    found.push(attrs);
                }
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_reach_an_otlp_receiver_with_three_identities() {
    // A receiver on loopback, speaking OTLP/HTTP with JSON bodies.
    let received: Received = Arc::default();
    let sink = received.clone();
    let receiver = axum::Router::new().route(
        "/v1/traces",
        post(move |body: axum::body::Bytes| {
            let sink = sink.clone();
            async move {
                if let Ok(doc) = serde_json::from_slice::<Value>(&body) {
                    sink.lock().expect("lock").push(doc);
                }
                "{}"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let endpoint = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, receiver).await });
    let target = telemetry::logging::OtlpTarget {
        endpoint,
        json: true,
    };
    let guard = telemetry::logging::init(telemetry::LogFormat::Human, Some(&target));
    assert!(
        guard.installed(),
        "needs its own process (cargo nextest runs each test in one)"
    );

    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let rest_key = fresh_key();
    let response = app
        .client
        .post(app.url("/v1/tickets"))
        .bearer_auth(&acme.token)
        .header("idempotency-key", &rest_key)
        .header("x-request-id", "transport-7")
        .header("content-type", "application/json")
        .body(DISK_FULL)
        .send()
        .await
        .expect("answer");
    assert_eq!(response.status(), 201);
    let client = connect(&app, &acme.token, Protocol::Legacy).await;
    let mcp_key = fresh_key();
    call(
        &client,
        "create_ticket",
        json!({"operation_id": mcp_key, "project_id": "ops", "title": "t"}),
    )
    .await;

    // An agent that traces its calls sends its span in `_meta`
    // (traceparent): the attempt joins that trace.
    let traced_key = fresh_key();
    let mut meta = rmcp::model::MetaObject::new();
    meta.set_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    let mut traced = rmcp::model::CallToolRequestParams::new("create_ticket").with_arguments(
        json!({"operation_id": traced_key, "project_id": "ops", "title": "traced"})
            .as_object()
            .cloned()
            .expect("an object"),
    );
    traced.meta = Some(meta.into());
    client.call_tool(traced).await.expect("tool call answered");

    let mut attempts = Vec::new();
    for _ in 0..100 {
        guard.flush();
        attempts = spans_named(&received, "write_attempt");
        if attempts.len() >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let rest = attempts
        .iter()
        .find(|a| a.get("door").map(String::as_str) == Some("rest"))
        .expect("a REST attempt span");
    assert_eq!(rest["operation_key"], rest_key, "the effect");
    assert_eq!(
        rest["transport_request_id"], "transport-7",
        "the transport request"
    );
    assert_eq!(
        rest["attempt_id"].len(),
        36,
        "the attempt: a server-made UUID"
    );
    assert_ne!(rest["attempt_id"], rest_key);
    assert_eq!(rest["outcome"], "created");
    assert_eq!(rest["tenant"], "acme");

    let mcp = attempts
        .iter()
        .find(|a| a.get("door").map(String::as_str) == Some("mcp"))
        .expect("an MCP attempt span");
    assert_eq!(mcp["operation_key"], mcp_key);
    assert!(!mcp["transport_request_id"].is_empty(), "the JSON-RPC id");
    assert_ne!(mcp["transport_request_id"], mcp_key);
    assert_eq!(
        mcp["contract"].len(),
        64,
        "the contract hash of create_ticket"
    );
    let (trace, parent) = trace_of(&received, &traced_key).expect("the traced attempt's span");
    assert_eq!(
        trace, "4bf92f3577b34da6a3ce929d0e0e4736",
        "the agent's trace"
    );
    assert_eq!(parent, "00f067aa0ba902b7", "a child of the agent's span");
    let (untraced, _) = trace_of(&received, &mcp_key).expect("the other attempt's span");
    assert_ne!(
        untraced, trace,
        "a call without traceparent starts its own trace"
    );
}

/// The trace id and parent span id of the `write_attempt` span of
/// `operation_key`, as exported.
fn trace_of(received: &Received, operation_key: &str) -> Option<(String, String)> {
    let docs = received.lock().expect("lock");
    let spans = docs
        .iter()
        .flat_map(|doc| doc["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|rs| rs["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default());
    for span in spans.filter(|s| s["name"] == "write_attempt") {
        let keyed = span["attributes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a["key"] == "operation_key" && a["value"]["stringValue"] == operation_key);
        if keyed {
            let text = |field: &str| span[field].as_str().unwrap_or_default().to_owned();
            return Some((text("traceId"), text("parentSpanId")));
        }
    }
    None
}
