//! Logging: to stderr, so stdout stays free (for `token issue` output, and
//! for the MCP stdio transport), as human-readable lines or JSON.

use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Human,
    /// One JSON object per line, for log pipelines.
    Json,
}

/// Installs the global subscriber. Levels come from `RUST_LOG`
/// (default: `info`; `warn` for sqlx's per-statement and rmcp's per-request logs).
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,rmcp=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests spawning several apps) is harmless: ignore it.
    let _ = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
