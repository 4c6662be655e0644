//! The MCP endpoint's HTTP surface: authentication, Host and Origin checks,
//! the tool list.

use e2e_tests::{TestApp, snapshot_settings};
use kitchen::testing::TestDatabase;

use crate::mcp_support::{Protocol, connect};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_list_is_the_contract() {
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let client = connect(&app, &acme.token, Protocol::Stateless).await;
    let tools = client.list_all_tools().await.expect("tools/list");
    let tools = serde_json::to_value(&tools).expect("json");
    let tool = |name: &str| {
        tools
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .unwrap_or_else(|| panic!("{name} listed"))
            .clone()
    };
    let hints = |name: &str| {
        let a = &tool(name)["annotations"];
        [
            a["readOnlyHint"].clone(),
            a["destructiveHint"].clone(),
            a["idempotentHint"].clone(),
            a["openWorldHint"].clone(),
        ]
    };
    let (t, f, none) = (
        serde_json::Value::Bool(true),
        serde_json::Value::Bool(false),
        serde_json::Value::Null,
    );
    // Every write is idempotent given its operation_id; only update_ticket
    // can destroy what it replaces; the reads change nothing.
    for (name, expected) in [
        (
            "create_ticket",
            [f.clone(), f.clone(), t.clone(), f.clone()],
        ),
        (
            "update_ticket",
            [f.clone(), t.clone(), t.clone(), f.clone()],
        ),
        (
            "transition_ticket",
            [f.clone(), f.clone(), t.clone(), f.clone()],
        ),
        ("add_comment", [f.clone(), f.clone(), t.clone(), f.clone()]),
        (
            "list_comments",
            [t.clone(), none.clone(), t.clone(), f.clone()],
        ),
        ("get_operation_status", [t.clone(), none, t, f]),
    ] {
        assert_eq!(hints(name), expected, "{name}");
    }
    for write in [
        "create_ticket",
        "update_ticket",
        "transition_ticket",
        "add_comment",
    ] {
        assert!(
            tool(write)["inputSchema"]["required"]
                .as_array()
                .expect("required")
                .contains(&"operation_id".into()),
            "{write}"
        );
    }
    snapshot_settings().bind(|| insta::assert_json_snapshot!("mcp_tools_list", tools));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_and_foreign_origin_calls_are_refused() {
    let db = TestDatabase::sqlite();
    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    let post = || {
        app.client
            .post(app.url("/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(list)
    };
    let anonymous = post().send().await.expect("answer");
    assert_eq!(anonymous.status(), 401);
    let challenge = anonymous.headers()["www-authenticate"]
        .to_str()
        .expect("ASCII");
    assert!(
        challenge.starts_with(r#"Bearer realm="tickets""#),
        "{challenge}"
    );
    assert!(challenge.contains("error_description"), "{challenge}");
    let wrong = post()
        .bearer_auth("tkt_wrong")
        .send()
        .await
        .expect("answer");
    assert_eq!(wrong.status(), 401);

    let foreign = post()
        .bearer_auth(&acme.token)
        .header("origin", "http://evil.example")
        .send()
        .await
        .expect("answer");
    assert_eq!(foreign.status(), 403, "a foreign Origin is refused");
    let local = post()
        .bearer_auth(&acme.token)
        .header("origin", "http://localhost:3000")
        .send()
        .await
        .expect("answer");
    assert_eq!(local.status(), 200, "a loopback Origin is accepted");
}

/// The stdio mode, over an in-memory pipe: the tenant is the one fixed at
/// start, and the key namespace is the same as over HTTP.
async fn stdio_mode_serves_the_fixed_tenant(db: TestDatabase) {
    use rmcp::model::ClientConfig;
    use rmcp::service::ServiceExt;

    let app = TestApp::spawn(&db).await;
    let acme = app.tenant("acme").await;
    let tenant = app
        .kitchen
        .authenticate(&acme.token)
        .await
        .expect("db")
        .expect("tenant");
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let server = tokio::spawn(mcp_door::serve_stream(
        app.kitchen.clone(),
        tenant,
        app.metrics.clone(),
        (server_read, server_write),
    ));
    let (client_read, client_write) = tokio::io::split(client_end);
    let client = ClientConfig::default()
        .serve((client_read, client_write))
        .await
        .expect("stdio client");

    let key = crate::fresh_key();
    let over_http: serde_json::Value = app
        .post_ticket(&acme, Some(&key), crate::DISK_FULL)
        .await
        .json()
        .await
        .expect("json");
    let over_stdio = crate::mcp_support::content(
        &crate::mcp_support::create(&client, &key, "Disk full on db-1").await,
    );
    assert_eq!(over_stdio["status"], "replayed");
    assert_eq!(over_stdio["ticket"]["id"], over_http["id"]);
    client.cancel().await.expect("close");
    server
        .await
        .expect("server task")
        .expect("server ended cleanly");
}

kitchen::on_both_databases!(stdio_mode_serves_the_fixed_tenant);
