//! The `/mcp` endpoint's edge: everything an MCP client can get wrong before
//! a tool runs is answered here, in JSON-RPC, never as a REST problem.
//!
//! rmcp's Streamable HTTP service answers some malformed input with plain
//! text (`415 fail to deserialize request body` for invalid JSON, `500` for
//! a body it cannot read, `403 Forbidden: Host header is not allowed`), and
//! lets a slow call run for ever. An MCP client cannot parse plain text, so
//! this edge sits in front of it and:
//!
//! - reads the body itself, under the size limit (`413`; a badly framed
//!   body is `400`), and checks that it is one JSON-RPC message: invalid
//!   JSON is `-32700`, a batch or a message of the wrong shape `-32600`,
//!   non-object `params` / tool `arguments` `-32602`;
//! - bounds each request, body and call together, by the request timeout:
//!   a body that never arrives is a `408`; a call still running then gets a
//!   JSON-RPC error that carries the request's id and says what the caller
//!   can do (the create itself runs on its own task and still finishes);
//! - checks the caller's scopes against what the message needs (the one
//!   policy, `access::policy`: a `tools/call` by its tool, other methods
//!   by name): a token without the scope gets `403` with
//!   `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`, the
//!   step-up signal of the MCP authorization spec, and a JSON-RPC error;
//! - turns every plain-text refusal rmcp makes (Host or Origin not allowed,
//!   `Accept`, `Content-Type`, protocol version, method) into a JSON-RPC
//!   error that keeps rmcp's reason, the status and the headers (`Allow`),
//!   and adds which setting to change where there is one.
//!
//! Codes follow JSON-RPC 2.0 (`-32700`, `-32600`, `-32602`) and, for
//! transport refusals and the timeout, the official MCP TypeScript SDK
//! (`-32000`, `-32001`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use access::Challenges;
use axum::body::{Body, Bytes};
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use kitchen::{Caller, Scopes};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use serde_json::{Value, json};
use telemetry::Metrics;

use crate::tools::TicketTools;

mod measured;

use measured::Called;

/// JSON-RPC 2.0: the body is not valid JSON (or could not be read).
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0: valid JSON, but not one valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC 2.0: the method's parameters are not valid.
pub const INVALID_PARAMS: i64 = -32602;
/// The transport refused the request (Host, Origin, Accept, Content-Type,
/// method, size, duplicate headers); the message says why.
pub const TRANSPORT_REFUSED: i64 = -32000;
/// The server stopped waiting for the call.
pub const REQUEST_TIMEOUT: i64 = -32001;
pub use crate::contract::DATABASE_UNAVAILABLE;

/// An oversized body up to this size is read to its end (and dropped)
/// before the `413`, so that a client still writing it reads the answer
/// instead of a broken pipe; a larger one is refused at once.
const DRAIN_LIMIT_BYTES: usize = 1024 * 1024;

/// How much the edge accepts and how long it waits.
#[derive(Debug, Clone, Copy)]
pub struct McpLimits {
    /// Largest request body, in bytes.
    pub body_limit_bytes: usize,
    /// Longest a call may run before the caller gets a timeout error.
    pub request_timeout: Duration,
}

/// A JSON-RPC error answer with `status`, for requests refused before they
/// reach a tool. `id` is the request's id when it is known, else `null`.
pub fn error_response(status: StatusCode, id: Value, code: i64, message: &str) -> Response<Body> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": { "code": code, "message": message },
    });
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A refusal by the HTTP layer in front of `/mcp` (a duplicate header, an
/// unsupported `Content-Encoding`), in the JSON-RPC dialect.
pub fn refusal(status: StatusCode, message: &str) -> Response<Body> {
    tracing::info!(
        status = status.as_u16(),
        reason = message,
        "MCP request refused"
    );
    error_response(status, Value::Null, TRANSPORT_REFUSED, message)
}

/// rmcp's Streamable HTTP service as this door configures it.
pub(crate) type Rmcp = StreamableHttpService<TicketTools, NeverSessionManager>;

/// The `/mcp` endpoint: rmcp's service behind the edge described in the
/// module docs. A tower service, for `Router::nest_service`.
#[derive(Clone)]
pub struct McpEndpoint {
    /// One handle per request: rmcp's service clones its whole
    /// configuration (the allowed hosts and origins among it) when cloned,
    /// and a request used to clone it twice, measurably.
    shared: Arc<Edge>,
}

/// What every request to the endpoint shares.
struct Edge {
    inner: Rmcp,
    limits: McpLimits,
    challenges: Challenges,
    metrics: Metrics,
}

impl McpEndpoint {
    pub(crate) fn new(
        inner: Rmcp,
        limits: McpLimits,
        challenges: Challenges,
        metrics: Metrics,
    ) -> Self {
        Self {
            shared: Arc::new(Edge {
                inner,
                limits,
                challenges,
                metrics,
            }),
        }
    }
}

impl tower::Service<Request<Body>> for McpEndpoint {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let edge = Arc::clone(&self.shared);
        Box::pin(async move { Ok(answer(&edge, request).await) })
    }
}

