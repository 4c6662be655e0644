//! `tickets`: the retry-safe ticket service. See `tickets --help`.

use clap::Parser;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = server::cli::Cli::parse();
    server::telemetry::init(cli.log_format);
    server::cli::run(cli).await
}
