//! An rmcp client for the MCP door, in each protocol era it must serve.

use e2e_tests::TestApp;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, ClientConfig, ProtocolVersion};
use rmcp::service::Service;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

/// A connected MCP client.
pub type Client = RunningService<RoleClient, ClientConfig>;

/// How the client speaks to the server.
#[derive(Debug, Clone, Copy)]
pub enum Protocol {
    /// The 2026-07-28 revision: no initialize, every request self-contained.
    Stateless,
    /// An initialize handshake at 2025-06-18.
    Legacy,
}

/// Connects to `app`'s `/mcp` with `token`.
pub async fn connect(app: &TestApp, token: &str, protocol: Protocol) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(app.url("/mcp"))
            .auth_header(token.to_owned()),
    );
    let client = match protocol {
        Protocol::Stateless => {
            ClientConfig::default()
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
        }
        Protocol::Legacy => {
            ClientConfig::default()
                .with_protocol_version(ProtocolVersion::V_2025_06_18)
                .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
                .await
        }
    };
    let client = client.expect("MCP client connects");
    let negotiated = client.peer_info().map(|info| info.protocol_version.clone());
    let expected = match protocol {
        Protocol::Stateless => ProtocolVersion::V_2026_07_28,
        Protocol::Legacy => ProtocolVersion::V_2025_06_18,
    };
    assert_eq!(negotiated, Some(expected), "negotiated protocol");
    client
}

/// Calls `tool` with `arguments` on any client (HTTP or stdio).
pub async fn call<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    tool: &'static str,
    arguments: Value,
) -> CallToolResult {
    let arguments = arguments
        .as_object()
        .cloned()
        .expect("arguments are an object");
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .expect("tool call answered")
}

/// The structured content of a result.
/// (A read tool's error carries its problem as JSON text only: its output
/// schema describes what it reads, and structured content must conform to
/// it.)
pub fn content(result: &CallToolResult) -> Value {
    if let Some(structured) = &result.structured_content {
        return structured.clone();
    }
    assert_eq!(
        result.is_error,
        Some(true),
        "only an error goes without structured content"
    );
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .expect("the problem as text");
    serde_json::from_str(&text).expect("the problem's text is JSON")
}

/// `create_ticket` with `operation_id` and a title, on any client.
pub async fn create<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    operation_id: &str,
    title: &str,
) -> CallToolResult {
    call(
        client,
        "create_ticket",
        serde_json::json!({"operation_id": operation_id, "project_id": "ops", "title": title}),
    )
    .await
}

/// `get_operation_status` for `operation_id`, as structured content.
pub async fn status<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    operation_id: &str,
) -> Value {
    content(
        &call(
            client,
            "get_operation_status",
            serde_json::json!({"operation_id": operation_id}),
        )
        .await,
    )
}

/// `get_operation_status` for `operation_id` of the write `action`, as
/// structured content.
pub async fn status_of<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    action: &str,
    operation_id: &str,
) -> Value {
    content(
        &call(
            client,
            "get_operation_status",
            serde_json::json!({"operation_id": operation_id, "action": action}),
        )
        .await,
    )
}

/// A new ticket titled `title`, made with a fresh operation_id: its id.
pub async fn new_ticket<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    title: &str,
) -> String {
    let created = content(&create(client, &crate::fresh_key(), title).await);
    assert_eq!(created["status"], "created", "{created}");
    created["ticket"]["id"]
        .as_str()
        .expect("a ticket id")
        .to_owned()
}

/// The fields named by a result's `errors`, in order.
pub fn error_fields(body: &Value) -> Vec<String> {
    body["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| e["field"].as_str().expect("a field").to_owned())
        .collect()
}

/// The sum of the samples of `metric` in `app`'s `/metrics` whose labels
/// include all of `labels`.
pub async fn metric(app: &TestApp, metric: &str, labels: &[(&str, &str)]) -> f64 {
    sample(&metrics_text(app).await, metric, labels)
}

/// `app`'s `/metrics`, as Prometheus text.
pub async fn metrics_text(app: &TestApp) -> String {
    app.client
        .get(app.url("/metrics"))
        .send()
        .await
        .expect("answer")
        .text()
        .await
        .expect("text")
}

/// The sum of the samples of `metric` in Prometheus `text` whose labels
/// include all of `labels`.
pub fn sample(text: &str, metric: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter(|l| {
            labels
                .iter()
                .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .map(|l| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(f64::NAN)
        })
        .sum()
}