async fn answer(edge: &Edge, request: Request<Body>) -> Response<Body> {
    let Edge {
        inner,
        limits,
        challenges,
        metrics,
    } = edge;
    let limits = *limits;
    // Only a JSON POST carries a message; anything else (GET, DELETE, a
    // wrong Content-Type, a foreign Host) is rmcp's to refuse, and its
    // refusal is translated below.
    if request.method() != http::Method::POST || !is_json(request.headers()) {
        let response = call(inner, request).await;
        return translate_refusal(response, Value::Null, false).await;
    }
    let (parts, body) = request.into_parts();
    // One deadline for the whole request, body included: a body that
    // trickles in must not hold the connection any more than a slow call.
    let deadline = tokio::time::Instant::now() + limits.request_timeout;
    let read = read_message(&parts.headers, body, limits.body_limit_bytes);
    let (id, called) = match tokio::time::timeout_at(deadline, read).await {
        Ok(Ok((bytes, id, needs, called))) => {
            if let Some(refused) = lacking_scope(&parts, challenges, needs, &id) {
                return refused;
            }
            let request = Request::from_parts(parts, Body::from(bytes));
            match tokio::time::timeout_at(deadline, call(inner, request)).await {
                Ok(response) => {
                    let response = translate_refusal(response, id, true).await;
                    return match called {
                        Some(called) => called.answered(metrics, response).await,
                        None => response,
                    };
                }
                Err(_) => (id, called),
            }
        }
        Ok(Err(refused)) => return refused,
        Err(_) => {
            return refuse(
                StatusCode::REQUEST_TIMEOUT,
                Value::Null,
                TRANSPORT_REFUSED,
                &format!(
                    "The request body did not arrive within {} s; nothing was done. Send the \
                     whole message at once.",
                    limits.request_timeout.as_secs()
                ),
            );
        }
    };
    tracing::warn!(
        timeout_secs = limits.request_timeout.as_secs(),
        "MCP call cut off by the request timeout; it finishes on its own"
    );
    if let Some(called) = called {
        called.failed(metrics, REQUEST_TIMEOUT);
    }
    error_response(
        StatusCode::OK,
        id,
        REQUEST_TIMEOUT,
        &format!(
            "The server stopped waiting after {} s. Whether a write happened is unknown: call \
             get_operation_status with the same operation_id and the tool's name as action, or \
             retry the same call with the same operation_id and arguments (it will not be done \
             twice).",
            limits.request_timeout.as_secs()
        ),
    )
}

async fn call(inner: &Rmcp, request: Request<Body>) -> Response<Body> {
    inner.handle(request).await.map(Body::new)
}

/// A `403` for a caller whose scopes do not cover `needs`, if it lacks
/// any: JSON-RPC in the body, the step-up challenge in the header.
fn lacking_scope(
    parts: &http::request::Parts,
    challenges: &Challenges,
    needs: Scopes,
    id: &Value,
) -> Option<Response<Body>> {
    // No caller: the tools refuse the call themselves.
    let caller = parts.extensions.get::<Caller>()?;
    let missing = caller.scopes.missing_from(needs);
    if missing.is_empty() {
        return None;
    }
    let mut response = refuse(
        StatusCode::FORBIDDEN,
        id.clone(),
        TRANSPORT_REFUSED,
        &format!(
            "Forbidden: this call needs the scope {missing}, which the token does not carry. \
             Nothing was done and no operation_id was used: get a token that includes {missing} \
             (an MCP client that follows the authorization spec asks for it on its own)."
        ),
    );
    if let Ok(value) = HeaderValue::from_str(&challenges.insufficient(missing)) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    Some(response)
}

