//! What hostile or careless HTTP gets, on both doors: every refusal in the
//! dialect of the door addressed (JSON-RPC on `/mcp`, a problem document on
//! REST) with its real reason, never a 5xx, and never a used-up key.

use std::io::Write;
use std::time::Duration;

use e2e_tests::{TestApp, TestTenant, snapshot_settings};
use kitchen::KitchenConfig;
use kitchen::testing::TestDatabase;
use serde_json::{Value, json};

use crate::{DISK_FULL, fresh_key};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// POSTs `body` to `/mcp` as `tenant`, with `extra` headers.
async fn mcp_post(
    app: &TestApp,
    tenant: &TestTenant,
    body: impl Into<reqwest::Body>,
    extra: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = app.client.post(app.url("/mcp")).bearer_auth(&tenant.token);
    // An extra header replaces a default one of the same name.
    for (name, value) in [
        ("content-type", "application/json"),
        ("accept", ACCEPT_BOTH),
    ] {
        if !extra.iter().any(|(n, _)| *n == name) {
            request = request.header(name, value);
        }
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.body(body).send().await.expect("an answer")
}

/// The status, and the JSON-RPC error the body must be.
async fn jsonrpc_error(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert_eq!(content_type, "application/json", "status {status}");
    let body: Value = response.json().await.expect("JSON");
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert!(body["error"]["code"].is_i64(), "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    (status, body)
}

fn create_call(id: Value, arguments: Value) -> String {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":"create_ticket","arguments":arguments}})
    .to_string()
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).expect("in memory");
    encoder.finish().expect("in memory")
}

/// A probe's name, its body and the headers it adds or replaces.
type Probe = (&'static str, String, Vec<(&'static str, &'static str)>);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_mcp_messages_get_json_rpc_errors() {
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let over_limit = create_call(
        json!(1),
        json!({"operation_id": fresh_key(), "project_id":"ops","title":"t",
            "description": "x".repeat(rest_door::BODY_LIMIT_BYTES)}),
    );
    let probes: Vec<Probe> = vec![
        ("invalid JSON", r#"{"jsonrpc":"2.0","#.into(), vec![]),
        ("empty body", String::new(), vec![]),
        ("a batch", format!("[{ping},{ping}]"), vec![]),
        (
            "null id",
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#.into(),
            vec![],
        ),
        (
            "a float id",
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.into(),
            vec![],
        ),
        (
            "jsonrpc 1.0",
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.into(),
            vec![],
        ),
        (
            "params an array",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}"#.into(),
            vec![],
        ),
        (
            "arguments a string",
            create_call(json!(2), json!("oops")),
            vec![],
        ),
        (
            "initialize without params",
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#.into(),
            vec![],
        ),
        ("over the body limit", over_limit, vec![]),
        (
            "a foreign Host",
            ping.into(),
            vec![("host", "tickets.example.com")],
        ),
        (
            "a foreign Origin",
            ping.into(),
            vec![("origin", "http://evil.example")],
        ),
        (
            "only JSON accepted",
            ping.into(),
            vec![("accept", "application/json")],
        ),
        (
            "an unknown protocol version",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.into(),
            vec![("mcp-protocol-version", "1999-01-01")],
        ),
        ("brotli", ping.into(), vec![("content-encoding", "br")]),
        (
            "two Origins",
            ping.into(),
            vec![
                ("origin", "http://localhost:1"),
                ("origin", "http://evil.example"),
            ],
        ),
        (
            "a Host with user information",
            ping.into(),
            vec![("host", "evil@localhost")],
        ),
    ];
    let mut answers = serde_json::Map::new();
    for (name, body, extra) in probes {
        let (status, error) = jsonrpc_error(mcp_post(&app, &acme, body, &extra).await).await;
        // Invalid params are a method's answer (200, as rmcp answers its
        // own); everything else is refused by the transport (4xx).
        let invalid_params = error["error"]["code"] == mcp_door::http_edge::INVALID_PARAMS;
        assert!(
            (invalid_params && status == 200) || (400..500).contains(&status),
            "{name}: {status} {error}"
        );
        answers.insert(name.into(), json!({"status": status, "body": error}));
    }
    let get = app
        .client
        .get(app.url("/mcp"))
        .bearer_auth(&acme.token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("an answer");
    assert_eq!(get.headers()["allow"], "POST", "405 keeps Allow");
    let (status, error) = jsonrpc_error(get).await;
    answers.insert("GET".into(), json!({"status": status, "body": error}));
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_edge_refusals", answers));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_mcp_create_leaves_its_operation_id_unused() {
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let valid = json!({"operation_id": key, "project_id": "ops", "title": "Disk full"});
    let refused = [
        mcp_post(
            &app,
            &acme,
            create_call(json!(1), valid.clone()).replace('}', ""),
            &[],
        )
        .await,
        mcp_post(
            &app,
            &acme,
            create_call(json!(1), valid.clone()),
            &[("content-encoding", "br")],
        )
        .await,
        mcp_post(
            &app,
            &acme,
            format!("[{}]", create_call(json!(1), valid.clone())),
            &[],
        )
        .await,
    ];
    for answer in refused {
        assert!(answer.status().is_client_error(), "{}", answer.status());
    }
    let gzipped = gzip(create_call(json!(7), valid).as_bytes());
    let created = mcp_post(&app, &acme, gzipped, &[("content-encoding", "gzip")]).await;
    assert_eq!(created.status(), 200);
    let body: Value = created.json().await.expect("JSON");
    assert_eq!(body["id"], 7);
    assert_eq!(
        body["result"]["structuredContent"]["status"], "created",
        "{body}"
    );
}

/// The request timeout answers an MCP client in JSON-RPC, with its request
/// id, and the create it stopped waiting for still commits once.
async fn a_timed_out_mcp_call_is_a_json_rpc_error_and_still_commits_once(db: TestDatabase) {
    let app = TestApp::spawn_with(&db, KitchenConfig::default(), Duration::from_millis(300)).await;
    let acme = app.tenant("acme").await;
    let key = fresh_key();
    let holder = app.hold_key(&acme, &key).await;
    let call = create_call(
        json!("call-1"),
        json!({"operation_id": key, "project_id": "ops", "title": "Disk full on db-1"}),
    );
    let (status, error) = jsonrpc_error(mcp_post(&app, &acme, call.clone(), &[]).await).await;
    assert_eq!(
        status, 200,
        "an MCP client reads JSON-RPC errors from a 200"
    );
    assert_eq!(error["id"], "call-1");
    assert_eq!(error["error"]["code"], mcp_door::http_edge::REQUEST_TIMEOUT);
    let message = error["error"]["message"].as_str().expect("a message");
    assert!(message.contains("get_operation_status"), "{message}");
    assert!(message.contains("same operation_id"), "{message}");
    holder.roll_back().await;

    assert!(
        app.operation_committed(&acme, &key).await,
        "the timed-out create committed by itself"
    );
    let retry: Value = mcp_post(&app, &acme, call, &[])
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(
        retry["result"]["structuredContent"]["status"], "replayed",
        "{retry}"
    );
    assert_eq!(app.ticket_count(&acme).await, 1);
}

kitchen::on_both_databases!(a_timed_out_mcp_call_is_a_json_rpc_error_and_still_commits_once);

/// A REST refusal made by a layer or an extractor keeps its real cause and
/// its headers, in a problem document.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_refusals_keep_their_cause() {
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let problem = |response: reqwest::Response| async move {
        let status = response.status().as_u16();
        let allow = response
            .headers()
            .get("allow")
            .map(|v| v.to_str().map(String::from));
        assert_eq!(response.headers()["content-type"], rest_door::PROBLEM_JSON);
        let body: Value = response.json().await.expect("JSON");
        (status, allow, body)
    };
    let (status, _, body) = problem(app.get(&acme, "/v1/tickets?limit=1&limit=2").await).await;
    assert_eq!(
        (status, body["type"].as_str()),
        (400, Some("/problems/bad-request"))
    );
    assert!(
        body["detail"].as_str().is_some_and(|d| d.contains("limit")),
        "{body}"
    );

    let (_, _, body) = problem(app.get(&acme, "/v1/tickets/%ff").await).await;
    assert_eq!(body["type"], "/problems/bad-request", "{body}");

    let (status, _, body) = problem(
        app.client
            .get(app.url("/nothing-here"))
            .send()
            .await
            .expect("an answer"),
    )
    .await;
    assert_eq!(status, 404);
    assert!(
        !body["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("not found"),
        "{body}"
    );

    let (status, allow, _) = problem(
        app.client
            .delete(app.url("/v1/tickets"))
            .bearer_auth(&acme.token)
            .send()
            .await
            .expect("an answer"),
    )
    .await;
    assert_eq!(status, 405);
    assert!(allow.is_some(), "405 keeps Allow");

    let post = |encoding: &'static str, body: Vec<u8>| {
        app.client
            .post(app.url("/v1/tickets"))
            .bearer_auth(&acme.token)
            .header("idempotency-key", fresh_key())
            .header("content-type", "application/json")
            .header("content-encoding", encoding)
            .body(body)
    };
    let (status, _, body) = problem(
        post("br", DISK_FULL.as_bytes().to_vec())
            .send()
            .await
            .expect("an answer"),
    )
    .await;
    assert_eq!(
        (status, body["type"].as_str()),
        (415, Some("/problems/unsupported-content-encoding"))
    );
    let gzipped = post("gzip", gzip(DISK_FULL.as_bytes()))
        .send()
        .await
        .expect("an answer");
    assert_eq!(gzipped.status(), 201, "a gzip body is decoded");

    let (status, _, body) = problem(
        app.client
            .get(app.url("/v1/tickets"))
            .header("authorization", format!("Bearer {}", acme.token))
            .header("authorization", "Bearer tkt_bogus")
            .send()
            .await
            .expect("an answer"),
    )
    .await;
    assert_eq!(
        (status, body["type"].as_str()),
        (400, Some("/problems/bad-request"))
    );
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Authorization")),
        "{body}"
    );
}

/// A body that never finishes arriving is bounded by the request timeout on
/// `/mcp` too (the REST routes have the same bound from their layer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_mcp_body_is_cut_off_by_the_request_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let db = TestDatabase::sqlite();
    let app = TestApp::spawn_with(&db, KitchenConfig::default(), Duration::from_millis(300)).await;
    let acme = app.tenant("acme").await;
    let address = app.address.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\n\
         Content-Length: 100\r\n\r\n{{\"jsonrpc\":",
        acme.token
    );
    stream.write_all(head.as_bytes()).await.expect("sent");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .expect("answered well before the client gives up")
        .expect("read");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    let error: Value = serde_json::from_str(body).expect("a JSON-RPC error");
    assert_eq!(
        error["error"]["code"],
        mcp_door::http_edge::TRANSPORT_REFUSED
    );
}
