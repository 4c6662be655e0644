//! One app's metrics: OpenTelemetry instruments, read by a Prometheus
//! registry (for `/metrics`) and, when configured, by an OTLP exporter.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use prometheus::{Encoder, TextEncoder};

use crate::otlp::{OtlpTarget, resource};
use crate::standard::{HttpRequest, McpOperation, Standard};
use crate::stats::TenantStats;

/// Instruments every write and tool call is measured with. Cheap to
/// clone: one reference count (the doors clone it per request).
#[derive(Clone)]
pub struct Metrics(Arc<Instruments>);

impl std::ops::Deref for Metrics {
    type Target = Instruments;

    fn deref(&self) -> &Instruments {
        &self.0
    }
}

/// What a [`Metrics`] holds, shared by its clones.
pub struct Instruments {
    provider: SdkMeterProvider,
    registry: prometheus::Registry,
    pub(crate) outcomes: Counter<u64>,
    pub(crate) latency: Histogram<f64>,
    pub(crate) contract_failures: Counter<u64>,
    pub(crate) tool_calls: Counter<u64>,
    pub(crate) sweep_records: Counter<u64>,
    /// The semantic conventions' HTTP and MCP server durations.
    standard: Standard,
    /// The last count of effects reconciliation gave up on, read by the
    /// `tickets.effects.unresolved` gauge at each collection.
    unresolved_effects: Arc<AtomicU64>,
    /// The last count of effects a search found more than once at the
    /// provider, read by the `tickets.provider.duplicates` gauge.
    provider_duplicates: Arc<AtomicU64>,
    /// When the retention sweep last got through everything due (Unix
    /// seconds; 0 before the first), read by `tickets.sweep.last_success`.
    sweep_last_success: Arc<AtomicU64>,
    /// Write latencies (microseconds) since the console last took them.
    latency_window: Arc<std::sync::Mutex<hdrhistogram::Histogram<u64>>>,
    pub(crate) stats: TenantStats,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

impl Metrics {
    /// Metrics served only as Prometheus text.
    pub fn new() -> Self {
        Self::with_otlp(None)
    }