/// The body, read under `limit` and checked to be one JSON-RPC message;
/// with the message's id (`null` for a notification), the scopes it needs
/// and, for a request, what its measurement names.
async fn read_message(
    headers: &http::HeaderMap,
    body: Body,
    limit: usize,
) -> Result<(Bytes, Value, Scopes, Option<Called>), Response<Body>> {
    let too_large = || {
        refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            Value::Null,
            TRANSPORT_REFUSED,
            &format!(
                "The request body is larger than {} KiB; send a smaller message.",
                limit / 1024
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > DRAIN_LIMIT_BYTES as u64) {
        // Not worth reading: refuse at once and let the connection close.
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    let mut body = body;
    let mut over = false;
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            refuse(
                StatusCode::BAD_REQUEST,
                Value::Null,
                PARSE_ERROR,
                &format!("Parse error: the request body could not be read ({e})."),
            )
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        read = read.saturating_add(data.len());
        over |= read > limit;
        if !over {
            bytes.extend_from_slice(&data);
        } else if read > DRAIN_LIMIT_BYTES {
            break;
        }
    }
    if over {
        return Err(too_large());
    }
    let bytes = Bytes::from(bytes);
    let message: Value = serde_json::from_slice(&bytes).map_err(|e| {
        refuse(
            StatusCode::BAD_REQUEST,
            Value::Null,
            PARSE_ERROR,
            &format!("Parse error: the body is not valid JSON ({e})."),
        )
    })?;
    let id = check_message(&message)
        .map_err(|(status, id, code, why)| refuse(status, id, code, &why))?;
    let called = Called::of(&message, headers);
    Ok((bytes, id, needs(&message), called))
}

/// The scopes `message` needs: a `tools/call` by its tool's name, anything
/// else by its method (a response needs what reading does).
fn needs(message: &Value) -> Scopes {
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let tool = message
        .get("params")
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str);
    access::policy::mcp(method, tool)
}

type Refused = (StatusCode, Value, i64, String);

/// Checks that `message` is one JSON-RPC 2.0 message the server can take;
/// returns its id (or `null`).
fn check_message(message: &Value) -> Result<Value, Refused> {
    let invalid = |id: Value, why: &str| {
        Err((
            StatusCode::BAD_REQUEST,
            id,
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ))
    };
    let object = match message {
        Value::Object(object) => object,
        Value::Array(_) => {
            return invalid(
                Value::Null,
                "batches are not supported; send one JSON-RPC message per HTTP request.",
            );
        }
        _ => return invalid(Value::Null, "the body must be one JSON-RPC message object."),
    };
    let id = match object.get("id") {
        None => Value::Null,
        Some(id @ Value::String(_)) => id.clone(),
        Some(id @ Value::Number(n)) if n.is_i64() => id.clone(),
        Some(_) => {
            return invalid(
                Value::Null,
                "id must be a string or an integer (MCP allows no null or fractional ids).",
            );
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "jsonrpc must be \"2.0\".");
    }
    let Some(method) = object.get("method") else {
        // A response (result or error) is rmcp's to answer.
        if object.contains_key("result") || object.contains_key("error") {
            return Ok(id);
        }
        return invalid(id, "a request needs a method.");
    };
    let Some(method) = method.as_str() else {
        return invalid(id, "method must be a string.");
    };
    let invalid_params = |id: Value, why: String| {
        Err((
            StatusCode::OK,
            id,
            INVALID_PARAMS,
            format!("Invalid params: {why}"),
        ))
    };
    match object.get("params") {
        None if matches!(method, "initialize" | "tools/call" | "tasks/update") => {
            invalid_params(id, format!("{method} needs params (an object)."))
        }
        None => Ok(id),
        Some(Value::Object(params)) => {
            if method == "tools/call" {
                if !params.get("name").is_some_and(Value::is_string) {
                    return invalid_params(id, "params.name must be the tool's name.".into());
                }
                if params
                    .get("arguments")
                    .is_some_and(|a| !a.is_object() && !a.is_null())
                {
                    return invalid_params(
                        id,
                        "params.arguments must be an object of named arguments; see the tool's \
                         inputSchema."
                            .into(),
                    );
                }
            }
            // rmcp cannot read a tasks/update without its input responses,
            // and would answer "method not found".
            if method == "tasks/update" {
                if !params.get("taskId").is_some_and(Value::is_string) {
                    return invalid_params(id, "params.taskId must be the task's id.".into());
                }
                if !params.get("inputResponses").is_some_and(Value::is_object) {
                    return invalid_params(
                        id,
                        "params.inputResponses must be an object (the input the task asked \
                         for, by request id; no task here asks for any, so send {})."
                            .into(),
                    );
                }
            }
            Ok(id)
        }
        Some(_) => invalid_params(id, "params must be an object.".into()),
    }
}

