//! `provider-sim`: a fake hosted ticket tracker that misbehaves on demand.
//! See `docs/provider-simulator.md`.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use provider_sim::{self, KeyPolicy, SimConfig, SimTls, TestCertificates};

/// Serve an in-memory ticket tracker whose faults tests schedule over HTTP.
#[derive(Debug, Parser)]
#[command(name = "provider-sim", version)]
struct Args {
    /// Address to listen on; port 0 picks a free one (read it from the
    /// first line of output).
    #[arg(long, default_value = "127.0.0.1:9090")]
    listen: SocketAddr,
    /// Whether a repeated Idempotency-Key replays its first answer.
    #[arg(long, value_enum, default_value_t = KeyPolicy::Honour)]
    keys: KeyPolicy,
    /// How long a key is remembered, in milliseconds.
    #[arg(long, default_value_t = 86_400_000)]
    dedup_window_ms: u64,
    /// Serve HTTPS with this PEM certificate chain (needs --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve HTTPS with a CA and certificate made now for localhost and
    /// 127.0.0.1; the CA is written to this file for clients to trust (e.g.
    /// the service's PROVIDER_CA_FILE).
    #[arg(long, conflicts_with = "tls_cert")]
    tls_self_signed_ca_out: Option<PathBuf>,
    /// Be a fault proxy in front of the Redmine at this URL instead of a
    /// simulator: every request is forwarded, and /_sim/faults and
    /// /_sim/outage apply to it.
    #[arg(long, conflicts_with_all = ["tls_cert", "tls_self_signed_ca_out"])]
    redmine_upstream: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config = SimConfig {
        keys: args.keys,
        dedup_window: Duration::from_millis(args.dedup_window_ms),
    };
    if let Some(upstream) = &args.redmine_upstream {
        let proxy = provider_sim::spawn_redmine_proxy(args.listen, upstream).await?;
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "provider-sim listening on {} (a fault proxy in front of Redmine at {upstream})",
            proxy.base_url()
        )?;
        out.flush()?;
        drop(out);
        tokio::signal::ctrl_c().await?;
        proxy.shutdown().await;
        return Ok(());
    }
    let sim = match (&args.tls_cert, &args.tls_key, &args.tls_self_signed_ca_out) {
        (Some(cert), Some(key), _) => {
            let tls = SimTls {
                cert_chain_pem: std::fs::read_to_string(cert)
                    .with_context(|| format!("--tls-cert {}", cert.display()))?,
                key_pem: std::fs::read_to_string(key)
                    .with_context(|| format!("--tls-key {}", key.display()))?,
            };
            provider_sim::spawn_tls(args.listen, config, &tls, None).await?
        }
        (_, _, Some(ca_out)) => {
            let made = TestCertificates::generate()?;
            std::fs::write(ca_out, &made.ca_pem)
                .with_context(|| format!("--tls-self-signed-ca-out {}", ca_out.display()))?;
            provider_sim::spawn_tls(args.listen, config, &made.server, Some(&made.ca_pem)).await?
        }
        _ => provider_sim::spawn(args.listen, config).await?,
    };
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
