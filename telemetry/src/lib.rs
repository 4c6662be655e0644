//! Telemetry of write attempts, shared by both doors.
//!
//! How often callers double-fire should be a query, not a guess. Every
//! write attempt gets a span that keeps three identities apart: the effect
//! (the operation key), the attempt (a server-made id), and the transport
//! request (`x-request-id` on REST, the JSON-RPC id on MCP). Outcomes feed
//! OpenTelemetry metrics (served as Prometheus text at `/metrics`, and
//! exported over OTLP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set) and
//! per-tenant counters behind `/v1/stats`.
//!
//! # Layout
//!
//! - [`logging`]: the global subscriber: logs to stderr (human or JSON),
//!   plus OTLP traces when configured.
//! - [`Metrics`]: one app's meter provider, instruments and Prometheus
//!   registry.
//! - `otlp`: what both signals share for OTLP export: [`OtlpTarget`]
//!   (endpoint, protocol, one exporter per signal) and the resource.
//! - [`Door`]: REST or MCP, the label every measurement carries (a leaf).
//! - [`ContractFailure`]: what a caller broke, one table for both doors.
//! - [`attempt`]: [`Attempt`], the span and measurements of one write.
//! - [`stats`]: per-tenant outcome counts and retry rates.
//! - `standard`: the semantic conventions' HTTP and MCP server durations,
//!   next to ours ([`HttpRequest`], [`McpOperation`]).

pub mod attempt;
mod contract_failure;
mod door;
pub mod logging;
mod metrics;
mod otlp;
mod standard;
pub mod stats;

pub use attempt::Attempt;
pub use contract_failure::ContractFailure;
pub use door::Door;
pub use logging::{LogFormat, OtlpGuard};
pub use metrics::Metrics;
pub use otlp::OtlpTarget;
pub use standard::{HttpRequest, McpError, McpOperation};
pub use stats::{DoorStats, TenantStats};