    /// Metrics served as Prometheus text and, with `otlp`, exported every
    /// 10 seconds over OTLP.
    pub fn with_otlp(otlp: Option<&OtlpTarget>) -> Self {
        let registry = prometheus::Registry::new();
        let mut builder = SdkMeterProvider::builder().with_resource(resource());
        match opentelemetry_prometheus::exporter()
            .with_registry(registry.clone())
            .build()
        {
            Ok(reader) => builder = builder.with_reader(reader),
            Err(e) => tracing::error!(error = %e, "Prometheus exporter unavailable"),
        }
        if let Some(exporter) = otlp.map(OtlpTarget::metric_exporter) {
            match exporter {
                Ok(exporter) => {
                    let reader = PeriodicReader::builder(exporter)
                        .with_interval(Duration::from_secs(10))
                        .build();
                    builder = builder.with_reader(reader);
                }
                Err(e) => tracing::error!(error = %e, "OTLP metric export disabled"),
            }
        }
        let provider = builder.build();
        let meter = provider.meter("tickets");
        let unresolved_effects = Arc::new(AtomicU64::new(0));
        let observed = Arc::clone(&unresolved_effects);
        // Kept alive by the meter provider once registered.
        let _gauge = meter
            .u64_observable_gauge("tickets.effects.unresolved")
            .with_description("Remote effects whose outcome is unknown and that reconciliation gave up on after the most attempts allowed: each needs an operator to check the provider")
            .with_callback(move |gauge| gauge.observe(observed.load(Ordering::Relaxed), &[]))
            .build();
        let provider_duplicates = Arc::new(AtomicU64::new(0));
        let observed = Arc::clone(&provider_duplicates);
        let _gauge = meter
            .u64_observable_gauge("tickets.provider.duplicates")
            .with_description("Remote effects the provider was found to hold more than once (a search by their reference found copies): each needs an operator to resolve the copies the operation's status lists")
            .with_callback(move |gauge| gauge.observe(observed.load(Ordering::Relaxed), &[]))
            .build();
        let sweep_last_success = Arc::new(AtomicU64::new(0));
        let observed = Arc::clone(&sweep_last_success);
        let _gauge = meter
            .u64_observable_gauge("tickets.sweep.last_success")
            .with_unit("s")
            .with_description("When the retention sweep last got through everything due, in Unix seconds (0 before the first): a sweep that fails or stops leaves it behind")
            .with_callback(move |gauge| gauge.observe(observed.load(Ordering::Relaxed), &[]))
            .build();
        Self(Arc::new(Instruments {
            latency_window: Arc::new(std::sync::Mutex::new(latency_histogram())),
            unresolved_effects,
            provider_duplicates,
            sweep_last_success,
            outcomes: meter
                .u64_counter("tickets.write.outcomes")
                .with_description("Write attempts by door, action and outcome (created, replayed, expired, conflict, invalid, refused, in_progress, not_created, unknown, possible_duplicate, error)")
                .build(),
            latency: meter
                .f64_histogram("tickets.write.duration")
                .with_unit("s")
                .with_description("Time to answer a write attempt, by door and outcome")
                .with_boundaries(vec![0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0])
                .build(),
            contract_failures: meter
                .u64_counter("tickets.contract.failures")
                .with_description("Writes the caller must change, by door, action and kind (idempotency_key_reused next to idempotency_key_missing, idempotency_key_malformed, validation_failed and the refusals)")
                .build(),
            tool_calls: meter
                .u64_counter("tickets.mcp.tool.calls")
                .with_description("MCP tool calls by tool, contract hash (of the tool's wording) and outcome")
                .build(),
            sweep_records: meter
                .u64_counter("tickets.sweep.records")
                .with_description("Operation records the retention sweep changed, by kind (tombstoned: frozen answer dropped past the replay window; deleted: past the tombstone horizon, key free again)")
                .build(),
            standard: Standard::new(&meter),
            provider,
            registry,
            stats: TenantStats::default(),
        }))
    }

    /// Every metric in the Prometheus text format.
    pub fn prometheus_text(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::error!(error = %e, "cannot encode metrics");
        }
        String::from_utf8(out).unwrap_or_default()
    }

    /// Per-tenant counts behind `/v1/stats`.
    pub fn stats(&self) -> &TenantStats {
        &self.stats
    }

    /// Counts one MCP tool call, labelled with its contract hash.
    pub fn tool_call(&self, tool: &str, contract: &str, outcome: &str) {
        self.tool_calls.add(
            1,
            &[
                KeyValue::new("tool", tool.to_owned()),
                KeyValue::new("contract", contract.to_owned()),
                KeyValue::new("outcome", outcome.to_owned()),
            ],
        );
    }

    /// Records one HTTP request (both doors) as
    /// `http.server.request.duration`.
    pub fn http_request(&self, request: &HttpRequest<'_>, seconds: f64) {
        self.standard.http_request(request, seconds);
    }

    /// Records one MCP request over HTTP as `mcp.server.operation.duration`.
    pub fn mcp_operation(&self, operation: &McpOperation<'_>, seconds: f64) {
        self.standard.mcp_operation(operation, seconds);
    }

    /// Counts what one retention sweep batch did.
    pub fn swept(&self, tombstoned: u64, deleted: u64) {
        for (kind, n) in [("tombstoned", tombstoned), ("deleted", deleted)] {
            if n > 0 {
                self.sweep_records.add(n, &[KeyValue::new("kind", kind)]);
            }
        }
    }

