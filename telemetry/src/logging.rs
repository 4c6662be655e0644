//! The global tracing subscriber.
//!
//! Logs go to stderr (stdout is for command output and the MCP stdio
//! transport), as human-readable lines or JSON. When an OTLP endpoint is
//! configured, spans are exported too, with their fields as attributes.

use std::io::IsTerminal as _;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

pub use crate::otlp::OtlpTarget;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line, for log pipelines.
    Json,
}

/// Keeps the OTLP trace pipeline alive; flushes it when dropped.
#[derive(Debug, Default)]
pub struct OtlpGuard {
    provider: Option<SdkTracerProvider>,
    installed: bool,
}

impl OtlpGuard {
    /// Whether this call installed the global subscriber (`false` when one
    /// was already installed in this process: then nothing changed).
    pub fn installed(&self) -> bool {
        self.installed
    }

    /// Sends every finished span now.
    pub fn flush(&self) {
        if let Some(provider) = &self.provider {
            let _ = provider.force_flush();
        }
    }
}

impl Drop for OtlpGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            let _ = provider.shutdown();
        }
    }
}

/// Installs the global subscriber (once; later calls change nothing).
/// Levels come from `RUST_LOG` (default `info`; `warn` for sqlx's
/// per-statement and rmcp's per-request logs).
pub fn init(format: LogFormat, otlp: Option<&OtlpTarget>) -> OtlpGuard {
    let filter = || {
        EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,rmcp=warn"))
    };
    // Colours only for a person watching a terminal: escape codes in a
    // file or a log pipeline are noise, and writing them costs every line.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    let fmt = match format {
        LogFormat::Human => fmt.boxed(),
        LogFormat::Json => fmt.json().boxed(),
    };
    let mut guard = OtlpGuard::default();
    let otel = otlp.and_then(|target| match target.span_exporter() {
        Ok(exporter) => {
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(crate::otlp::resource())
                .build();
            let tracer = provider.tracer("tickets");
            guard.provider = Some(provider);
            Some(tracing_opentelemetry::layer().with_tracer(tracer))
        }
        Err(e) => {
            eprintln!("OTLP trace export disabled: {e}");
            None
        }
    });
    guard.installed = tracing_subscriber::registry()
        .with(fmt.with_filter(filter()))
        .with(otel.map(|layer| layer.with_filter(filter())))
        .try_init()
        .is_ok();
    guard
}
