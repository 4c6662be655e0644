//! OTLP settings both signals share: where to export ([`OtlpTarget`], with
//! one exporter builder per signal) and the resource every signal carries.

use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;

/// The resource traces and metrics are exported with: `service.name=tickets`.
pub(crate) fn resource() -> Resource {
    Resource::builder().with_service_name("tickets").build()
}

/// Where to send traces and metrics over OTLP/HTTP.
#[derive(Debug, Clone)]
pub struct OtlpTarget {
    /// Base URL of the collector, e.g. `http://127.0.0.1:4318`
    /// (`/v1/traces` and `/v1/metrics` are appended).
    pub endpoint: String,
    /// `http/json` instead of the default `http/protobuf`.
    pub json: bool,
}

impl OtlpTarget {
    /// From the standard variables: `OTEL_EXPORTER_OTLP_ENDPOINT` (unset:
    /// no export) and `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn from_env() -> Option<Self> {
        let endpoint = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())?;
        let json = std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL").is_ok_and(|p| p == "http/json");
        Some(Self { endpoint, json })
    }

    fn protocol(&self) -> Protocol {
        if self.json {
            Protocol::HttpJson
        } else {
            Protocol::HttpBinary
        }
    }

    /// The URL of one signal: `{endpoint}/v1/{signal}`.
    pub(crate) fn signal_url(&self, signal: &str) -> String {
        format!("{}/v1/{signal}", self.endpoint.trim_end_matches('/'))
    }

    pub(crate) fn span_exporter(
        &self,
    ) -> Result<opentelemetry_otlp::SpanExporter, opentelemetry_otlp::ExporterBuildError> {
        opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(self.protocol())
            .with_endpoint(self.signal_url("traces"))
            .build()
    }

    pub(crate) fn metric_exporter(
        &self,
    ) -> Result<opentelemetry_otlp::MetricExporter, opentelemetry_otlp::ExporterBuildError> {
        opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(self.protocol())
            .with_endpoint(self.signal_url("metrics"))
            .build()
    }
}