    /// Notes one write's latency for [`Metrics::take_latency_window`].
    pub(crate) fn note_latency(&self, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros())
            .unwrap_or(u64::MAX)
            .max(1);
        if let Ok(mut window) = self.latency_window.lock() {
            window.saturating_record(micros);
        }
    }

    /// The median and 99th percentile of the writes answered since the
    /// last call, and a fresh window; `None` when there were none. For the
    /// operators' console, which samples it every few seconds: one caller
    /// only, or each would see part of the writes.
    pub fn take_latency_window(&self) -> Option<(Duration, Duration)> {
        let mut window = self.latency_window.lock().ok()?;
        let taken = std::mem::replace(&mut *window, latency_histogram());
        (!taken.is_empty()).then(|| {
            (
                Duration::from_micros(taken.value_at_quantile(0.5)),
                Duration::from_micros(taken.value_at_quantile(0.99)),
            )
        })
    }

    /// When the retention sweep last got through everything due (Unix
    /// seconds); `None` before the first time.
    pub fn sweep_last_success(&self) -> Option<u64> {
        Some(self.sweep_last_success.load(Ordering::Relaxed)).filter(|s| *s > 0)
    }

    /// Notes that the retention sweep just got through everything due.
    pub fn sweep_finished(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.sweep_last_success.store(now, Ordering::Relaxed);
    }

    /// Sets how many remote effects reconciliation gave up on (see
    /// `Kitchen::unresolved_effects`).
    pub fn set_unresolved_effects(&self, count: u64) {
        self.unresolved_effects.store(count, Ordering::Relaxed);
    }

    /// Sets how many remote effects the provider was found to hold more
    /// than once (see `Kitchen::provider_duplicates`).
    pub fn set_provider_duplicates(&self, count: u64) {
        self.provider_duplicates.store(count, Ordering::Relaxed);
    }

    /// Flushes pending exports and stops the readers.
    pub fn shutdown(&self) {
        let _ = self.provider.shutdown();
    }
}

/// Microseconds from 1 to an hour, three significant digits.
fn latency_histogram() -> hdrhistogram::Histogram<u64> {
    // Constant bounds hdrhistogram accepts (1 <= low, high >= 2 * low,
    // 3 significant digits), so this cannot fail.
    hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3)
        .expect("constant, valid histogram bounds")
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latency_window_is_taken_once_and_starts_afresh() {
        let metrics = Metrics::new();
        assert_eq!(metrics.take_latency_window(), None, "no writes yet");
        for ms in [1, 2, 3, 4, 100] {
            metrics.note_latency(Duration::from_millis(ms));
        }
        let (p50, p99) = metrics.take_latency_window().expect("five writes");
        assert!(
            p50 >= Duration::from_millis(3) && p50 < Duration::from_micros(3010),
            "{p50:?}"
        );
        assert!(
            p99 >= Duration::from_millis(100) && p99 < Duration::from_micros(100_100),
            "{p99:?}"
        );
        assert_eq!(metrics.take_latency_window(), None, "taken");
    }

    /// The value of the sample of `metric` whose line contains `label`.
    fn value(text: &str, metric: &str, label: &str) -> Option<f64> {
        text.lines()
            .filter(|l| l.starts_with(metric) && l.contains(label))
            .find_map(|l| l.rsplit(' ').next()?.parse().ok())
    }

    #[test]
    fn sweeps_and_operator_gauges_reach_prometheus_under_their_documented_names() {
        let metrics = Metrics::new();
        metrics.swept(3, 0);
        metrics.swept(2, 4);
        metrics.set_unresolved_effects(7);
        metrics.set_provider_duplicates(2);
        let text = metrics.prometheus_text();
        assert_eq!(
            value(&text, "tickets_provider_duplicates", ""),
            Some(2.0),
            "{text}"
        );
        let sweep = "tickets_sweep_records_total{";
        assert_eq!(
            value(&text, sweep, r#"kind="tombstoned""#),
            Some(5.0),
            "{text}"
        );
        assert_eq!(
            value(&text, sweep, r#"kind="deleted""#),
            Some(4.0),
            "{text}"
        );
        assert_eq!(
            value(&text, "tickets_effects_unresolved", ""),
            Some(7.0),
            "{text}"
        );
        metrics.set_unresolved_effects(0);
        let text = metrics.prometheus_text();
        assert_eq!(
            value(&text, "tickets_effects_unresolved", ""),
            Some(0.0),
            "{text}"
        );
    }
}
