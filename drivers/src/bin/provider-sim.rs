//! `provider-sim`: a fake hosted ticket tracker that misbehaves on demand.
//! See `docs/provider-simulator.md`.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use clap::Parser;
use drivers::provider_sim::{self, KeyPolicy, SimConfig};

/// Serve an in-memory ticket tracker whose faults tests schedule over HTTP.
#[derive(Debug, Parser)]
#[command(name = "provider-sim", version)]
struct Args {
    /// Address to listen on; port 0 picks a free one (read it from the
    /// first line of output).
    #[arg(long, default_value = "127.0.0.1:9090")]
    listen: SocketAddr,
    /// Whether a repeated Idempotency-Key replays its ticket.
    #[arg(long, value_enum, default_value_t = KeyPolicy::Honour)]
    keys: KeyPolicy,
    /// How long a key is remembered, in milliseconds.
    #[arg(long, default_value_t = 86_400_000)]
    dedup_window_ms: u64,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = SimConfig {
        keys: args.keys,
        dedup_window: Duration::from_millis(args.dedup_window_ms),
    };
    let sim = provider_sim::spawn(args.listen, config).await?;
    // Scripts read the bound address from this line: flush it now, since
    // stdout is block-buffered when it is a pipe.
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "provider-sim listening on {} (keys: {}, dedup window: {} ms)",
        sim.base_url(),
        args.keys,
        args.dedup_window_ms
    )?;
    out.flush()?;
    drop(out);
    tokio::signal::ctrl_c().await?;
    sim.shutdown().await;
    Ok(())
}