fn refuse(status: StatusCode, id: Value, code: i64, message: &str) -> Response<Body> {
    tracing::info!(
        status = status.as_u16(),
        code,
        reason = message,
        "MCP request refused"
    );
    error_response(status, id, code, message)
}

/// rmcp answers its refusals in plain text; a client needs JSON-RPC. Keeps
/// the status, the headers (`Allow` on a 405) and rmcp's reason. `checked`
/// says the body already passed [`check_message`], so a `415` from rmcp
/// is about the message's shape, not its media type.
async fn translate_refusal(response: Response<Body>, id: Value, checked: bool) -> Response<Body> {
    let status = response.status();
    let is_plain = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_none_or(|ct| !ct.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || !is_plain {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let said = body
        .collect()
        .await
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_default();
    let (status, code, message) = explain(status, said.trim(), checked);
    if status.is_server_error() {
        tracing::error!(status = status.as_u16(), reason = %message, "MCP transport failed");
    } else {
        tracing::info!(status = status.as_u16(), reason = %message, "MCP request refused");
    }
    let mut answer = error_response(status, id, code, &message);
    parts.headers.remove(header::CONTENT_TYPE);
    parts.headers.remove(header::CONTENT_LENGTH);
    let headers = std::mem::take(&mut parts.headers);
    answer.headers_mut().extend(headers);
    answer
}

/// The status, code and message a client gets for rmcp's plain-text
/// refusal `said` with `status`.
fn explain(status: StatusCode, said: &str, checked: bool) -> (StatusCode, i64, String) {
    let said = if said.is_empty() {
        status.canonical_reason().unwrap_or("Refused")
    } else {
        said
    };
    match status {
        StatusCode::FORBIDDEN if said.contains("Host") => (
            status,
            TRANSPORT_REFUSED,
            format!(
                "{said}. This server answers only the host names it was started with; if clients \
                 reach it under this name, add it with --mcp-allowed-hosts (MCP_ALLOWED_HOSTS)."
            ),
        ),
        StatusCode::FORBIDDEN if said.contains("Origin") => (
            status,
            TRANSPORT_REFUSED,
            format!(
                "{said}. Browser pages may call this server only from the origins it was started \
                 with; add this one with --mcp-allowed-origins (MCP_ALLOWED_ORIGINS)."
            ),
        ),
        // The body was valid JSON of the right outline, yet rmcp could not
        // read it as a message (a duplicate member, an unknown shape).
        StatusCode::UNSUPPORTED_MEDIA_TYPE if checked => (
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            format!("Invalid Request: {said}"),
        ),
        StatusCode::METHOD_NOT_ALLOWED => (
            status,
            TRANSPORT_REFUSED,
            "Method not allowed: this stateless endpoint takes each message as a POST (no SSE \
             stream, no session to delete)."
                .into(),
        ),
        _ if status.is_server_error() => (
            status,
            TRANSPORT_REFUSED,
            "The server failed and logged why. Whether a write happened is unknown: call \
             get_operation_status with the same operation_id and the tool's name as action, or \
             retry the same call with the same operation_id and arguments."
                .into(),
        ),
        _ => (status, TRANSPORT_REFUSED, said.to_owned()),
    }
}

/// `application/json`, with any parameters, as rmcp requires it.
fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests;
