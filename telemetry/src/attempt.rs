//! One write attempt: its span, and the measurements taken when it ends.

use std::time::Instant;

use kitchen::{Tenant, TenantId};
use opentelemetry::KeyValue;
use tracing::Span;

use crate::contract_failure::ContractFailure;
use crate::door::Door;
use crate::metrics::Metrics;

/// A write attempt in flight. Create it when the request arrives, run the
/// work inside [`Attempt::span`], and [`Attempt::finish`] it with the
/// outcome.
#[derive(Debug)]
pub struct Attempt {
    span: Span,
    started: Instant,
    door: Door,
    action: &'static str,
    tenant: TenantId,
    metrics: Metrics,
}

impl Attempt {
    /// Starts an attempt. `transport_id` is the transport's own request id
    /// (`x-request-id`, or the JSON-RPC id): a different identity from the
    /// operation key (recorded with [`Attempt::record_key`] once parsed) and
    /// from the attempt id made here.
    pub fn start(
        metrics: &Metrics,
        door: Door,
        action: &'static str,
        tenant: &Tenant,
        transport_id: &str,
        contract: Option<&str>,
    ) -> Self {
        let attempt_id = uuid::Uuid::now_v7();
        let span = tracing::info_span!(
            "write_attempt",
            operation_key = tracing::field::Empty,
            attempt_id = %attempt_id,
            transport_request_id = transport_id,
            door = door.as_str(),
            action,
            tenant = %tenant.name,
            tenant_id = %tenant.id,
            contract = contract.unwrap_or(""),
            outcome = tracing::field::Empty,
            latency_ms = tracing::field::Empty,
        );
        Self {
            span,
            started: Instant::now(),
            door,
            action,
            tenant: tenant.id,
            metrics: metrics.clone(),
        }
    }

    /// The span to run the attempt's work in.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Joins the caller's trace: makes the attempt's span a child of the
    /// span W3C `traceparent` (with `tracestate`) names, as an MCP client
    /// sends them in a request's `_meta`, so that an agent's trace and ours
    /// are one. `false` (and the span stays a root) when `traceparent` is
    /// absent or not a valid one.
    pub fn join_trace(&self, traceparent: Option<&str>, tracestate: Option<&str>) -> bool {
        use tracing_opentelemetry::OpenTelemetrySpanExt as _;
        let Some(parent) = remote_parent(traceparent, tracestate) else {
            return false;
        };
        self.span.set_parent(parent).is_ok()
    }

    /// Records the operation key (the effect's identity) once it is known.
    pub fn record_key(&self, key: &str) {
        self.span.record("operation_key", key);
    }

    /// Ends the attempt with `outcome` (`created`, `replayed`, `conflict`,
    /// `invalid`, `in_progress`, `error`) and, for a broken contract, what
    /// the caller broke.
    pub fn finish(self, outcome: &'static str, contract_failure: Option<ContractFailure>) {
        let elapsed = self.started.elapsed();
        self.span.record("outcome", outcome);
        self.span
            .record("latency_ms", elapsed.as_secs_f64() * 1000.0);
        self.span
            .in_scope(|| tracing::info!(outcome, "write attempt answered"));
        let door = self.door.as_str();
        let m = &self.metrics;
        m.outcomes.add(
            1,
            &[
                KeyValue::new("door", door),
                KeyValue::new("action", self.action),
                KeyValue::new("outcome", outcome),
            ],
        );
        m.note_latency(elapsed);
        m.latency.record(
            elapsed.as_secs_f64(),
            &[
                KeyValue::new("door", door),
                KeyValue::new("outcome", outcome),
            ],
        );
        if let Some(kind) = contract_failure {
            m.contract_failures.add(
                1,
                &[
                    KeyValue::new("door", door),
                    KeyValue::new("action", self.action),
                    KeyValue::new("kind", kind.as_str()),
                ],
            );
        }
        m.stats.count(self.tenant, self.door, self.action, outcome);
    }
}

/// The remote span `traceparent` (with `tracestate`) names, as a parent
/// context; `None` when it is absent or not a valid W3C Trace Context.
fn remote_parent(
    traceparent: Option<&str>,
    tracestate: Option<&str>,
) -> Option<opentelemetry::Context> {
    use opentelemetry::propagation::TextMapPropagator as _;
    use opentelemetry::trace::TraceContextExt as _;
    let mut carrier = std::collections::HashMap::new();
    carrier.insert("traceparent".to_owned(), traceparent?.to_owned());
    if let Some(state) = tracestate {
        carrier.insert("tracestate".to_owned(), state.to_owned());
    }
    let parent = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
    parent.span().span_context().is_valid().then_some(parent)
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::TraceContextExt as _;

    use super::*;

    #[test]
    fn a_w3c_traceparent_names_the_parent_and_garbage_names_none() {
        let parent = remote_parent(
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            Some("vendor=1"),
        )
        .expect("a valid traceparent");
        let span = parent.span();
        let context = span.span_context();
        assert_eq!(
            context.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(context.span_id().to_string(), "00f067aa0ba902b7");
        assert!(context.is_remote());
        for bad in [
            None,
            Some(""),
            Some("00-zz-00f067aa0ba902b7-01"),
            Some("00-00000000000000000000000000000000-00f067aa0ba902b7-01"),
        ] {
            assert!(remote_parent(bad, None).is_none(), "{bad:?}");
        }
    }
}
