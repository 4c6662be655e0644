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
    /// OpenTelemetry's standard variable for the collector's base URL.
    pub const ENDPOINT_VAR: &'static str = "OTEL_EXPORTER_OTLP_ENDPOINT";
    /// OpenTelemetry's standard variable for the wire format.
    pub const PROTOCOL_VAR: &'static str = "OTEL_EXPORTER_OTLP_PROTOCOL";

    /// From the standard variables: [`Self::ENDPOINT_VAR`] (unset: no
    /// export) and [`Self::PROTOCOL_VAR`] (`http/json`, or the default
    /// `http/protobuf`).
    pub fn from_env() -> Option<Self> {
        let endpoint = std::env::var(Self::ENDPOINT_VAR)
            .ok()
            .filter(|e| !e.is_empty())?;
        let json = std::env::var(Self::PROTOCOL_VAR).is_ok_and(|p| p == "http/json");
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
