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
