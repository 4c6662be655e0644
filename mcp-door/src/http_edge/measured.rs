//! `mcp.server.operation.duration` for every MCP request over HTTP: the
//! semantic conventions' measurement, with the method, the tool of a
//! `tools/call` and how it failed (`tool_error` for a result with
//! `isError`, else the JSON-RPC error code), read from the message and the
//! answer at the edge, where both are whole.

use std::time::Instant;

use axum::body::{Body, Bytes};
use http::{Response, header};
use http_body_util::BodyExt;
use serde::Deserialize;
use serde_json::Value;
use telemetry::{McpError, McpOperation, Metrics};

/// What a request is, as the measurement names it.
#[derive(Debug, Clone)]
pub(crate) struct Called {
    method: String,
    tool: Option<String>,
    protocol_version: Option<String>,
    started: Instant,
}

impl Called {
    /// The request `message` is (`None` for a notification or a response:
    /// only requests have a duration).
    pub(crate) fn of(message: &Value, headers: &http::HeaderMap) -> Option<Self> {
        message.get("id")?;
        let method = message.get("method")?.as_str()?.to_owned();
        let tool = (method == "tools/call")
            .then(|| message.pointer("/params/name")?.as_str().map(str::to_owned))
            .flatten();
        let protocol_version = headers
            .get("mcp-protocol-version")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        Some(Self {
            method,
            tool,
            protocol_version,
            started: Instant::now(),
        })
    }

    fn record(&self, metrics: &Metrics, error: Option<McpError>) {
        metrics.mcp_operation(
            &McpOperation {
                method: &self.method,
                tool: self.tool.as_deref(),
                protocol_version: self.protocol_version.as_deref(),
                error,
            },
            self.started.elapsed().as_secs_f64(),
        );
    }

    /// Records a request the edge itself answered with JSON-RPC error
    /// `code` (the request timeout).
    pub(crate) fn failed(&self, metrics: &Metrics, code: i64) {
        self.record(metrics, Some(McpError::JsonRpc(code)));
    }

    /// Records `response`, the answer to this request, and passes it on.
    /// A JSON answer is read whole (the door answers in JSON, never a
    /// stream) to learn whether it failed.
    pub(crate) async fn answered(
        &self,
        metrics: &Metrics,
        response: Response<Body>,
    ) -> Response<Body> {
        let is_json = response
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|ct| ct.as_bytes().starts_with(b"application/json"));
        if !is_json {
            self.record(metrics, None);
            return response;
        }
        let (parts, body) = response.into_parts();
        let bytes = match body.collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                tracing::warn!(error = %e, "an MCP answer could not be read for its measurement");
                self.record(metrics, None);
                return Response::from_parts(parts, Body::empty());
            }
        };
        self.record(metrics, failure(&bytes));
        Response::from_parts(parts, Body::from(bytes))
    }
}

/// The two members of a JSON-RPC answer its measurement reads. Every other
/// member (a tool's whole result) is skipped while parsing, not built: an
/// answer read into a `Value` was a tree of allocations per call, only to
/// look at two of its leaves.
#[derive(Deserialize)]
struct Answer {
    error: Option<AnswerError>,
    result: Option<AnswerResult>,
}

#[derive(Deserialize)]
struct AnswerError {
    code: i64,
}

#[derive(Deserialize)]
struct AnswerResult {
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

/// How the JSON-RPC answer `bytes` failed, if it did.
fn failure(bytes: &Bytes) -> Option<McpError> {
    let answer: Answer = serde_json::from_slice(bytes).ok()?;
    if let Some(error) = answer.error {
        return Some(McpError::JsonRpc(error.code));
    }
    (answer.result?.is_error == Some(true)).then_some(McpError::Tool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_error_and_a_json_rpc_error_are_told_apart() {
        let bytes = |v: Value| Bytes::from(v.to_string());
        assert_eq!(
            failure(&bytes(
                json!({"jsonrpc":"2.0","id":1,"result":{"isError":true}})
            )),
            Some(McpError::Tool)
        );
        assert_eq!(
            failure(&bytes(
                json!({"jsonrpc":"2.0","id":1,"error":{"code":-32602}})
            )),
            Some(McpError::JsonRpc(-32602))
        );
        assert_eq!(
            failure(&bytes(json!({"jsonrpc":"2.0","id":1,"result":{}}))),
            None
        );
        // A whole answer: every other member is skipped, whatever its shape.
        let result = json!({
            "content": [{"type": "text", "text": "{\"status\":\"replayed\"}"}],
            "structuredContent": {"status": "replayed", "ticket": {"labels": ["a", "b"]}},
            "_meta": {"io.modelcontextprotocol/failure": null},
        });
        assert_eq!(
            failure(&bytes(
                json!({"jsonrpc":"2.0","id":"x","result":result.clone()})
            )),
            None
        );
        let mut failed = result;
        failed["isError"] = json!(true);
        assert_eq!(
            failure(&bytes(json!({"jsonrpc":"2.0","id":"x","result":failed}))),
            Some(McpError::Tool)
        );
        assert_eq!(
            failure(&bytes(json!({
                "jsonrpc":"2.0","id":2,
                "error":{"code":-32001,"message":"stopped waiting","data":{"retryable":true}}
            }))),
            Some(McpError::JsonRpc(-32001))
        );
        let headers = http::HeaderMap::new();
        let call =
            json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_ticket"}});
        let called = Called::of(&call, &headers).expect("a request");
        assert_eq!(called.tool.as_deref(), Some("get_ticket"));
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        assert!(
            Called::of(&note, &headers).is_none(),
            "a notification has no duration"
        );
    }
}
