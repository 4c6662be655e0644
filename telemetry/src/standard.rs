//! Standard names next to ours: the OpenTelemetry semantic conventions'
//! HTTP server duration (`http.server.request.duration`) and MCP server
//! duration (`mcp.server.operation.duration`), with their standard
//! attributes and bucket boundaries, so dashboards built for any HTTP or
//! MCP server work here unchanged. The project's own instruments
//! (`tickets.*`) stay: they carry what no convention has (the outcome of a
//! write, the key's fate).

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Histogram, Meter};

/// The conventions' advised boundaries for `http.server.request.duration`.
const HTTP_BOUNDARIES: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// The conventions' advised boundaries for `mcp.server.operation.duration`.
const MCP_BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// The methods HTTP defines; any other is reported as `_OTHER`, as the
/// conventions ask (a client cannot make a label per made-up method).
const KNOWN_METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
];

/// The two standard instruments.
#[derive(Clone)]
pub(crate) struct Standard {
    http: Histogram<f64>,
    mcp: Histogram<f64>,
}

impl Standard {
    pub(crate) fn new(meter: &Meter) -> Self {
        Self {
            http: meter
                .f64_histogram("http.server.request.duration")
                .with_unit("s")
                .with_description("Duration of HTTP server requests (OpenTelemetry semantic conventions)")
                .with_boundaries(HTTP_BOUNDARIES.to_vec())
                .build(),
            mcp: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("Duration of MCP requests as the server sees them (OpenTelemetry semantic conventions)")
                .with_boundaries(MCP_BOUNDARIES.to_vec())
                .build(),
        }
    }

    pub(crate) fn http_request(&self, request: &HttpRequest<'_>, seconds: f64) {
        let method = KNOWN_METHODS
            .into_iter()
            .find(|known| *known == request.method)
            .unwrap_or("_OTHER");
        let mut attributes = vec![
            KeyValue::new("http.request.method", method),
            KeyValue::new("http.response.status_code", i64::from(request.status)),
            KeyValue::new("url.scheme", "http"),
            KeyValue::new("network.protocol.name", "http"),
            KeyValue::new("network.protocol.version", request.protocol_version),
        ];
        if let Some(route) = request.route {
            attributes.push(KeyValue::new("http.route", route.to_owned()));
        }
        // A server's error is its status code (a client's 4xx is not).
        if request.status >= 500 {
            attributes.push(KeyValue::new("error.type", request.status.to_string()));
        }
        self.http.record(seconds, &attributes);
    }

    pub(crate) fn mcp_operation(&self, operation: &McpOperation<'_>, seconds: f64) {
        let mut attributes = vec![
            KeyValue::new("mcp.method.name", operation.method.to_owned()),
            KeyValue::new("network.transport", "tcp"),
            KeyValue::new("network.protocol.name", "http"),
        ];
        if let Some(tool) = operation.tool {
            attributes.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(version) = operation.protocol_version {
            attributes.push(KeyValue::new("mcp.protocol.version", version.to_owned()));
        }
        match &operation.error {
            None => {}
            Some(McpError::Tool) => attributes.push(KeyValue::new("error.type", "tool_error")),
            Some(McpError::JsonRpc(code)) => {
                attributes.push(KeyValue::new("error.type", code.to_string()));
                attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
            }
        }
        self.mcp.record(seconds, &attributes);
    }
}

/// One HTTP request as `http.server.request.duration` describes it.
#[derive(Debug, Clone, Copy)]
pub struct HttpRequest<'a> {
    /// The request method, e.g. `POST`.
    pub method: &'a str,
    /// The matched route template, e.g. `/v1/tickets/{id}`; `None` when no
    /// route matched (a `404`), so made-up paths make no labels.
    pub route: Option<&'a str>,
    /// The response status code.
    pub status: u16,
    /// `1.1` or `2`.
    pub protocol_version: &'static str,
}

/// How an MCP request failed, as `error.type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpError {
    /// A `tools/call` answered with `isError: true` (`tool_error`).
    Tool,
    /// A JSON-RPC error, by its code.
    JsonRpc(i64),
}

/// One MCP request as `mcp.server.operation.duration` describes it.
#[derive(Debug, Clone, Copy)]
pub struct McpOperation<'a> {
    /// The JSON-RPC method, e.g. `tools/call`.
    pub method: &'a str,
    /// For `tools/call`: the tool's name.
    pub tool: Option<&'a str>,
    /// The `MCP-Protocol-Version` the client sent, if any.
    pub protocol_version: Option<&'a str>,
    /// How it failed, if it did.
    pub error: Option<McpError>,
}
